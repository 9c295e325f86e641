package vkcodec

import (
	"context"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Device-resident TBE-3 (ops.go): the host path's kernels and passes (tbe3.go) bound to a caller's buffers. The
// plane and SM streams of a segment, the chunk table and the side section are views into the body; the SM stream
// may start at any word there (the kernels then use word access), and the place pass zeroes each coded chunk's
// side piece itself, so nothing of the body is cleared by the host.

// tbe3Views plans TBE-3 over device ranges: n values at vals (the source of an encode, the destination of a decode)
// and a body at body whose side section spans sideLen bytes; work (encode) or status (decode) come from s.
func (b *Backend) tbe3Views(s *session, g layout.TBE3, vals, body vk.BufferRange, sideLen uint64,
	encode bool) (*tbe3Plan, error) {
	p := &tbe3Plan{g: g, wg: b.tbe3WG(g.Shift), nb: (g.Chunks() + 63) / 64}
	sz := layout.SZ4{N: g.N, Shift: g.Shift} // same chunking: its value ranges are TBE-3's
	C := g.Chunks()
	per := b.segChunks(g.Shift)
	for first := uint64(0); first < C; first += per {
		sg := tbe3Seg{first: first, count: min(per, C-first)}
		pl, ph := tbe3PlaneRange(g, sg.first, sg.count)
		sl, sh := tbe3SMRange(g, sg.first, sg.count)
		vl, vh := valueRange(sz, sg.first, sg.count)
		sg.vVals = bufView(vals, 2*vl, layout.Align4(2*(vh-vl)))
		sg.vPlanes = bufView(body, pl, ph-pl)
		sg.vSM = bufView(body, g.PlaneBytes()+sl, sh-sl)
		p.segs = append(p.segs, sg)
	}
	p.vTable = bufView(body, g.TableOffset(), layout.ChunkEntrySize*C)
	p.vSide = bufView(body, g.SideOffset(), max(sideLen, 4))
	var err error
	if encode {
		p.work, err = s.allocOut(b, 4*(2*p.nb+1))
	} else {
		p.status, err = s.allocOut(b, 32)
	}
	return p, err
}

// prepareEncodeTBE3 is PrepareEncodeFormat for TBE-3: the source range holds align4(2n) bytes, the destination
// room for layout.TBE3.MaxBodySize bytes.
func (b *Backend) prepareEncodeTBE3(ctx context.Context, src vk.BufferRange, n uint64, shift uint, checksums bool,
	dst vk.BufferRange) (*EncodeOp, error) {
	if err := b.checkTBE3(layout.FormatTBE3, n, shift); err != nil {
		return nil, err
	}
	g := layout.TBE3{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkEncodeRanges(src, 2*n, dst, g.MaxBodySize()); err != nil {
		return nil, err
	}
	return b.newEncodeOp(func(op *EncodeOp) error {
		p, err := b.tbe3Views(op.s, g, src, dst, g.MaxBodySize()-g.SideOffset(), true)
		if err != nil {
			return err
		}
		job := &codec.EncodeJob{Checksums: checksums}
		return op.recordPasses(p.work, p.nb, g.SideOffset(),
			func() error { return b.recordTBE3Encode(ctx, op.s, job, p) }, op.scanPass(p.work, p.nb),
			func() error { return b.recordTBE3Place(ctx, op.s, job, p) })
	})
}

// prepareDecodeTBE3 is PrepareDecodeFormat for TBE-3: the kernel alone validates the body (chunk table included).
func (b *Backend) prepareDecodeTBE3(ctx context.Context, body vk.BufferRange, bodyLen, n uint64, shift uint,
	checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	if err := b.checkTBE3(layout.FormatTBE3, n, shift); err != nil {
		return nil, err
	}
	g := layout.TBE3{N: n, Shift: shift}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkDecodeRanges(body, bodyLen, g.MinBodySize(), g.MaxBodySize(), dst, n); err != nil {
		return nil, err
	}
	return b.newDecodeOp(func(op *DecodeOp) error {
		sideLen := bodyLen - g.SideOffset()
		p, err := b.tbe3Views(op.s, g, dst, body, sideLen, false)
		if err != nil {
			return err
		}
		job := &codec.DecodeJob{Checksums: checksums}
		return op.recordDecode(p.status, func() error { return b.recordTBE3Decode(ctx, op.s, job, p, uint32(sideLen)) })
	})
}
