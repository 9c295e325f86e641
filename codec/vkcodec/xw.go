package vkcodec

import (
	"context"
	"fmt"
	"sync"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// XWKernels runs the exponent-window formats (xw2, xw3, xw4 over F8_E5M2, F8_E4M3, F16, F32; docs/FORMAT.md
// §13) on a Backend's device, producing and accepting exactly the reference codec's bytes. It owns its
// pipelines (one per format, dtype, chunk size and workgroup size); Close releases them, before the Backend closes.
//
// Each stream of a tensor is one binding here, so a tensor is refused (ErrTooLarge) when a stream exceeds the
// device's binding range; the SplitZip-4 path's segmenting can be adopted when these formats join Backend.Encode.
type XWKernels struct {
	b     *Backend
	mu    sync.Mutex
	pipes map[xwPipeKey]*vk.Pipeline
}

type xwPipeKey struct {
	name          string
	wg, shift     uint32
	e, m, w, size uint32
}

// push-constant sizes of the exponent-window kernels, in bytes
const (
	pushXWEncode = 4 * 4
	pushXWPlace  = 4 * 6
	pushXWDecode = 4 * 7
	pushXWPieces = 4 * 10
)

// NewXWKernels prepares the exponent-window kernels on b's device (pipelines are built on first use).
func NewXWKernels(b *Backend) *XWKernels {
	return &XWKernels{b: b, pipes: map[xwPipeKey]*vk.Pipeline{}}
}

// Close releases the pipelines.
func (k *XWKernels) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pipes {
		p.Close()
	}
	k.pipes = map[xwPipeKey]*vk.Pipeline{}
	return nil
}

// wg is the workgroup size of the chunk kernels: each invocation codes whole 32-value groups.
func (k *XWKernels) wg(shift uint) uint32 {
	return min(uint32(k.b.o.WorkGroup), uint32(1)<<shift/layout.XWGroup)
}

func (k *XWKernels) pipeline(name string, x layout.XW, size int) (*vk.Pipeline, error) {
	key := xwPipeKey{name: name, wg: k.wg(x.Shift), shift: uint32(x.Shift), e: uint32(x.E), m: uint32(x.M),
		w: uint32(x.W), size: uint32(size)}
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pipes[key]; p != nil {
		return p, nil
	}
	code, err := shaders.SPIRV(name)
	if err != nil {
		return nil, err
	}
	desc := vk.PipelineDesc{Name: name, SPIRV: code, Spec: []vk.SpecConst{{ID: 0, Value: key.wg},
		{ID: 1, Value: key.shift}, {ID: 2, Value: key.e}, {ID: 3, Value: key.m}, {ID: 4, Value: key.w},
		{ID: 5, Value: key.size}}, Bindings: 6}
	switch name {
	case "xw_encode":
		desc.PushConstantSize = pushXWEncode
	case "xw_place":
		desc.PushConstantSize = pushXWPlace
	case "xw_decode":
		desc.PushConstantSize = pushXWDecode
	case "xw_decode_pieces":
		desc.PushConstantSize = pushXWPieces
	}
	p, err := k.b.dev.NewPipeline(desc)
	if err != nil {
		return nil, err
	}
	k.pipes[key] = p
	return p, nil
}

// geometry validates the arguments and the device's binding range.
func (k *XWKernels) geometry(format uint8, dt layout.DType, n uint64, shift uint) (layout.XW, error) {
	x, ok := layout.NewXW(format, dt, n, shift)
	switch {
	case !ok:
		return x, invalid("%s does not code %v", codec.FormatNameXW(format), dt)
	case shift < layout.MinChunkShift || shift > layout.MaxChunkShift:
		return x, invalid("chunk shift %d outside [%d, %d]", shift, layout.MinChunkShift, layout.MaxChunkShift)
	case n > layout.MaxCodedValues:
		return x, &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf("%d values", n)}
	}
	for _, sz := range []uint64{n * uint64(dt.Size()), x.PlaneBytes(), x.LowBytes(), x.MaxBodySize() - x.SideOffset(),
		layout.ChunkEntrySize * x.Chunks(), x.Chunks() * x.RawSide(x.ChunkValues())} {
		if sz > k.b.slabMax {
			return x, errTooBig(sz, k.b.slabMax)
		}
	}
	return x, nil
}

