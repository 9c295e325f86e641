//go:build cgo

package vk

/*
#include <stdlib.h>
#include "vkz.h"
*/
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

const (
	spirvMagic  = 0x07230203
	maxBindings = 64 // VKZ_MAX_BINDINGS in vkz.c
)

// Pipeline is a compute pipeline with its descriptor-set and pipeline
// layouts (storage buffers at set 0, one push-constant range).
type Pipeline struct {
	dev          *Device
	pipe         C.VkPipeline
	layout       C.VkPipelineLayout
	dsl          C.VkDescriptorSetLayout
	bindings     int
	pushSize     uint32
	name         string
	subgroupSize uint32
	stats        bool // created with CAPTURE_STATISTICS
	closed       atomic.Bool
}

// NewPipeline compiles a compute pipeline through the device pipeline cache.
func (d *Device) NewPipeline(desc PipelineDesc) (*Pipeline, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	name := desc.Name
	if name == "" {
		name = "pipeline"
	}
	code := desc.SPIRV
	if len(code) < 20 || len(code)%4 != 0 {
		return nil, invalidf("%s: SPIR-V must be a non-empty multiple of 4 bytes (got %d)", name, len(code))
	}
	if binary.LittleEndian.Uint32(code) != spirvMagic {
		return nil, invalidf("%s: bad SPIR-V magic %#08x", name, binary.LittleEndian.Uint32(code))
	}
	lim := d.info.Limits
	if desc.Bindings < 0 || desc.Bindings > maxBindings || uint32(desc.Bindings) > lim.MaxPerStageDescriptorStorageBuffers {
		return nil, invalidf("%s: %d storage-buffer bindings (max %d)", name, desc.Bindings,
			min(maxBindings, int(lim.MaxPerStageDescriptorStorageBuffers)))
	}
	if desc.PushConstantSize%4 != 0 || desc.PushConstantSize > lim.MaxPushConstantsSize {
		return nil, invalidf("%s: push constant size %d (must be a multiple of 4, max %d)",
			name, desc.PushConstantSize, lim.MaxPushConstantsSize)
	}
	if len(desc.Spec) > maxBindings {
		return nil, invalidf("%s: too many specialization constants (%d)", name, len(desc.Spec))
	}
	entry := desc.Entry
	if entry == "" {
		entry = "main"
	}

	subgroup := d.info.SubgroupSize
	var required uint32
	if rs := desc.RequiredSubgroupSize; rs != 0 {
		switch {
		case rs&(rs-1) != 0:
			return nil, invalidf("%s: required subgroup size %d is not a power of two", name, rs)
		case d.features.SubgroupSizeControl && d.info.RequiredSubgroupSizeStages.HasCompute() &&
			rs >= d.info.MinSubgroupSize && rs <= d.info.MaxSubgroupSize:
			required = rs
		case rs == d.info.SubgroupSize && d.info.MinSubgroupSize == d.info.MaxSubgroupSize:
			// The only size the device has; nothing to request.
		default:
			return nil, fmt.Errorf("%w: %s: subgroup size %d (device: %d, range %d..%d, size control %v)",
				ErrUnsupported, name, rs, d.info.SubgroupSize, d.info.MinSubgroupSize, d.info.MaxSubgroupSize,
				d.features.SubgroupSizeControl)
		}
		subgroup = rs
	}
	var stageFlags uint32
	if desc.RequireFullSubgroups {
		if !d.features.ComputeFullSubgroups {
			return nil, fmt.Errorf("%w: %s: computeFullSubgroups", ErrUnsupported, name)
		}
		stageFlags |= 0x2 // VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
	}

	var pipeFlags uint32
	capture := desc.CaptureStatistics && d.features.PipelineStatistics
	if capture {
		pipeFlags |= 0x40 // VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
	}

	// Copy inputs to C memory: the driver may read them on other threads
	// only during the call, but C memory keeps the cgo rules trivial.
	ccode := C.CBytes(code)
	defer C.free(ccode)
	centry := C.CString(entry)
	defer C.free(unsafe.Pointer(centry))
	var ids, vals *C.uint32_t
	if n := len(desc.Spec); n > 0 {
		ids = (*C.uint32_t)(C.calloc(C.size_t(n), 4))
		vals = (*C.uint32_t)(C.calloc(C.size_t(n), 4))
		defer C.free(unsafe.Pointer(ids))
		defer C.free(unsafe.Pointer(vals))
		idv, valv := unsafe.Slice(ids, n), unsafe.Slice(vals, n)
		for i, s := range desc.Spec {
			idv[i], valv[i] = C.uint32_t(s.ID), C.uint32_t(s.Value)
		}
	}
	p := &Pipeline{dev: d, bindings: desc.Bindings, pushSize: desc.PushConstantSize, name: name, subgroupSize: subgroup,
		stats: capture}
	r := Result(C.vkz_create_pipeline(d.c, d.cache, (*C.uint32_t)(ccode), C.size_t(len(code)), centry,
		C.uint32_t(desc.Bindings), C.uint32_t(desc.PushConstantSize), ids, vals, C.uint32_t(len(desc.Spec)),
		C.uint32_t(required), C.uint32_t(stageFlags), C.VkFlags(pipeFlags), &p.dsl, &p.layout, &p.pipe))
	var err error
	if r == ResultSuccess {
		err = checkHandle("vkCreateComputePipelines", uint64(p.pipe), uint64(p.layout), uint64(p.dsl))
	} else {
		err = checkDetail("vkCreateComputePipelines", r, name)
	}
	if err != nil {
		// The C layer leaves what it created for these destroy calls.
		if p.pipe != 0 {
			vulkan.DestroyPipeline(d.vdev, vgPipeline(p.pipe), nil)
		}
		if p.layout != 0 {
			vulkan.DestroyPipelineLayout(d.vdev, vgPipelineLayout(p.layout), nil)
		}
		if p.dsl != 0 {
			vulkan.DestroyDescriptorSetLayout(d.vdev, vgDescriptorSetLayout(p.dsl), nil)
		}
		return nil, err
	}
	d.addLive(3) // pipeline, pipeline layout, descriptor set layout
	d.register(p)
	return p, nil
}

