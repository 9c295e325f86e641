package vkcodec

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/vk"
)

// Options configures the Vulkan backend.
type Options struct {
	Device     string // device selector: index or name substring ("" = $VKZIP_DEVICE, else the best device)
	Auto       bool   // chosen by "--backend auto": refuse CPU Vulkan implementations (the Go backend is faster)
	Validation bool   // Khronos validation layers (also $VKZIP_VALIDATE=1)
	// MemoryBudget caps the device memory one call takes (0: no cap): calls over it run as several submissions, one
	// per group of tensors that fits, and a single tensor over it is refused with ErrTooLarge.
	MemoryBudget uint64
	// Tune sets the kernels' tuning knobs (nil: the shipped defaults). They change speed, never bytes; the type is
	// internal to this module, so only its lab command and tests set it.
	Tune *vktune.Params
}

// Backend runs SplitZip-4 on one Vulkan device. It is safe for concurrent use: every call takes its own session
// (command buffer and buffers), so calls from several goroutines are in flight together.
type Backend struct {
	inst    *vk.Instance
	dev     *vk.Device
	info    vk.DeviceInfo
	o       Options
	unified bool   // device memory is host memory: bind mapped buffers directly, no staging copies
	slabMax uint64 // largest region one binding can cover
	groups  uint32

	t vktune.Params // o.Tune with defaults filled in and fitted to the device

	mu       sync.Mutex
	pipes    map[kernelKey]*vk.Pipeline // the one pipeline cache, every format's kernels (pipeline.go)
	consts   map[[3]uint32]*vk.Buffer
	sessions []*session
	all      []*session
	closed   atomic.Bool

	huff *huffTuning // the huff kernels' tuning
}

func init() {
	codec.RegisterBackend(codec.BackendFactory{Name: "vulkan", Priority: 10,
		Open: func(device string, auto bool) (codec.Backend, error) {
			return Open(Options{Device: device, Auto: auto})
		}})
}

// Open opens the backend on a device.
func Open(o Options) (*Backend, error) {
	var t vktune.Params
	if o.Tune != nil {
		t = *o.Tune
	}
	t.WorkGroup, t.Repl, t.EscCap = vktune.Or(t.WorkGroup, 256), vktune.Or(t.Repl, 1), vktune.Or(t.EscCap, 1024)
	if t.CRCBits != 0 && (t.CRCBits < minCRCBits || t.CRCBits > maxCRCBits) {
		return nil, &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf(
			"vulkan: CRC table bits %d outside [%d, %d]", t.CRCBits, minCRCBits, maxCRCBits)}
	}
	inst, err := vk.NewInstance(vk.InstanceOptions{Validation: o.Validation, AppName: "vkzip"})
	if err != nil {
		return nil, wrapNoDevice(err)
	}
	devs, err := inst.Devices()
	if err != nil {
		inst.Close()
		return nil, wrapNoDevice(err)
	}
	info, err := vk.SelectDevice(devs, o.Device)
	if err != nil {
		inst.Close()
		return nil, wrapNoDevice(err)
	}
	if o.Auto && info.Type == vk.DeviceTypeCPU {
		inst.Close()
		return nil, &codec.Error{Class: codec.ErrNoDevice, Chunk: -1,
			Detail: fmt.Sprintf("only %s, a CPU Vulkan implementation; the Go backend is faster", info.Name)}
	}
	// Poll fences for up to 2 ms before blocking: a blocking wait wakes tens of microseconds late on some drivers,
	// which a codec on the latency path of KV transfer cannot afford (CPU devices need the core and are not polled).
	var spin time.Duration
	if info.Type != vk.DeviceTypeCPU {
		spin = 2 * time.Millisecond
	}
	dev, err := inst.OpenDevice(info, vk.DeviceOptions{WaitSpin: spin, Queues: t.Queues})
	if err != nil {
		inst.Close()
		return nil, wrapNoDevice(err)
	}
	b := &Backend{inst: inst, dev: dev, info: info, o: o, t: t, pipes: map[kernelKey]*vk.Pipeline{},
		consts: map[[3]uint32]*vk.Buffer{}}
	b.unified = info.Type == vk.DeviceTypeCPU
	lim := info.Limits
	b.slabMax = min(uint64(lim.MaxStorageBufferRange), lim.MaxMemoryAllocationSize) &^ (regionAlign - 1)
	maxWG := min(uint32(t.WorkGroup), lim.MaxComputeWorkGroupInvocations, lim.MaxComputeWorkGroupSize[0])
	b.t.WorkGroup = int(floorPow2(max(maxWG, b.minWorkGroup())))
	b.groups = uint32(t.Groups)
	if b.groups == 0 {
		b.groups = 4096
		if b.unified {
			b.groups = 256
		}
	}
	b.groups = min(b.groups, lim.MaxComputeWorkGroupCount[0])
	if err := b.fitSharedMemory(lim.MaxComputeSharedMemorySize); err != nil {
		b.Close()
		return nil, err
	}
	b.huff = newHuffTuning(b)
	return b, nil
}

