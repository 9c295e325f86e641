package vkcodec

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// Device-resident operations for values of any dtype (ops.go): the exponent-window formats (xw2, xw3, xw4 over
// F8_E5M2, F8_E4M3, F16, F32), whose kernels (xw.go) bind the caller's buffers with word offsets, auto over those
// dtypes (auto.go: exponent-window candidates), and the BF16 formats through PrepareEncodeFormat and
// PrepareDecodeFormat.

// PrepareEncodeTyped records the encode of n values of dt at src (16-byte aligned offset; the range must hold
// align4(n·size) bytes) into a body of format at dst (4-byte aligned; room for the format's largest body), as
// PrepareEncodeFormat does for BF16. cb is ignored by formats without a codebook.
func (b *Backend) PrepareEncodeTyped(ctx context.Context, format uint8, dt layout.DType, src vk.BufferRange, n uint64,
	shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*EncodeOp, error) {
	if _, ok := layout.XWCodeBits(format); ok {
		return b.prepareEncodeXW(ctx, format, dt, src, n, shift, checksums, dst)
	}
	if format == layout.FormatAuto {
		return b.prepareEncodeAuto(ctx, dt, src, n, shift, cb, checksums, dst)
	}
	if jobDType(dt) != layout.DTypeBF16 {
		return nil, noTypedPath(format, dt)
	}
	return b.PrepareEncodeFormat(ctx, format, src, n, shift, cb, checksums, dst)
}

// PrepareDecodeTyped records the decode of a body of format (bodyLen bytes at body, 4-byte aligned) into n values
// of dt at dst (16-byte aligned; room for align4(n·size) bytes), as PrepareDecodeFormat does for BF16. The kernels
// validate the whole body: it is never read by the host.
func (b *Backend) PrepareDecodeTyped(ctx context.Context, format uint8, dt layout.DType, body vk.BufferRange,
	bodyLen, n uint64, shift uint, cb *codec.Codebook, checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	if _, ok := layout.XWCodeBits(format); ok {
		return b.prepareDecodeXW(ctx, format, dt, body, bodyLen, n, shift, checksums, dst)
	}
	if format == layout.FormatAuto {
		return b.prepareDecodeAuto(ctx, dt, body, bodyLen, n, shift, cb, checksums, dst)
	}
	if jobDType(dt) != layout.DTypeBF16 {
		return nil, noTypedPath(format, dt)
	}
	return b.PrepareDecodeFormat(ctx, format, body, bodyLen, n, shift, cb, checksums, dst)
}

// noTypedPath is the error for a format over a dtype other than BF16 without exponent-window kernels (the BF16-only
// formats): unsupported here, whether or not the format codes the dtype at all.
func noTypedPath(format uint8, dt layout.DType) error {
	return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
		Detail: fmt.Sprintf("vulkan backend: no device-resident %s over %v", codec.FormatName(format), dt)}
}

// xwBodyViews binds the streams of an exponent-window body at body (sideLen bytes of side section) and the values
// at vals.
func xwBodyViews(x layout.XW, size uint64, vals, body vk.BufferRange, sideLen uint64) *xwViews {
	return &xwViews{x: x, size: size, sideLen: sideLen,
		vals:   bufView(vals, 0, layout.Align4(x.N*size)),
		planes: bufView(body, 0, x.PlaneBytes()),
		lows:   bufView(body, x.PlaneBytes(), max(x.LowBytes(), 4)),
		table:  bufView(body, x.TableOffset(), layout.ChunkEntrySize*x.Chunks()),
		side:   bufView(body, x.SideOffset(), max(sideLen, 4))}
}

// xwOp checks what a prepared operation needs beyond the geometry: a tensor to code.
func (b *Backend) xwOp(format uint8, dt layout.DType, n uint64, shift uint) (*XWKernels, layout.XW, uint64, error) {
	k := b.xwKernels()
	x, err := k.geometry(format, dt, n, shift)
	if err == nil && n == 0 {
		err = invalid("empty tensor")
	}
	return k, x, uint64(dt.Size()), err
}

func (b *Backend) prepareEncodeXW(ctx context.Context, format uint8, dt layout.DType, src vk.BufferRange, n uint64,
	shift uint, checksums bool, dst vk.BufferRange) (*EncodeOp, error) {
	k, x, size, err := b.xwOp(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	if err := checkEncodeRanges(src, n*size, dst, x.MaxBodySize()); err != nil {
		return nil, err
	}
	return b.newEncodeOp(func(op *EncodeOp) error {
		v := xwBodyViews(x, size, src, dst, x.MaxBodySize()-x.SideOffset())
		if err := k.encodeWords(op.s, v); err != nil {
			return err
		}
		return op.recordPasses(v.work, v.nb(), x.SideOffset(), func() error { return k.recordEncode(op.s, v) },
			op.scanPass(v.work, v.nb()), func() error { return k.recordPlace(op.s, v, checksums) })
	})
}

func (b *Backend) prepareDecodeXW(ctx context.Context, format uint8, dt layout.DType, body vk.BufferRange, bodyLen,
	n uint64, shift uint, checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	k, x, size, err := b.xwOp(format, dt, n, shift)
	if err != nil {
		return nil, err
	}
	if err := checkDecodeInto(body, bodyLen, x.MinBodySize(), x.MaxBodySize(), dst, n*size); err != nil {
		return nil, err
	}
	return b.newDecodeOp(func(op *DecodeOp) error {
		v := xwBodyViews(x, size, dst, body, bodyLen-x.SideOffset())
		var err error
		if v.status, err = op.s.allocOut(b, 32); err != nil {
			return err
		}
		return op.recordDecode(v.status, func() error { return k.recordDecode(op.s, v, checksums) })
	})
}
