package vkcodec

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// gpuCodec is one body format on the Vulkan backend (doc.go: adding a format). A format describes its tensors and
// records its passes; the shared driver (driver.go for host memory, ops.go for device-resident operations) owns
// everything else: sessions, staging, uploads and downloads, barriers, submission, status words, batching by
// memory budget.
type gpuCodec interface {
	// check refuses a tensor the format's kernels cannot code on b's device (dtype, geometry, binding limits).
	check(b *Backend, t *tensor) error
	// shape is what the driver needs of the tensor's body.
	shape(t *tensor) shape
	// deviceBytes is the device memory one tensor's plan takes (the memory budget splits batches by it).
	deviceBytes(b *Backend, t *tensor, encode bool) uint64
	// encode plans the encode of t: its streams are views from r (r.vals for the values, r.body for the body's
	// streams), its work words r.work, and the returned passes record its kernels.
	encode(b *Backend, t *tensor, r *regions) (*plan, error)
	// decode plans the decode of t (t.bodyLen bytes of body) into r.vals; the kernels report into r.status.
	decode(b *Backend, t *tensor, r *regions) (*plan, error)
}

// blockDecoder marks a format whose decoder reads each run's side length from its status block
// (layout.SideLenRuntime), so that a prepared operation over several blocks takes new body lengths every run.
type blockDecoder interface{ runtimeSideLen() }

// kernelTuner is a format with measured defaults for its kernels: the CRC shift tables' field width and the slots
// each thread loads together of the kernel named kernel (0: the backend's defaults; Options.Tune overrides both).
type kernelTuner interface {
	kernelDefaults(kernel string) (crcBits, unroll int)
}

// sharedUser is a format whose kernels' shared memory grows with the tuning (table replication, escape staging,
// workgroup size): the backend shrinks the tuning at Open until every such format fits the device.
type sharedUser interface {
	sharedBytes(b *Backend, wg uint32) uint32
}

// gpuCodecs is the registry: one entry per format, filled by one line in each format's file.
var gpuCodecs = map[uint8]gpuCodec{}

func register(id uint8, f gpuCodec) { gpuCodecs[id] = f }

// tensor is one tensor of an operation, as every format reads it.
type tensor struct {
	format    uint8
	dt        layout.DType // never opaque: BF16 for a job's zero value
	n         uint64
	shift     uint
	cb        *codec.Codebook
	checksums bool
	bodyLen   uint64 // decode: the body's length in bytes
	// runtimeSide: the decoder reads the side length from its status block (block decodes, blockDecoder).
	runtimeSide bool
	// together is how many same-size tensors one operation records side by side (workgroup sizing: the batch, not
	// one small block, decides whether the device is full).
	together uint64
	name     string // for verdicts
}

func (t *tensor) valueBytes() uint64 { return t.n * uint64(t.dt.Size()) }

// shape is what the driver needs of a tensor's body, whatever the format.
type shape struct {
	minBody, maxBody uint64
	// Encode: the body ends at sideOff plus the value the passes leave in work word totalWord; workBytes of work
	// words are zeroed before the first pass and read back after the last.
	sideOff, totalWord, workBytes uint64
}

// plan is a tensor's recorded work: its passes, each after a barrier that orders it after every tensor's previous
// pass (the tensors of a batch run each pass side by side).
type plan struct {
	passes []func(rec *recorder) error
	// oneSpan: a device-resident operation is timed as one span (no timestamps between the passes).
	oneSpan bool
	// statusFn maps the decode status words to the reference's verdict (nil: statusErr).
	statusFn func(st []byte, name string) error
}

// recorder is what a format's passes record with: a command buffer in a session.
type recorder struct {
	ctx context.Context
	b   *Backend
	s   *session
}

// dispatch records kernel kk over groups workgroups with the given bindings (in the kernel's binding order) and
// push constants.
func (r *recorder) dispatch(kk kernelKey, push []byte, groups uint32, binds ...loc) error {
	pipe, err := r.b.pipeline(kk)
	if err != nil {
		return err
	}
	bd, err := r.s.bind(r.b, pipe, binds...)
	if err != nil {
		return err
	}
	r.s.cmd.Dispatch(pipe, bd, push, groups, 1, 1)
	return nil
}

// consts is the CRC constant buffer of a kernel (constsFor).
func (r *recorder) consts(kk kernelKey, shift uint) (loc, error) {
	return r.b.constsFor(r.ctx, kk.k.Name, kk.wg(), shift)
}

