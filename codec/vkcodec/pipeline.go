package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// maxSpecIDs bounds the specialization-constant IDs of the kernels (kernelKey holds their values by ID).
const maxSpecIDs = 12

// kernelKey names one pipeline: a kernel's contract and the values of the specialization constants it sets. It is a
// value (no allocation) and the key of the backend's one pipeline cache.
type kernelKey struct {
	k        *shaders.Kernel
	spec     [maxSpecIDs]uint32
	set      uint32 // bit i: spec ID i is set
	subgroup uint32 // a required subgroup size, with full subgroups (0: the driver's choice)
}

// keyOf starts the key of kernel k with workgroups of wg invocations.
func keyOf(k *shaders.Kernel, wg uint32) kernelKey { return kernelKey{k: k}.with("WG", wg) }

// with sets the named specialization constant (a name the kernel does not declare panics: see SpecID).
func (kk kernelKey) with(name string, v uint32) kernelKey {
	id := kk.k.SpecID(name)
	kk.spec[id], kk.set = v, kk.set|1<<id
	return kk
}

// withIf sets the named constant where the kernel declares it.
func (kk kernelKey) withIf(name string, v uint32) kernelKey {
	if hasSpec(kk.k, name) {
		return kk.with(name, v)
	}
	return kk
}

func (kk kernelKey) wg() uint32 { return kk.spec[0] }

// keyCRCBits is the CRC table width the key sets, else the backend's for its kernel.
func (b *Backend) keyCRCBits(kk kernelKey) int {
	if hasSpec(kk.k, "CRC_BITS") {
		if id := kk.k.SpecID("CRC_BITS"); kk.set&(1<<id) != 0 {
			return int(kk.spec[id])
		}
	}
	return b.crcBits(kk.k.Name)
}

// chunkKey is the key of a chunk kernel for workgroups of wg invocations and chunks of 2^shift values: the
// backend's table replication, unrolling and CRC table width where the kernel takes them.
func (b *Backend) chunkKey(k *shaders.Kernel, wg uint32, shift uint) kernelKey {
	kk := keyOf(k, wg).withIf("SHIFT", uint32(shift)).withIf("REPL", uint32(b.t.Repl)).
		withIf("CRC_BITS", uint32(b.crcBits(k.Name)))
	if hasSpec(k, "U") && k.SpecID("U") == specUnrollID {
		// Unroll must divide the slots each thread handles per chunk.
		unroll := uint32(1)
		for u := uint32(b.unroll(k.Name)); u > 1; u /= 2 {
			if (uint32(1)<<shift/8/wg)%u == 0 {
				unroll = u
				break
			}
		}
		kk = kk.with("U", unroll)
	}
	return kk
}

// pipeline returns the pipeline of kk, built on first use and cached for the backend's life.
func (b *Backend) pipeline(kk kernelKey) (*vk.Pipeline, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pipes[kk]; p != nil {
		return p, nil
	}
	code, err := shaders.SPIRV(kk.k.Name)
	if err != nil {
		return nil, err
	}
	desc := vk.PipelineDesc{Name: kk.k.Name, SPIRV: code, CaptureStatistics: true, Bindings: len(kk.k.Bindings),
		PushConstantSize: kk.k.PushSize()}
	for id := uint32(0); id < maxSpecIDs; id++ {
		if kk.set>>id&1 != 0 {
			desc.Spec = append(desc.Spec, vk.SpecConst{ID: id, Value: kk.spec[id]})
		}
	}
	if kk.subgroup != 0 {
		desc.RequiredSubgroupSize, desc.RequireFullSubgroups = kk.subgroup, true
	}
	p, err := b.dev.NewPipeline(desc)
	if err != nil {
		return nil, err
	}
	b.pipes[kk] = p
	return p, nil
}

// statsName names a pipeline in KernelStats: kernel, workgroup and, for the chunk kernels, chunk shift.
func (kk kernelKey) statsName() string {
	shift := uint32(0)
	if hasSpec(kk.k, "SHIFT") {
		shift = kk.spec[kk.k.SpecID("SHIFT")]
	}
	return fmt.Sprintf("%s/wg%d/shift%d", kk.k.Name, kk.wg(), shift)
}

// constsFor returns the device buffer of CRC tables (built once, then cached) for kernel, workgroups of wg threads
// and chunks of 2^shift values, as the region the kernel binds.
func (b *Backend) constsFor(ctx context.Context, kernel string, wg uint32, shift uint) (loc, error) {
	return b.constsBits(ctx, b.crcBits(kernel), wg, shift)
}

// constsBits is constsFor for tables of bits-bit fields.
func (b *Backend) constsBits(ctx context.Context, bits int, wg uint32, shift uint) (loc, error) {
	key := [3]uint32{wg, uint32(shift), uint32(bits)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.consts[key]; c != nil {
		return loc{buf: c, size: c.Size()}, nil
	}
	words := crcConsts(int(wg), shift, bits)
	raw := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	kind := vk.DeviceLocal
	if b.unified {
		kind = vk.HostVisible
	}
	buf, err := b.dev.NewBuffer(uint64(len(raw)), kind)
	if err != nil {
		return loc{}, err
	}
	if err := b.dev.Upload(ctx, buf, 0, raw); err != nil {
		buf.Close()
		return loc{}, err
	}
	b.consts[key] = buf
	return loc{buf: buf, size: buf.Size()}, nil
}