// sharedBytes is the most shared memory any format's kernels take for workgroups of wg threads (sharedUser).
func (b *Backend) sharedBytes(wg uint32) uint32 {
	var need uint32
	for _, f := range gpuCodecs {
		if u, ok := f.(sharedUser); ok {
			need = max(need, u.sharedBytes(b, wg))
		}
	}
	return need
}

// crcTables is the shared memory in words of kernel's CRC shift tables (shaders/crc_tables.glsl), which dominate
// the chunk kernels'.
func (b *Backend) crcTables(kernel string) uint32 {
	return nTables * crcTableWords(b.crcBits(kernel)) * uint32(b.t.Repl)
}

// fitSharedMemory drops table replication, shrinks the escape buffers, then the workgroup, until the kernels fit the device's shared
// memory, or says why the device cannot run them.
func (b *Backend) fitSharedMemory(limit uint32) error {
	for {
		need := b.sharedBytes(uint32(b.t.WorkGroup))
		if need <= limit {
			return nil
		}
		switch {
		case b.t.Repl > 1:
			b.t.Repl /= 2
		case b.t.EscCap > 64:
			b.t.EscCap = max(b.t.EscCap/2, 64)
		case b.t.WorkGroup > 64 && b.t.WorkGroup/2 >= int(b.minWorkGroup()):
			b.t.WorkGroup /= 2
		default:
			return &codec.Error{Class: codec.ErrNoDevice, Chunk: -1, Detail: fmt.Sprintf(
				"%s has %d bytes of shared memory per workgroup; the kernels need %d", b.info.Name, limit, need)}
		}
	}
}

// knobWG is the workgroup size of knob (def when 0) within the device's limits, at least its widest subgroup.
func (b *Backend) knobWG(knob, def uint32) uint32 {
	if knob == 0 {
		knob = def
	}
	lim := b.info.Limits
	return floorPow2(max(min(knob, 1024, lim.MaxComputeWorkGroupInvocations, lim.MaxComputeWorkGroupSize[0]),
		b.minWorkGroup()))
}

// minWorkGroup is the smallest workgroup the chunk kernels take: one whole subgroup of the widest size the device
// may run (the SplitZip-4 encoder hands a subgroup's values round in passes of gl_SubgroupSize invocations, which a
// workgroup smaller than its subgroup would leave partly unfilled).
func (b *Backend) minWorkGroup() uint32 { return floorPow2(max(b.info.MaxSubgroupSize, 1)) }

func floorPow2(x uint32) uint32 {
	p := uint32(1)
	for p*2 <= x {
		p *= 2
	}
	return p
}

func wrapNoDevice(err error) error {
	if errors.Is(err, vk.ErrNoVulkan) || errors.Is(err, vk.ErrNoDevice) {
		return &codec.Error{Class: codec.ErrNoDevice, Chunk: -1, Detail: err.Error()}
	}
	return err
}

