package vkcodec

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// gpuFormat is how the Vulkan backend runs one body format: every format the CPU backend codes needs an entry
// here too (no format is CPU-only), each with its own kernels.
type gpuFormat struct {
	encode func(b *Backend, ctx context.Context, jobs []codec.EncodeJob) error
	decode func(b *Backend, ctx context.Context, jobs []codec.DecodeJob) error
}

// gpuFormats is filled by the formats' files in init functions.
var gpuFormats = map[uint8]gpuFormat{}

func init() {
	gpuFormats[layout.FormatSplitZip4] = gpuFormat{encode: (*Backend).encodeSZ4, decode: (*Backend).decodeSZ4}
	gpuFormats[layout.FormatTBE3] = gpuFormat{encode: (*Backend).EncodeTBE3, decode: (*Backend).DecodeTBE3}
	gpuFormats[layout.FormatHuff] = gpuFormat{encode: (*Backend).encodeHuff, decode: (*Backend).decodeHuff}
	for _, id := range []uint8{layout.FormatXW2, layout.FormatXW3, layout.FormatXW4} {
		gpuFormats[id] = gpuFormat{encode: (*Backend).encodeXW, decode: (*Backend).decodeXW}
	}
}

// xwKernels is the backend's exponent-window kernel set, made on first use and closed with the backend.
func (b *Backend) xwKernels() *XWKernels {
	b.xwOnce.Do(func() { b.xw = NewXWKernels(b) })
	return b.xw
}

// encodeXW encodes exponent-window bodies, one queue submission per tensor, into the jobs' Dst buffers.
func (b *Backend) encodeXW(ctx context.Context, jobs []codec.EncodeJob) error {
	k := b.xwKernels()
	for i := range jobs {
		j := &jobs[i]
		maxBody, err := codec.XWMaxBodySize(j.Format, j.DType, j.N, j.Shift)
		if err != nil {
			return err
		}
		if uint64(cap(j.Dst)) < maxBody {
			return invalid("destination capacity %d below the %d-byte worst case", cap(j.Dst), maxBody)
		}
		body, err := k.Encode(ctx, j.Format, j.DType, j.Src, j.N, j.Shift, j.Checksums)
		if err != nil {
			return err
		}
		j.Out = j.Dst[:copy(j.Dst[:len(body)], body)]
	}
	return nil
}

// decodeXW decodes exponent-window bodies, one queue submission per tensor; invalid bodies get the reference's
// error class in their job's Err.
func (b *Backend) decodeXW(ctx context.Context, jobs []codec.DecodeJob) error {
	k := b.xwKernels()
	for i := range jobs {
		j := &jobs[i]
		bodyErr, err := k.Decode(ctx, j.Format, j.DType, j.Body, j.N, j.Shift, j.Checksums, j.Dst)
		if err != nil {
			return err
		}
		if bodyErr != nil {
			j.Err = tensorErr(bodyErr, j.Name)
		}
	}
	return nil
}

func unsupportedFormat(id uint8) error {
	return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf("vulkan backend: format %d", id)}
}

// SupportsFormat reports whether the backend has kernels for format id.
func (b *Backend) SupportsFormat(id uint8) bool {
	_, ok := gpuFormats[id]
	return ok
}

// Encode encodes bodies from host memory: one queue submission per format present in jobs (and per memory budget).
func (b *Backend) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	return codec.EncodeByFormat(jobs, func(id uint8, jobs []codec.EncodeJob) error {
		f, ok := gpuFormats[id]
		if !ok {
			return unsupportedFormat(id)
		}
		return f.encode(b, ctx, jobs)
	})
}

// Decode decodes bodies into host memory; invalid bodies get the reference's error class in their job's Err.
func (b *Backend) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		jobs[i].Err = nil
	}
	return codec.DecodeByFormat(jobs, func(id uint8, jobs []codec.DecodeJob) error {
		f, ok := gpuFormats[id]
		if !ok {
			return unsupportedFormat(id)
		}
		return f.decode(b, ctx, jobs)
	})
}

// Formats lists the format ids this build has Vulkan kernels for.
func Formats() []uint8 {
	var out []uint8
	for _, f := range codec.Formats() {
		if _, ok := gpuFormats[f.ID]; ok || f.ID == layout.FormatStored {
			out = append(out, f.ID)
		}
	}
	return out
}