// Bindings returns the number of storage-buffer bindings.
func (p *Pipeline) Bindings() int { return p.bindings }

// PushConstantSize returns the push-constant range size in bytes.
func (p *Pipeline) PushConstantSize() uint32 { return p.pushSize }

// SubgroupSize returns the required subgroup size, or the device default.
func (p *Pipeline) SubgroupSize() uint32 { return p.subgroupSize }

// Name returns PipelineDesc.Name.
func (p *Pipeline) Name() string { return p.name }

// Statistics returns the compiler statistics of every executable of the
// pipeline (VK_KHR_pipeline_executable_properties), flattened in driver
// order. It fails with ErrUnsupported unless the device enabled
// EnabledFeatures.PipelineStatistics and the pipeline was created with
// PipelineDesc.CaptureStatistics. It must not race with Close.
func (p *Pipeline) Statistics() ([]PipelineStat, error) {
	if p == nil || p.closed.Load() {
		return nil, ErrClosed
	}
	d := p.dev
	if err := d.usable(); err != nil {
		return nil, err
	}
	if !d.features.PipelineStatistics {
		return nil, fmt.Errorf("%w: %s: %s (feature pipelineExecutableInfo) not enabled on %s",
			ErrUnsupported, p.name, extPipelineExecProps, d.info.Name)
	}
	if !p.stats {
		return nil, fmt.Errorf("%w: %s: pipeline was not created with CaptureStatistics", ErrUnsupported, p.name)
	}

	const opProps = "vkGetPipelineExecutablePropertiesKHR"
	var n C.uint32_t
	if r := Result(C.vkz_pipeline_executables(d.c, p.pipe, &n, nil)); r != ResultSuccess {
		return nil, checkDetail(opProps, r, p.name)
	}
	if n == 0 {
		return nil, nil
	}
	exes := (*C.VkPipelineExecutablePropertiesKHR)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.VkPipelineExecutablePropertiesKHR{}))))
	if exes == nil {
		return nil, &Error{Op: opProps, Result: ResultOutOfHostMemory}
	}
	defer C.free(unsafe.Pointer(exes))
	r := Result(C.vkz_pipeline_executables(d.c, p.pipe, &n, exes))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, checkDetail(opProps, r, p.name)
	}

	var out []PipelineStat
	for i, exe := range unsafe.Slice(exes, int(n)) {
		exeName := fixedString(exe.name[:])
		stats, err := p.executableStatistics(uint32(i), exeName)
		if err != nil {
			return nil, err
		}
		out = append(out, stats...)
	}
	return out, nil
}