func (b *Backend) Name() string { return "vulkan" }

// Device describes the device in one line.
func (b *Backend) Device() string {
	return fmt.Sprintf("%s (%s, Vulkan %s, %s)", b.info.Name, b.info.Type, b.info.APIVersion, b.info.DriverInfo)
}

// Info is the device's description.
func (b *Backend) Info() vk.DeviceInfo { return b.info }

// VK is the underlying device, for counters and for callers that bring their own buffers.
func (b *Backend) VK() *vk.Device { return b.dev }

// Close releases everything; calls in flight must have returned.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.mu.Lock()
	for _, s := range b.all {
		s.close()
	}
	for _, p := range b.pipes {
		p.Close()
	}
	for _, c := range b.consts {
		c.Close()
	}
	b.mu.Unlock()
	err := b.dev.Close()
	if e := b.inst.Close(); err == nil {
		err = e
	}
	return err
}

// wgFor is the workgroup size of the chunk kernels for chunks of 2^shift values: each thread handles whole 8-value
// slots, so it must divide n/8.
//
// A tensor of few chunks cannot fill the device one workgroup per chunk, so it gets wider workgroups (up to 1024
// threads, where the device allows them and shared memory holds the larger reduction arrays): a 1 MiB tensor is 8
// chunks of 2^16 values.
func (b *Backend) wgFor(shift uint, chunks uint64) uint32 {
	wg := uint32(b.t.WorkGroup)
	lim := b.info.Limits
	if chunks < 64 && b.t.Groups == 0 && !b.unified && lim.MaxComputeSharedMemorySize >= 48<<10 {
		wg = max(wg, min(1024, floorPow2(lim.MaxComputeWorkGroupInvocations), floorPow2(lim.MaxComputeWorkGroupSize[0])))
	}
	return min(wg, uint32(1)<<shift/8)
}

// unroll returns the slots each thread of kernel loads together: Tune.Unroll, else the kernel's format's measured
// default (kernelTuner), else 2.
func (b *Backend) unroll(kernel string) int {
	if b.t.Unroll != 0 {
		return b.t.Unroll
	}
	return kernelDefault(kernel, func(_, unroll int) int { return unroll }, 2)
}

// crcBits is the field width of kernel's CRC shift tables: Tune.CRCBits, else the kernel's format's measured
// default (kernelTuner), else 8 (in the SplitZip-4 encoder 7 conflict-free lookups of narrow tables cost more than
// 4 conflicting byte lookups).
func (b *Backend) crcBits(kernel string) int {
	if b.t.CRCBits != 0 {
		return b.t.CRCBits
	}
	return kernelDefault(kernel, func(bits, _ int) int { return bits }, 8)
}

// kernelDefault is the default of one knob of kernel (pick chooses it) from the formats that give one, else def.
func kernelDefault(kernel string, pick func(crcBits, unroll int) int, def int) int {
	for _, f := range gpuCodecs {
		if t, ok := f.(kernelTuner); ok {
			if v := pick(t.kernelDefaults(kernel)); v != 0 {
				return v
			}
		}
	}
	return def
}

// session is one call's command buffer and memory; sessions are pooled and reused.
type session struct {
	cmd   *vk.Commands
	dev   arena // regions the kernels use
	up    arena // host-visible staging for inputs (unused when unified)
	down  arena // host-visible staging for outputs (unused when unified)
	binds []*vk.Bindings
}