// Encode encodes n values of dt (src, little-endian) as a body of format and returns it; the bytes are the
// reference codec's (codec.CPUBackend.EncodeXW).
func (k *XWKernels) Encode(ctx context.Context, format uint8, dt layout.DType, src []byte, n uint64, shift uint,
	checksums bool) ([]byte, error) {
	x, err := k.geometry(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	size := uint64(dt.Size())
	if uint64(len(src)) < n*size {
		return nil, invalid("source holds %d bytes for %d values", len(src), n)
	}
	if n == 0 {
		return []byte{}, nil // no chunks: an empty body
	}
	b := k.b
	s, err := b.getSession()
	if err != nil {
		return nil, err
	}
	defer b.putSession(s)
	s.reset()
	C := x.Chunks()
	nb := (C + 63) / 64
	srcBytes := layout.Align4(n * size)
	sideMax := x.MaxBodySize() - x.SideOffset()
	var in, planes, lows, table, side, work staged
	var scratch loc
	for _, a := range []struct {
		p    *staged
		n    uint64
		isIn bool
	}{{&in, srcBytes, true}, {&planes, x.PlaneBytes(), false}, {&lows, max(x.LowBytes(), 4), false},
		{&table, layout.ChunkEntrySize * C, false}, {&side, max(sideMax, 4), false}, {&work, 4 * (2*nb + 1), false}} {
		if a.isIn {
			*a.p, err = s.allocIn(b, a.n)
		} else {
			*a.p, err = s.allocOut(b, a.n)
		}
		if err != nil {
			return nil, err
		}
	}
	if scratch, err = s.dev.alloc(max(C*x.RawSide(x.ChunkValues()), 4)); err != nil {
		return nil, err
	}
	h := in.host.bytes()
	copy(h, src[:n*size])
	clear(h[n*size:])

	enc, err := k.pipeline("xw_encode", x, int(size))
	if err != nil {
		return nil, err
	}
	place, err := k.pipeline("xw_place", x, int(size))
	if err != nil {
		return nil, err
	}
	scan, err := b.pipeline("sz4_scan", min(uint32(b.o.WorkGroup), 1<<layout.MaxChunkShift/8), 0)
	if err != nil {
		return nil, err
	}
	bdEnc, err := s.bind(b, enc, in.dev, planes.dev, lows.dev, table.dev, scratch, work.dev)
	if err != nil {
		return nil, err
	}
	bdScan, err := s.bind(b, scan, work.dev)
	if err != nil {
		return nil, err
	}
	bdPlace, err := s.bind(b, place, table.dev, scratch, side.dev, planes.dev, lows.dev, work.dev)
	if err != nil {
		return nil, err
	}
	groups := uint32(min(C, uint64(b.groups)))
	last := uint32(x.ChunkLen(C - 1))
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0)
	cmd.FillBuffer(scratch.buf, scratch.off, scratch.size, 0)
	b.copyUp(cmd, in)
	cmd.Barrier()
	var pw pushWriter
	cmd.Dispatch(enc, bdEnc, pw.u32(uint32(C), last, uint32(srcBytes/4), uint32(x.LowBytes()/4)).b, groups, 1, 1)
	cmd.Barrier()
	var ps pushWriter
	cmd.Dispatch(scan, bdScan, ps.u32(uint32(nb)).b, 1, 1, 1)
	cmd.Barrier()
	var pp pushWriter
	cmd.Dispatch(place, bdPlace, pp.u32(uint32(C), last, uint32(nb), b2u(checksums), uint32(x.LowBytes()/4),
		uint32(x.PlaneBytes()/4)).b, groups, 1, 1)
	cmd.Barrier()
	for _, o := range []staged{planes, lows, table, side, work} {
		b.copyDown(cmd, o)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	total, err := sideTotal(work, nb, sideMax, "vulkan xw encode")
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, x.SideOffset()+total)
	out = append(out, planes.host.bytes()[:x.PlaneBytes()]...)
	out = append(out, lows.host.bytes()[:x.LowBytes()]...)
	out = append(out, table.host.bytes()[:layout.ChunkEntrySize*C]...)
	out = append(out, side.host.bytes()[:total]...)
	return out, nil
}

// Decode validates and decodes a body of n values into dst (exactly n values of dt). An invalid body is reported
// as bodyErr, with the reference's class and chunk for structural errors (checked on the host first, as for
// SplitZip-4) and the lowest chunk of the deciding class otherwise; err is for failures of the call.
func (k *XWKernels) Decode(ctx context.Context, format uint8, dt layout.DType, body []byte, n uint64, shift uint,
	checksums bool, dst []byte) (bodyErr, err error) {
	x, err := k.geometry(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	size := uint64(dt.Size())
	if uint64(len(dst)) != n*size {
		return nil, invalid("destination holds %d bytes for %d values", len(dst), n)
	}
	if e := codec.CheckXWTable(body, format, dt, n, shift); e != nil || n == 0 {
		return e, nil
	}
	b := k.b
	s, err := b.getSession()
	if err != nil {
		return nil, err
	}
	defer b.putSession(s)
	s.reset()
	C := x.Chunks()
	sideLen := uint64(len(body)) - x.SideOffset()
	var planes, lows, table, side, out, status staged
	for _, a := range []struct {
		p    *staged
		n    uint64
		isIn bool
	}{{&planes, x.PlaneBytes(), true}, {&lows, max(x.LowBytes(), 4), true}, {&table, layout.ChunkEntrySize * C, true},
		{&side, max(sideLen, 4), true}, {&out, layout.Align4(n * size), false}, {&status, 32, false}} {
		if a.isIn {
			*a.p, err = s.allocIn(b, a.n)
		} else {
			*a.p, err = s.allocOut(b, a.n)
		}
		if err != nil {
			return nil, err
		}
	}
	copy(planes.host.bytes(), body[:x.PlaneBytes()])
	copy(lows.host.bytes(), body[x.PlaneBytes():x.TableOffset()])
	copy(table.host.bytes(), body[x.TableOffset():x.SideOffset()])
	copy(side.host.bytes(), body[x.SideOffset():])
	dec, err := k.pipeline("xw_decode", x, int(size))
	if err != nil {
		return nil, err
	}
	bd, err := s.bind(b, dec, planes.dev, lows.dev, table.dev, side.dev, out.dev, status.dev)
	if err != nil {
		return nil, err
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	resetStatus(cmd, status.dev)
	for _, i := range []staged{planes, lows, table, side} {
		b.copyUp(cmd, i)
	}
	cmd.Barrier()
	var pw pushWriter
	pw.u32(uint32(C), uint32(x.ChunkLen(C-1)), b2u(checksums), uint32(sideLen), uint32(x.PlaneBytes()/4),
		uint32(x.LowBytes()/4), uint32(layout.Align4(n*size)/4))
	cmd.Dispatch(dec, bd, pw.b, uint32(min(C, uint64(b.groups))), 1, 1)
	cmd.Barrier()
	b.copyDown(cmd, out)
	b.copyDown(cmd, status)
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	copy(dst, out.host.bytes()[:n*size])
	return statusErr(status.host.bytes(), ""), nil
}
