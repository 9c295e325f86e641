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
	pushXWEncode = 4 * 8
	pushXWPlace  = 4 * 10
	pushXWDecode = 4 * 12
	pushXWPieces = 4 * 11
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
	return min(uint32(k.b.t.WorkGroup), uint32(1)<<shift/layout.XWGroup)
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

// xwViews is where the kernels of one tensor read and write: the values (the source of an encode, the destination of
// a decode) and the body's four streams (staging regions on the host path, views into a caller's buffers for the
// device-resident operations of ops_xw.go), and the kernels' own words.
type xwViews struct {
	x                               layout.XW
	size                            uint64 // bytes per value
	vals, planes, lows, table, side view
	sideLen                         uint64 // decode: bytes in the side section
	scratch                         loc    // encode: a slot of escape or raw-exponent words per chunk
	work                            staged // encode: sz4_scan's words (block sums, prefixes, side total)
	status                          staged // decode: status words
}

func (v *xwViews) nb() uint64 { return (v.x.Chunks() + 63) / 64 }

// encodeWords allocates an encode's scratch slots and work words from s. Scratch needs no clearing: each chunk
// zeroes the words it ORs escapes into.
func (k *XWKernels) encodeWords(s *session, v *xwViews) error {
	var err error
	if v.scratch, err = s.dev.alloc(max(v.x.Chunks()*v.x.RawSide(v.x.ChunkValues()), 4)); err != nil {
		return err
	}
	v.work, err = s.allocOut(k.b, 4*(2*v.nb()+1))
	return err
}

// dispatch records one of the kernels over a tensor (a workgroup per chunk, grid-stride) with its bindings and
// push words.
func (k *XWKernels) dispatch(s *session, name string, v *xwViews, binds []loc, push ...uint32) error {
	pipe, err := k.pipeline(name, v.x, int(v.size))
	if err != nil {
		return err
	}
	bd, err := s.bind(k.b, pipe, binds...)
	if err != nil {
		return err
	}
	var pw pushWriter
	s.cmd.Dispatch(pipe, bd, pw.u32(push...).b, uint32(min(v.x.Chunks(), uint64(k.b.groups))), 1, 1)
	return nil
}

// recordEncode records pass 1 (xw_encode): dense streams, escapes to scratch, info words and side sizes. work must
// have been zeroed.
func (k *XWKernels) recordEncode(s *session, v *xwViews) error {
	x, C := v.x, v.x.Chunks()
	return k.dispatch(s, "xw_encode", v, []loc{v.vals.l, v.planes.l, v.lows.l, v.table.l, v.scratch, v.work.dev},
		uint32(C), uint32(x.ChunkLen(C-1)), uint32(layout.Align4(x.N*v.size)/4), uint32(x.LowBytes()/4),
		uint32(v.vals.base/4), uint32(v.planes.base/4), uint32(v.lows.base/4), uint32(v.table.base/4))
}

// recordPlace records pass 3 (xw_place), after sz4_scan over work: side pieces, offsets and CRCs.
func (k *XWKernels) recordPlace(s *session, v *xwViews, checksums bool) error {
	x, C := v.x, v.x.Chunks()
	return k.dispatch(s, "xw_place", v, []loc{v.table.l, v.scratch, v.side.l, v.planes.l, v.lows.l, v.work.dev},
		uint32(C), uint32(x.ChunkLen(C-1)), uint32(v.nb()), b2u(checksums), uint32(x.LowBytes()/4),
		uint32(x.PlaneBytes()/4), uint32(v.table.base/4), uint32(v.side.base/4), uint32(v.planes.base/4),
		uint32(v.lows.base/4))
}

// recordDecode records the one-pass decode (xw_decode); verdicts go to status, reset before.
func (k *XWKernels) recordDecode(s *session, v *xwViews, checksums bool) error {
	x, C := v.x, v.x.Chunks()
	return k.dispatch(s, "xw_decode", v, []loc{v.planes.l, v.lows.l, v.table.l, v.side.l, v.vals.l, v.status.dev},
		uint32(C), uint32(x.ChunkLen(C-1)), b2u(checksums), uint32(v.sideLen), uint32(x.PlaneBytes()/4),
		uint32(x.LowBytes()/4), uint32(layout.Align4(x.N*v.size)/4), uint32(v.planes.base/4), uint32(v.lows.base/4),
		uint32(v.table.base/4), uint32(v.side.base/4), uint32(v.vals.base/4))
}

