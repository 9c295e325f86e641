//go:build cgo

package vk

/*
#include <stdlib.h>
#include <string.h>
#include "vkz.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// child is an object owned by a Device; Device.Close releases leftovers.
type child interface {
	release()
}

// Device is a logical device with up to maxQueues compute queues of one
// family. Each Commands is bound to one queue (round robin at creation):
// a pipeline barrier orders against all earlier work *on its queue*, so
// with one queue every worker's submission would wait for every other
// worker's (staging copies included); separate queues let independent
// operations overlap. Work on different queues is ordered only by fences
// or semaphores, never by submission order.
//
// All methods are safe for concurrent use except where noted; Commands
// objects must each be used by one goroutine at a time.
type Device struct {
	inst     *Instance
	info     DeviceInfo
	mem      memoryInfo
	c        *C.vkz_dev
	vdev     vulkan.Device // c.device for vulkan-go
	features EnabledFeatures
	exts     []string

	queueMu   []sync.Mutex // per queue: vkQueueSubmit needs external synchronisation
	nextQueue atomic.Uint32

	cache     C.VkPipelineCache
	cachePath string

	live        atomic.Int64
	submissions atomic.Uint64
	dispatches  atomic.Uint64
	readbacks   atomic.Uint64
	bytesUp     atomic.Uint64
	bytesDown   atomic.Uint64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	recordings  atomic.Uint64
	bindingSets atomic.Uint64
	fencePolls  atomic.Uint64
	sleeps      atomic.Uint64

	lost   atomic.Bool
	fault  atomic.Int32 // injected Result for the next Submit/Wait (0: none)
	closed atomic.Bool

	regMu    sync.Mutex
	children map[child]uint64
	seq      uint64

	stagingMu   sync.Mutex
	staging     []*stager
	stagingSize uint64

	waitSpin time.Duration
}

// defaultWaitSpin is how long Submission.Wait polls before blocking.
const defaultWaitSpin = 100 * time.Microsecond

// OpenDevice creates a logical device for the physical device described by
// info (as returned by Devices or SelectDevice).
func (in *Instance) OpenDevice(info DeviceInfo, opts DeviceOptions) (*Device, error) {
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	if info.Index < 0 || info.Index >= len(pds) {
		return nil, fmt.Errorf("%w: device index %d out of range (%d devices)", ErrNoDevice, info.Index, len(pds))
	}
	pd := pds[info.Index]
	det, err := in.details(info.Index, pd)
	if err != nil {
		return nil, err
	}
	fresh := det.info
	if info.UUID != ([16]byte{}) && fresh.UUID != info.UUID {
		return nil, fmt.Errorf("%w: device %d is %q, not the requested %q", ErrNoDevice, info.Index, fresh.Name, info.Name)
	}
	if !fresh.Usable {
		return nil, fmt.Errorf("%w: %s is not usable: %s", ErrNoDevice, fresh.Name, fresh.Reason)
	}

	eff := min(fresh.APIVersionRaw, in.apiVersion)
	var exts []string
	var feats EnabledFeatures
	if fresh.HasExtension("VK_KHR_portability_subset") {
		exts = append(exts, "VK_KHR_portability_subset") // required by the spec when present
	}
	if fresh.SubgroupSizeControl || fresh.ComputeFullSubgroups {
		if eff < MakeVersion(1, 3, 0) {
			exts = append(exts, "VK_EXT_subgroup_size_control")
		}
		feats.SubgroupSizeControl = fresh.SubgroupSizeControl
		feats.ComputeFullSubgroups = fresh.ComputeFullSubgroups
	}
	if fresh.TimelineSemaphore {
		if eff < MakeVersion(1, 2, 0) {
			exts = append(exts, "VK_KHR_timeline_semaphore")
		}
		feats.TimelineSemaphore = true
	}
	if fresh.ExternalMemoryFD {
		exts = append(exts, "VK_KHR_external_memory_fd")
		feats.ExternalMemoryFD = true
	}
	if fresh.ExternalSemaphoreFD {
		exts = append(exts, "VK_KHR_external_semaphore_fd")
		feats.ExternalSemaphoreFD = true
	}
	feats.ShaderInt64 = fresh.ShaderInt64
	feats.ShaderInt16 = fresh.ShaderInt16
	if fresh.PipelineExecutableInfo {
		exts = append(exts, extPipelineExecProps)
		feats.PipelineStatistics = true
	}
	if fresh.HostQueryReset {
		if eff < MakeVersion(1, 2, 0) {
			exts = append(exts, extHostQueryReset)
		}
		feats.HostQueryReset = true
	}

	o := (*C.vkz_dev_opts)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkz_dev_opts{}))))
	defer C.free(unsafe.Pointer(o))
	o.queueFamily = C.uint32_t(fresh.ComputeQueueFamily)
	o.queueCount = C.uint32_t(queuesFor(fresh, opts.Queues))
	o.enableSizeControl = C.uint32_t(b2u(feats.SubgroupSizeControl))
	o.enableFullSubgroups = C.uint32_t(b2u(feats.ComputeFullSubgroups))
	o.enableTimeline = C.uint32_t(b2u(feats.TimelineSemaphore))
	o.enableExecProps = C.uint32_t(b2u(feats.PipelineStatistics))
	o.enableInt64 = C.uint32_t(b2u(feats.ShaderInt64))
	o.enableInt16 = C.uint32_t(b2u(feats.ShaderInt16))
	o.enableHostQueryReset = C.uint32_t(b2u(feats.HostQueryReset))
	o.extensionCount = C.uint32_t(len(exts))
	for i, e := range exts {
		cs := C.CString(e)
		defer C.free(unsafe.Pointer(cs))
		o.extensions[i] = cs
	}
	var cdev *C.vkz_dev
	var missing *C.char
	r := Result(C.vkz_create_device(in.c, pd, o, &cdev, &missing))
	if r == ResultMissingEntryPoint {
		if cdev != nil { // created, but its C table is incomplete
			vulkan.DestroyDevice(vgDevice(cdev.device), nil)
			C.free(unsafe.Pointer(cdev))
		}
		return nil, fmt.Errorf("%w: %s", ErrMissingEntryPoint, C.GoString(missing))
	}
	if r != ResultSuccess {
		return nil, checkDetail("vkCreateDevice", r, fresh.Name)
	}
	if feats.PipelineStatistics && (cdev.GetPipelineExecutablePropertiesKHR == nil || cdev.GetPipelineExecutableStatisticsKHR == nil) {
		// Enabled but not callable: behave as if the feature were absent.
		feats.PipelineStatistics = false
	}
	if feats.HostQueryReset && cdev.ResetQueryPool == nil {
		feats.HostQueryReset = false
	}
	d := &Device{
		inst:        in,
		info:        fresh,
		mem:         det.mem,
		c:           cdev,
		vdev:        vgDevice(cdev.device),
		features:    feats,
		exts:        exts,
		children:    map[child]uint64{},
		stagingSize: opts.StagingSize,
		cachePath:   opts.PipelineCachePath,
		queueMu:     make([]sync.Mutex, cdev.queueCount),
	}
	// The C table's queues, for vkQueueSubmit.
	for i := 0; i < int(cdev.queueCount); i++ {
		var q vulkan.Queue
		vulkan.GetDeviceQueue(d.vdev, uint32(cdev.queueFamily), uint32(i), &q)
		cdev.queues[i] = C.VkQueue(unsafe.Pointer(q))
	}
	if d.stagingSize == 0 {
		d.stagingSize = 64 << 20
	}
	switch {
	case opts.WaitSpin > 0:
		d.waitSpin = opts.WaitSpin
	case opts.WaitSpin == 0 && fresh.Type != DeviceTypeCPU:
		// CPU devices need the cores the spin would take.
		d.waitSpin = defaultWaitSpin
	}
	d.addLive(1) // the VkDevice itself
	if err := d.openPipelineCache(); err != nil {
		d.Close()
		return nil, err
	}
	in.addDevice(d)
	return d, nil
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (d *Device) addLive(n int) {
	d.live.Add(int64(n))
	globalLive.Add(int64(n))
}

// register tracks a child object so Close can release it.
func (d *Device) register(c child) {
	d.regMu.Lock()
	d.seq++
	d.children[c] = d.seq
	d.regMu.Unlock()
}

// unregister reports whether c was still registered (i.e. not yet released).
func (d *Device) unregister(c child) bool {
	d.regMu.Lock()
	_, ok := d.children[c]
	delete(d.children, c)
	d.regMu.Unlock()
	return ok
}

// usable returns an error when the device is closed or lost.
func (d *Device) usable() error {
	if d == nil || d.closed.Load() {
		return ErrClosed
	}
	if d.lost.Load() {
		return &Error{Op: "device", Result: ResultDeviceLost}
	}
	return nil
}

// Info returns the physical device description.
func (d *Device) Info() DeviceInfo { return d.info }

// Instance returns the instance that opened the device.
func (d *Device) Instance() *Instance { return d.inst }

// RobustBufferAccess reports whether robustBufferAccess was enabled (never).
func (d *Device) RobustBufferAccess() bool { return false }

// Features reports the optional features that were enabled.
func (d *Device) Features() EnabledFeatures { return d.features }

// EnabledExtensions returns the device extensions that were enabled.
func (d *Device) EnabledExtensions() []string { return append([]string(nil), d.exts...) }

// QueueFamily returns the compute queue family index in use.
func (d *Device) QueueFamily() uint32 { return uint32(d.c.queueFamily) }

// LiveObjects returns the number of live Vulkan objects owned by this
// device, including the VkDevice itself (0 after Close).
func (d *Device) LiveObjects() int { return int(d.live.Load()) }

// Stats returns a snapshot of the device counters.
func (d *Device) Stats() Stats {
	return Stats{
		Submissions:     d.submissions.Load(),
		InFlight:        d.inFlight.Load(),
		MaxInFlight:     d.maxInFlight.Load(),
		Dispatches:      d.dispatches.Load(),
		Readbacks:       d.readbacks.Load(),
		BytesUploaded:   d.bytesUp.Load(),
		BytesDownloaded: d.bytesDown.Load(),
		Recordings:      d.recordings.Load(),
		BindingSets:     d.bindingSets.Load(),
		FencePolls:      d.fencePolls.Load(),
		BlockingWaits:   d.sleeps.Load(),
	}
}

// CountReadback records a host read of device data done outside Download
// (e.g. through a mapped Readback buffer), so Stats().Readbacks stays
// meaningful for callers that bypass the staging helpers.
func (d *Device) CountReadback(bytes uint64) {
	d.readbacks.Add(1)
	d.bytesDown.Add(bytes)
}

// InjectFault makes the next Submit or Submission.Wait on this device fail
// with r, as if returned by the driver. ResultDeviceLost also marks the
// device lost, so every later Submit/Wait returns ErrDeviceLost; Close
// still works. Test hook; pass ResultSuccess to clear.
func (d *Device) InjectFault(r Result) { d.fault.Store(int32(r)) }

// takeFault consumes an injected fault.
func (d *Device) takeFault(op string) error {
	if d.fault.Load() == 0 {
		return nil
	}
	r := Result(d.fault.Swap(0))
	if r == ResultSuccess {
		return nil
	}
	if r == ResultDeviceLost {
		d.lost.Store(true)
	}
	return &Error{Op: op, Result: r, Detail: "injected"}
}

func (d *Device) noteResult(r Result) {
	if r == ResultDeviceLost {
		d.lost.Store(true)
	}
}

// Lost reports whether the device was lost (really or by injection).
func (d *Device) Lost() bool { return d.lost.Load() }

// maxQueues bounds the compute queues a Device creates: enough for the
// concurrent operations of a pipelined caller, few enough that drivers
// exposing many queues do not multiply per-queue costs.
const maxQueues = 4

// queuesFor is how many queues OpenDevice creates on a device: want (1..8,
// DeviceOptions.Queues) overrides the default of min(maxQueues, what the
// family offers).
func queuesFor(info DeviceInfo, want int) int {
	n := min(maxQueues, info.ComputeQueueCount)
	if want >= 1 {
		n = min(want, info.ComputeQueueCount, 8)
	}
	return max(n, 1)
}

// Queues is the number of compute queues the device uses.
func (d *Device) Queues() int { return int(d.c.queueCount) }

func (d *Device) lockQueues() {
	for i := range d.queueMu {
		d.queueMu[i].Lock()
	}
}

func (d *Device) unlockQueues() {
	for i := range d.queueMu {
		d.queueMu[i].Unlock()
	}
}

// WaitIdle waits for all queued work (vkDeviceWaitIdle).
func (d *Device) WaitIdle() error {
	if err := d.usable(); err != nil {
		return err
	}
	d.lockQueues() // vkDeviceWaitIdle needs all queues externally synchronised
	r := Result(vulkan.DeviceWaitIdle(d.vdev))
	d.unlockQueues()
	d.noteResult(r)
	return check("vkDeviceWaitIdle", r)
}

// Close waits for the device to go idle and destroys every object created
// through it (leftovers in reverse creation order), the pipeline cache
// (saved first when a path was configured) and the device. Idempotent.
func (d *Device) Close() error {
	if d == nil || !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	// Errors (including DEVICE_LOST) are irrelevant here: destruction is
	// allowed on a lost device.
	d.lockQueues()
	vulkan.DeviceWaitIdle(d.vdev)
	d.unlockQueues()

	d.regMu.Lock()
	type entry struct {
		c   child
		seq uint64
	}
	var list []entry
	for c, s := range d.children {
		list = append(list, entry{c, s})
	}
	d.children = map[child]uint64{}
	d.regMu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].seq > list[j].seq })
	for _, e := range list {
		e.c.release()
	}
	d.stagingMu.Lock()
	d.staging = nil
	d.stagingMu.Unlock()

	var err error
	if d.cache != 0 {
		if d.cachePath != "" && !d.lost.Load() {
			err = d.savePipelineCache()
		}
		vulkan.DestroyPipelineCache(d.vdev, vgPipelineCache(d.cache), nil)
		d.cache = 0
		d.addLive(-1)
	}
	vulkan.DestroyDevice(d.vdev, nil)
	C.free(unsafe.Pointer(d.c))
	d.c, d.vdev = nil, nil
	d.addLive(-1)
	d.inst.removeDevice(d)
	return err
}

// Pipeline cache header (VkPipelineCacheHeaderVersionOne).
const pipelineCacheHeaderSize = 32

func (d *Device) cacheHeaderMatches(data []byte) bool {
	if len(data) < pipelineCacheHeaderSize {
		return false
	}
	size := binary.LittleEndian.Uint32(data[0:])
	version := binary.LittleEndian.Uint32(data[4:])
	vendor := binary.LittleEndian.Uint32(data[8:])
	device := binary.LittleEndian.Uint32(data[12:])
	return size >= pipelineCacheHeaderSize && version == 1 &&
		vendor == d.info.VendorID && device == d.info.DeviceID &&
		bytes.Equal(data[16:32], d.info.PipelineCacheUUID[:])
}

func (d *Device) openPipelineCache() error {
	var data []byte
	if d.cachePath != "" {
		if b, err := os.ReadFile(d.cachePath); err == nil && d.cacheHeaderMatches(b) {
			data = b // other devices' or drivers' caches are ignored
		}
	}
	var ptr unsafe.Pointer
	if len(data) > 0 {
		ptr = C.CBytes(data)
		defer C.free(ptr)
	}
	r := Result(C.vkz_create_pipeline_cache(d.c, ptr, C.size_t(len(data)), &d.cache))
	if r != ResultSuccess && len(data) > 0 {
		// A corrupt cache must not prevent opening the device.
		r = Result(C.vkz_create_pipeline_cache(d.c, nil, 0, &d.cache))
	}
	if r != ResultSuccess {
		return check("vkCreatePipelineCache", r)
	}
	if err := checkHandle("vkCreatePipelineCache", uint64(d.cache)); err != nil {
		d.cache = 0 // leaked: vulkan-go cannot carry it to vkDestroyPipelineCache
		return err
	}
	d.addLive(1)
	return nil
}

// PipelineCacheData returns the current pipeline cache contents.
func (d *Device) PipelineCacheData() ([]byte, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return d.pipelineCacheDataUnchecked()
}

// SavePipelineCache writes the pipeline cache to DeviceOptions.PipelineCachePath
// (no-op without a path). Close calls it too.
func (d *Device) SavePipelineCache() error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.cachePath == "" {
		return nil
	}
	return d.savePipelineCache()
}

func (d *Device) savePipelineCache() error {
	data, err := d.pipelineCacheDataUnchecked()
	if err != nil || len(data) == 0 {
		return err
	}
	dir := filepath.Dir(d.cachePath)
	tmp, err := os.CreateTemp(dir, ".vkzip-pcache-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// Rename for atomic replacement: concurrent readers never see half a file.
	return os.Rename(tmp.Name(), d.cachePath)
}

func (d *Device) pipelineCacheDataUnchecked() ([]byte, error) {
	cache := vgPipelineCache(d.cache)
	var n uint
	if r := Result(vulkan.GetPipelineCacheData(d.vdev, cache, &n, nil)); r != ResultSuccess {
		return nil, check("vkGetPipelineCacheData", r)
	}
	if n == 0 {
		return nil, nil
	}
	buf := C.malloc(C.size_t(n))
	defer C.free(buf)
	r := Result(vulkan.GetPipelineCacheData(d.vdev, cache, &n, buf))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, check("vkGetPipelineCacheData", r)
	}
	return C.GoBytes(buf, C.int(n)), nil
}

// pickMemoryType chooses a memory type index for kind among typeBits.
func (d *Device) pickMemoryType(typeBits uint32, kind BufferKind) (uint32, error) {
	var required, prefer, avoid uint32
	switch kind {
	case DeviceLocal:
		required, avoid = memDeviceLocal, memHostVisible
	case HostVisible:
		required, prefer, avoid = memHostVisible|memHostCoherent, memHostCached, memDeviceLocal
	case Upload:
		required, avoid = memHostVisible|memHostCoherent, memDeviceLocal|memHostCached
	case Readback:
		required, prefer, avoid = memHostVisible|memHostCoherent, memHostCached, memDeviceLocal
	case DeviceLocalHostVisible:
		required = memDeviceLocal | memHostVisible | memHostCoherent
	default:
		return 0, invalidf("unknown buffer kind %d", int(kind))
	}
	best, bestScore := -1, -1
	for i, t := range d.mem.types {
		if typeBits&(1<<uint(i)) == 0 || t.flags&required != required {
			continue
		}
		score := 0
		for bit := uint32(1); bit <= memHostCached; bit <<= 1 {
			if prefer&bit != 0 && t.flags&bit != 0 {
				score += 2
			}
			if avoid&bit != 0 && t.flags&bit == 0 {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		if kind == DeviceLocalHostVisible {
			return 0, fmt.Errorf("%w: no host-visible device-local memory type", ErrUnsupported)
		}
		return 0, fmt.Errorf("%w: no memory type for %s buffers (type bits %#x)", ErrUnsupported, kind, typeBits)
	}
	return uint32(best), nil
}

// String names the device.
func (d *Device) String() string {
	if d == nil {
		return "<nil device>"
	}
	return fmt.Sprintf("vk.Device(%s)", d.info.Name)
}

// cBytesView views C memory as a byte slice.
func cBytesView(p unsafe.Pointer, n uint64) []byte {
	return unsafe.Slice((*byte)(p), int(n))
}