// executableStatistics reads the statistics of executable index.
func (p *Pipeline) executableStatistics(index uint32, exeName string) ([]PipelineStat, error) {
	const op = "vkGetPipelineExecutableStatisticsKHR"
	d := p.dev
	var n C.uint32_t
	if r := Result(C.vkz_pipeline_statistics(d.c, p.pipe, C.uint32_t(index), &n, nil)); r != ResultSuccess {
		return nil, checkDetail(op, r, p.name+"/"+exeName)
	}
	if n == 0 {
		return nil, nil
	}
	arr := (*C.VkPipelineExecutableStatisticKHR)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.VkPipelineExecutableStatisticKHR{}))))
	if arr == nil {
		return nil, &Error{Op: op, Result: ResultOutOfHostMemory}
	}
	defer C.free(unsafe.Pointer(arr))
	r := Result(C.vkz_pipeline_statistics(d.c, p.pipe, C.uint32_t(index), &n, arr))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, checkDetail(op, r, p.name+"/"+exeName)
	}
	out := make([]PipelineStat, 0, int(n))
	view := unsafe.Slice(arr, int(n))
	for i := range view {
		s := &view[i]
		format := int32(s.format)
		var raw uint64
		if format == statFormatBool32 {
			raw = uint64(C.vkz_stat_b32(s))
		} else {
			raw = uint64(C.vkz_stat_u64(s))
		}
		out = append(out, makePipelineStat(exeName, fixedString(s.name[:]), fixedString(s.description[:]), format, raw))
	}
	return out, nil
}

// fixedString converts a char[N] field, stopping at the first NUL or at
// the end of the array should a driver not terminate it.
func fixedString(a []C.char) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Close destroys the pipeline. It must not be in use by a pending submission.
func (p *Pipeline) Close() error {
	if p == nil || !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	if p.dev.unregister(p) {
		p.destroy()
	}
	return nil
}

func (p *Pipeline) release() {
	p.closed.Store(true)
	p.destroy()
}

func (p *Pipeline) destroy() {
	d := p.dev
	vulkan.DestroyPipeline(d.vdev, vgPipeline(p.pipe), nil)
	vulkan.DestroyPipelineLayout(d.vdev, vgPipelineLayout(p.layout), nil)
	vulkan.DestroyDescriptorSetLayout(d.vdev, vgDescriptorSetLayout(p.dsl), nil)
	d.addLive(-3)
}

// Bindings is a descriptor set (with its own pool) binding buffer ranges
// to a pipeline's storage-buffer slots. Reusable across dispatches and
// command buffers; any pipeline with the same binding count accepts it.
type Bindings struct {
	dev    *Device
	n      int
	pool   C.VkDescriptorPool
	set    C.VkDescriptorSet
	ranges []BufferRange
	closed atomic.Bool
}

// NewBindings allocates a descriptor set for p and binds ranges (one per
// binding, in order). Each range is checked against maxStorageBufferRange
// and minStorageBufferOffsetAlignment.
func (d *Device) NewBindings(p *Pipeline, ranges []BufferRange) (*Bindings, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if p == nil || p.closed.Load() {
		return nil, ErrClosed
	}
	if p.dev != d {
		return nil, invalidf("pipeline belongs to another device")
	}
	b := &Bindings{dev: d, n: p.bindings}
	resolved, err := d.resolveRanges(p.bindings, ranges)
	if err != nil {
		return nil, err
	}
	if p.bindings > 0 {
		r := Result(C.vkz_create_descriptor_set(d.c, p.dsl, C.uint32_t(p.bindings), &b.pool, &b.set))
		if r == ResultSuccess {
			err = checkHandle("vkAllocateDescriptorSets", uint64(b.pool), uint64(b.set))
		} else {
			err = check("vkAllocateDescriptorSets", r)
		}
		if err != nil {
			if b.pool != 0 { // the C layer leaves the pool for this call
				vulkan.DestroyDescriptorPool(d.vdev, vgDescriptorPool(b.pool), nil)
			}
			return nil, err
		}
		d.addLive(2) // pool + set
	}
	b.write(resolved)
	d.bindingSets.Add(1)
	d.register(b)
	return b, nil
}