// stagedViews allocates staging regions of the given sizes from s (inputs or outputs of the submission) and returns
// them with the views the kernels bind.
func stagedViews(b *Backend, s *session, in bool, sizes ...uint64) ([]staged, []view, error) {
	st := make([]staged, len(sizes))
	vs := make([]view, len(sizes))
	for i, n := range sizes {
		var err error
		if in {
			st[i], err = s.allocIn(b, n)
		} else {
			st[i], err = s.allocOut(b, n)
		}
		if err != nil {
			return nil, nil, err
		}
		vs[i] = viewOf(st[i].dev)
	}
	return st, vs, nil
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
	sideMax := x.MaxBodySize() - x.SideOffset()
	v := &xwViews{x: x, size: size}
	ins, iv, err := stagedViews(b, s, true, layout.Align4(n*size))
	if err != nil {
		return nil, err
	}
	outs, ov, err := stagedViews(b, s, false, x.PlaneBytes(), max(x.LowBytes(), 4), layout.ChunkEntrySize*C,
		max(sideMax, 4))
	if err != nil {
		return nil, err
	}
	v.vals, v.planes, v.lows, v.table, v.side = iv[0], ov[0], ov[1], ov[2], ov[3]
	if err := k.encodeWords(s, v); err != nil {
		return nil, err
	}
	h := ins[0].host.bytes()
	copy(h, src[:n*size])
	clear(h[n*size:])
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	cmd.FillBuffer(v.work.dev.buf, v.work.dev.off, v.work.dev.size, 0)
	b.copyUp(cmd, ins[0])
	if err := b.recordEncodePasses(s, 1, func(int) error { return k.recordEncode(s, v) },
		b.scanPass(s, func(int) *tensorPlan { return &tensorPlan{work: v.work, nb: v.nb()} }),
		func(int) error { return k.recordPlace(s, v, checksums) }); err != nil {
		return nil, err
	}
	for _, o := range append(outs, v.work) {
		b.copyDown(cmd, o)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	total, err := sideTotal(v.work, v.nb(), sideMax, "vulkan xw encode")
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, x.SideOffset()+total)
	out = append(out, outs[0].host.bytes()[:x.PlaneBytes()]...)
	out = append(out, outs[1].host.bytes()[:x.LowBytes()]...)
	out = append(out, outs[2].host.bytes()[:layout.ChunkEntrySize*C]...)
	out = append(out, outs[3].host.bytes()[:total]...)
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
	v := &xwViews{x: x, size: size, sideLen: uint64(len(body)) - x.SideOffset()}
	ins, iv, err := stagedViews(b, s, true, x.PlaneBytes(), max(x.LowBytes(), 4), layout.ChunkEntrySize*C,
		max(v.sideLen, 4))
	if err != nil {
		return nil, err
	}
	outs, ov, err := stagedViews(b, s, false, layout.Align4(n*size), 32)
	if err != nil {
		return nil, err
	}
	v.planes, v.lows, v.table, v.side, v.vals, v.status = iv[0], iv[1], iv[2], iv[3], ov[0], outs[1]
	copy(ins[0].host.bytes(), body[:x.PlaneBytes()])
	copy(ins[1].host.bytes(), body[x.PlaneBytes():x.TableOffset()])
	copy(ins[2].host.bytes(), body[x.TableOffset():x.SideOffset()])
	copy(ins[3].host.bytes(), body[x.SideOffset():])
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	resetStatus(cmd, v.status.dev)
	for _, i := range ins {
		b.copyUp(cmd, i)
	}
	cmd.Barrier()
	if err := k.recordDecode(s, v, checksums); err != nil {
		return nil, err
	}
	cmd.Barrier()
	for _, o := range outs {
		b.copyDown(cmd, o)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	copy(dst, outs[0].host.bytes()[:n*size])
	return statusErr(v.status.host.bytes(), ""), nil
}