func (b *Backend) getSession() (*session, error) {
	if b.closed.Load() {
		return nil, &codec.Error{Class: codec.ErrClosed, Chunk: -1, Detail: "vulkan backend closed"}
	}
	b.mu.Lock()
	if n := len(b.sessions); n > 0 {
		s := b.sessions[n-1]
		b.sessions = b.sessions[:n-1]
		b.mu.Unlock()
		return s, nil
	}
	b.mu.Unlock()
	cmd, err := b.dev.NewCommands()
	if err != nil {
		return nil, err
	}
	devKind := vk.DeviceLocal
	if b.unified {
		devKind = vk.HostVisible
	}
	s := &session{cmd: cmd,
		dev:  arena{dev: b.dev, kind: devKind, slabMax: b.slabMax},
		up:   arena{dev: b.dev, kind: vk.Upload, slabMax: b.slabMax},
		down: arena{dev: b.dev, kind: vk.Readback, slabMax: b.slabMax}}
	b.mu.Lock()
	b.all = append(b.all, s)
	b.mu.Unlock()
	return s, nil
}

func (b *Backend) putSession(s *session) {
	for _, x := range s.binds {
		x.Close()
	}
	s.binds = s.binds[:0]
	// A session that grew very large gives its memory back rather than pinning it.
	if s.dev.bytes()+s.up.bytes()+s.down.bytes() > 4<<30 {
		s.dev.close()
		s.up.close()
		s.down.close()
	}
	b.mu.Lock()
	b.sessions = append(b.sessions, s)
	b.mu.Unlock()
}

func (s *session) reset() {
	s.dev.reset()
	s.up.reset()
	s.down.reset()
}

func (s *session) close() {
	for _, x := range s.binds {
		x.Close()
	}
	s.dev.close()
	s.up.close()
	s.down.close()
	s.cmd.Close()
}

func (s *session) bind(b *Backend, p *vk.Pipeline, locs ...loc) (*vk.Bindings, error) {
	r := make([]vk.BufferRange, len(locs))
	for i, l := range locs {
		r[i] = l.rng()
	}
	x, err := b.dev.NewBindings(p, r)
	if err != nil {
		return nil, err
	}
	s.binds = append(s.binds, x)
	return x, nil
}

// staged is a region the kernels use plus, on discrete devices, the host-visible region it is copied from or to.
type staged struct {
	dev  loc
	host loc // == dev when unified
}

func (s *session) allocIn(b *Backend, size uint64) (staged, error) {
	d, err := s.dev.alloc(size)
	if err != nil || b.unified {
		return staged{d, d}, err
	}
	h, err := s.up.alloc(size)
	return staged{d, h}, err
}

func (s *session) allocOut(b *Backend, size uint64) (staged, error) {
	d, err := s.dev.alloc(size)
	if err != nil || b.unified {
		return staged{d, d}, err
	}
	h, err := s.down.alloc(size)
	return staged{d, h}, err
}

// copyUp and copyDown record the staging copies of a discrete device (no-ops when unified).
func (b *Backend) copyUp(cmd *vk.Commands, x staged) {
	if !b.unified {
		cmd.CopyBuffer(x.dev.buf, x.dev.off, x.host.buf, x.host.off, x.dev.size)
	}
}

func (b *Backend) copyDown(cmd *vk.Commands, x staged) {
	if !b.unified {
		cmd.CopyBuffer(x.host.buf, x.host.off, x.dev.buf, x.dev.off, x.dev.size)
	}
}

// KernelStats returns the driver's compiler statistics (registers, shared memory, spills, where the driver
// reports them through VK_KHR_pipeline_executable_properties) of every pipeline built so far, by pipeline.
func (b *Backend) KernelStats() map[string][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]string{}
	for k, p := range b.pipes {
		addStats(out, k.statsName(), p)
	}
	return out
}

// addStats records a pipeline's compiler statistics under name (none where the driver gives none).
func addStats(out map[string][]string, name string, p *vk.Pipeline) {
	st, err := p.Statistics()
	if err != nil {
		return
	}
	for _, s := range st {
		out[name] = append(out[name], s.String())
	}
}

// ValidationMessages returns what the Khronos validation layers reported, when they are on ($VKZIP_VALIDATE=1 or
// Options.Validation).
func (b *Backend) ValidationMessages() []string { return b.inst.ValidationMessages() }