func (d *Device) resolveRanges(n int, ranges []BufferRange) ([]BufferRange, error) {
	if len(ranges) != n {
		return nil, invalidf("%d buffer ranges for %d bindings", len(ranges), n)
	}
	lim := d.info.Limits
	out := make([]BufferRange, n)
	for i, r := range ranges {
		if r.Buf == nil || r.Buf.closed.Load() {
			return nil, invalidf("binding %d: nil or closed buffer", i)
		}
		if r.Buf.dev != d {
			return nil, invalidf("binding %d: buffer belongs to another device", i)
		}
		if r.Offset >= r.Buf.size {
			return nil, invalidf("binding %d: offset %d beyond buffer size %d", i, r.Offset, r.Buf.size)
		}
		size := r.Size
		if size == 0 {
			size = r.Buf.size - r.Offset
		}
		if size > r.Buf.size-r.Offset {
			return nil, invalidf("binding %d: range [%d, %d) exceeds buffer size %d", i, r.Offset, r.Offset+size, r.Buf.size)
		}
		if a := lim.MinStorageBufferOffsetAlignment; a > 1 && r.Offset%a != 0 {
			return nil, invalidf("binding %d: offset %d not a multiple of minStorageBufferOffsetAlignment %d", i, r.Offset, a)
		}
		if size > uint64(lim.MaxStorageBufferRange) {
			return nil, invalidf("binding %d: range of %d bytes exceeds maxStorageBufferRange %d; bind smaller sub-ranges",
				i, size, lim.MaxStorageBufferRange)
		}
		out[i] = BufferRange{Buf: r.Buf, Offset: r.Offset, Size: size}
	}
	return out, nil
}

func (b *Bindings) write(ranges []BufferRange) {
	b.ranges = ranges
	if b.n == 0 {
		return
	}
	var bufs, offs, sizes [maxBindings]C.uint64_t
	for i, r := range ranges {
		bufs[i], offs[i], sizes[i] = C.uint64_t(r.Buf.buf), C.uint64_t(r.Offset), C.uint64_t(r.Size)
	}
	C.vkz_update_descriptor_set(b.dev.c, b.set, C.uint32_t(b.n), &bufs[0], &offs[0], &sizes[0])
}

// Update rebinds the ranges (vkUpdateDescriptorSets). The set must not be
// in use by a pending submission, and command buffers recorded with it
// must be re-recorded afterwards (Vulkan invalidates them).
func (b *Bindings) Update(ranges []BufferRange) error {
	if b == nil || b.closed.Load() {
		return ErrClosed
	}
	if err := b.dev.usable(); err != nil {
		return err
	}
	resolved, err := b.dev.resolveRanges(b.n, ranges)
	if err != nil {
		return err
	}
	b.write(resolved)
	return nil
}

// Ranges returns the bound ranges (sizes resolved).
func (b *Bindings) Ranges() []BufferRange { return append([]BufferRange(nil), b.ranges...) }

// Close frees the descriptor set and its pool.
func (b *Bindings) Close() error {
	if b == nil || !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	if b.dev.unregister(b) {
		b.destroy()
	}
	return nil
}

func (b *Bindings) release() {
	b.closed.Store(true)
	b.destroy()
}

func (b *Bindings) destroy() {
	if b.pool != 0 {
		vulkan.DestroyDescriptorPool(b.dev.vdev, vgDescriptorPool(b.pool), nil)
		b.dev.addLive(-2)
	}
}