// regions hands a format the memory its plan binds. For host-memory jobs every stream is a staging region the
// driver fills from the job's bytes or copies back into them; for device-resident operations the streams are views
// of the caller's buffers. Device-only regions (scratch) come from the session either way. An allocation failure is
// kept in err and returned by the driver after planning, so that formats plan without checking each region.
type regions struct {
	b      *Backend
	s      *session
	host   bool
	encode bool
	vals   vk.BufferRange // device-resident: the values (source of an encode, destination of a decode)
	body   vk.BufferRange // device-resident: the body
	work   staged         // encode: shape.workBytes of work words
	status loc            // decode: the status block's region
	// statusBase is the word of this tensor's status block in status (several blocks share one region).
	statusBase uint32
	ins, outs  []hostCopy // host: staging regions to fill before and copy back after the run
	root       *regions   // a sub-plan's (auto's candidates) owner of zero and err
	zero       []loc      // device regions the driver zeroes with work before the first pass
	err        error
}

// hostCopy is a staging region and where its bytes lie in the job's values or body.
type hostCopy struct {
	st        staged
	off, size uint64
	vals      bool
}

func (r *regions) top() *regions {
	if r.root != nil {
		return r.root
	}
	return r
}

func (r *regions) fail(err error) {
	if t := r.top(); t.err == nil {
		t.err = err
	}
}

// valsAt is the view of size bytes at byte off of the values.
func (r *regions) valsAt(off, size uint64) view {
	if !r.host {
		return bufView(r.vals, off, size)
	}
	return r.stage(true, off, size, r.encode)
}

// bodyAt is the view of size bytes at byte off of the body (an encode copies back only the bytes before the body's
// end).
func (r *regions) bodyAt(off, size uint64) view {
	if !r.host {
		return bufView(r.body, off, size)
	}
	return r.stage(false, off, size, !r.encode)
}

func (r *regions) stage(vals bool, off, size uint64, in bool) view {
	var st staged
	var err error
	if in {
		st, err = r.s.allocIn(r.b, size)
	} else {
		st, err = r.s.allocOut(r.b, size)
	}
	if err != nil {
		r.fail(err)
		return view{}
	}
	c := hostCopy{st: st, off: off, size: size, vals: vals}
	if in {
		r.ins = append(r.ins, c)
	} else {
		r.outs = append(r.outs, c)
	}
	return viewOf(st.dev)
}

// scratch is a device-only region of size bytes, its contents undefined.
func (r *regions) scratch(size uint64) loc {
	l, err := r.s.dev.alloc(size)
	if err != nil {
		r.fail(err)
	}
	return l
}

// zeroed is a device-only region of size bytes that the driver zeroes before the first pass.
func (r *regions) zeroed(size uint64) loc {
	l := r.scratch(size)
	if l.buf != nil {
		t := r.top()
		t.zero = append(t.zero, l)
	}
	return l
}

// sub is a device-resident plan inside r's: values at vals, a body at body (a scratch body of auto's), work words
// at work; its scratch and zeroed regions are r's.
func (r *regions) sub(vals, body vk.BufferRange, work loc) *regions {
	return &regions{b: r.b, s: r.s, encode: r.encode, vals: vals, body: body, work: staged{dev: work},
		root: r.top()}
}

// rangeOf is the buffer range a view's data starts.
func rangeOf(v view, size uint64) vk.BufferRange {
	return vk.BufferRange{Buf: v.l.buf, Offset: v.l.off + v.base, Size: size}
}

// groups is the grid of a kernel that takes n work items a workgroup (chunks, most often), grid-stride beyond the
// backend's grid.
func (b *Backend) gridOf(n uint64) uint32 { return uint32(min(n, uint64(b.groups))) }

// The registry's formats, as the backend reports them.

func unsupportedFormat(id uint8) error {
	return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf("vulkan backend: format %d", id)}
}

func lookupCodec(id uint8) (gpuCodec, error) {
	if f, ok := gpuCodecs[id]; ok {
		return f, nil
	}
	return nil, unsupportedFormat(id)
}

// SupportsFormat reports whether the backend has kernels for format id (host-memory jobs and device-resident
// operations alike).
func (b *Backend) SupportsFormat(id uint8) bool {
	_, ok := gpuCodecs[id]
	return ok
}

// Formats lists the format ids this build has Vulkan kernels for.
func Formats() []uint8 {
	var out []uint8
	for _, f := range codec.Formats() {
		if _, ok := gpuCodecs[f.ID]; ok {
			out = append(out, f.ID)
		}
	}
	return out
}

// jobDType is a job's dtype, BF16 for the zero value (as package codec reads it).
func jobDType(d layout.DType) layout.DType {
	if d == layout.DTypeOpaque {
		return layout.DTypeBF16
	}
	return d
}
