package vkdevices

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// Resident is a codec.Backend over a Vulkan backend's device-resident operations (PrepareEncode,
// PrepareDecode):
// the path of a serving stack whose tensors already live in device memory. Its decoder never lets the host read
// a body, so the kernel alone must answer for every invalid body, chunk-table errors included (the ordinary
// Decode checks tables on the host first). Buffers sit at offsets that are not binding-aligned, as a caller's may.
type Resident struct {
	B *vkcodec.Backend
}

// Offsets of the data in the buffers: allowed (16-byte values, 4-byte bodies) but not binding-aligned.
const (
	resSrcOff  = 48
	resBodyOff = 20
	resDstOff  = 32
)

func (r *Resident) Name() string   { return "vulkan-resident" }
func (r *Resident) Device() string { return r.B.Device() }

// Close does nothing: the wrapped backend belongs to the caller.
func (r *Resident) Close() error { return nil }

func (r *Resident) buffer(size uint64) (*vk.Buffer, error) {
	return r.B.VK().NewBuffer(size+64, vk.DeviceLocal)
}

// poison fills the bytes around the data in every buffer, so that a kernel which reads padding or leaves bytes
// unwritten is caught (the byte conformance poisons host buffers with).
const poison = 0xA5

// poisonedCopy is a buffer image of size bytes: data at off, poison everywhere else.
func poisonedCopy(data []byte, off, size uint64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = poison
	}
	copy(b[off:], data)
	return b
}

func unsupported(format uint8) error {
	return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf(
		"vulkan-resident: no device-resident path for %s (format %d)", codec.FormatName(format), format)}
}

// residentDType reports whether the device-resident operations take tensors of d in format f: the
// exponent-window formats and auto (whose pieces are then exponent-window bodies) take their FP8, FP16 and FP32
// dtypes; the others BF16 only.
func residentDType(f uint8, d layout.DType) bool {
	switch f {
	case layout.FormatXW2, layout.FormatXW3, layout.FormatXW4, layout.FormatAuto:
		return true
	}
	return d == layout.DTypeOpaque || d == layout.DTypeBF16
}

// HasPath reports whether the backend has device-resident operations for a format.
func (r *Resident) HasPath(format uint8) (bool, string) {
	if r.B.SupportsResident(format) {
		return true, ""
	}
	return false, fmt.Sprintf("no device-resident path for %s (format %d) in this build: its host-path Vulkan "+
		"kernels are checked on the vulkan target", codec.FormatName(format), format)
}

// Encode encodes each job from a device buffer into a device buffer, one prepared operation per job.
func (r *Resident) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	dev := r.B.VK()
	for i := range jobs {
		j := &jobs[i]
		if !r.B.SupportsResident(j.Format) || !residentDType(j.Format, j.DType) {
			return unsupported(j.Format)
		}
		f, _ := codec.LookupFormat(j.Format)
		dt := valueDType(j.DType)
		maxBody := f.MaxBodyOf(j.N, dt, j.Shift)
		vals := j.N * uint64(dt.Size())
		err := func() error {
			in, err := r.buffer(resSrcOff + layout.Align4(vals))
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := r.buffer(resBodyOff + maxBody)
			if err != nil {
				return err
			}
			defer out.Close()
			// Poison around the data: the kernels must neither read the padding after the values nor leave a
			// byte of the body unwritten.
			if err := dev.Upload(ctx, in, 0, poisonedCopy(j.Src[:vals], resSrcOff, in.Size())); err != nil {
				return err
			}
			if err := dev.Upload(ctx, out, 0, poisonedCopy(nil, 0, out.Size())); err != nil {
				return err
			}
			op, err := r.B.PrepareEncode(ctx, vkcodec.EncodeSpec{
				Format: j.Format, DType: dt, Src: vk.BufferRange{Buf: in, Offset: resSrcOff}, N: j.N,
				Shift: j.Shift, Codebook: j.Codebook, Checksums: j.Checksums,
				Dst: vk.BufferRange{Buf: out, Offset: resBodyOff},
			})
			if err != nil {
				return err
			}
			defer op.Close()
			size, err := op.Run(ctx)
			if err != nil {
				return err
			}
			if size > uint64(cap(j.Dst)) {
				return fmt.Errorf("vulkan-resident: body of %d bytes exceeds the destination", size)
			}
			j.Out = j.Dst[:size]
			return dev.Download(ctx, j.Out, out, resBodyOff)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// valueDType is a job's dtype, BF16 for the zero value (as package codec reads it).
func valueDType(d layout.DType) layout.DType {
	if d == layout.DTypeOpaque {
		return layout.DTypeBF16
	}
	return d
}

// verdict reports whether an error is a body's verdict (a class of docs/FORMAT.md §6) rather than a failure of
// the call.
func verdict(err error) bool {
	for _, c := range []error{codec.ErrCorrupt, codec.ErrChecksum, codec.ErrNonCanonical, codec.ErrTruncated} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// Decode decodes each job's body from a device buffer; verdicts come from the kernel's status words.
func (r *Resident) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	dev := r.B.VK()
	for i := range jobs {
		j := &jobs[i]
		j.Err = nil
		if !r.B.SupportsResident(j.Format) || !residentDType(j.Format, j.DType) {
			return unsupported(j.Format)
		}
		dt := valueDType(j.DType)
		err := func() error {
			body, err := r.buffer(resBodyOff + uint64(len(j.Body)))
			if err != nil {
				return err
			}
			defer body.Close()
			out, err := r.buffer(resDstOff + layout.Align4(j.N*uint64(dt.Size())))
			if err != nil {
				return err
			}
			defer out.Close()
			if err := dev.Upload(ctx, body, 0, poisonedCopy(j.Body, resBodyOff, body.Size())); err != nil {
				return err
			}
			op, err := r.B.PrepareDecode(ctx, vkcodec.DecodeSpec{
				Format: j.Format, DType: dt, Body: vk.BufferRange{Buf: body, Offset: resBodyOff},
				BodyLen: uint64(len(j.Body)), N: j.N, Shift: j.Shift, Codebook: j.Codebook, Checksums: j.Checksums,
				Dst: vk.BufferRange{Buf: out, Offset: resDstOff},
			})
			if err != nil {
				return err
			}
			defer op.Close()
			if err := op.Run(ctx); err != nil {
				return err
			}
			return dev.Download(ctx, j.Dst, out, resDstOff)
		}()
		switch {
		case err == nil:
		case verdict(err):
			j.Err = err
		default:
			return err
		}
	}
	return nil
}
