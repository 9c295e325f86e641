//go:build cgo

package main

import (
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// The Vulkan half of the CUDA device path: a tensor whose values are in a Vulkan buffer is encoded there into a
// payload equal to the host encoder's (codec.PlanTensor picks the body, the device codes it, codec.AppendPrecoded
// wraps it), and a payload is decoded there into a Vulkan buffer. Only the body (the output of an encode, the input
// of a decode), the 256 exponent counts of a calibration and the kernels' size and verdict words cross to the host:
// never a value.

// devCodec runs prepared operations on one Vulkan backend, reusing them for tensors of the same geometry. Not safe
// for concurrent use: its owner (cudaDev) serialises calls.
type devCodec struct {
	vb    *vkcodec.Backend
	body  *vk.Buffer // bodies: the encoder's output, the decoder's input
	encs  map[opKey]*vkcodec.EncodeOp
	decs  map[opKey]*vkcodec.DecodeOp
	hists map[histKey]*vkcodec.ExpHistOp
}

// opKey is what a prepared operation is recorded for: the tensor, and the buffers it is bound to (bodyLen: decodes
// only). An operation bound to a buffer is dropped (flushOps) before that buffer is closed.
type opKey struct {
	tensorKey
	bodyLen uint64
	vals    vk.BufferRange
	body    vk.BufferRange
}

// tensorKey is the coded tensor an operation, or a header length (cudapayload.go), is for.
type tensorKey struct {
	format    uint8
	dtype     layout.DType
	n         uint64
	shift     uint
	cb        codec.Codebook
	checksums bool
}

type histKey struct {
	vals vk.BufferRange
	n    uint64
}

// maxCachedOps bounds the prepared operations kept per direction; past it the cache starts over.
const maxCachedOps = 16

// stagedReason is why a call cannot take the device path: the caller stages it through host memory instead. It is
// not a failure of the call.
type stagedReason struct{ why string }

func (s *stagedReason) Error() string { return s.why }

func staged(format string, args ...any) error { return &stagedReason{fmt.Sprintf(format, args...)} }

// plan is how the codec codes n values of d, when the device can code it: the format has device-resident
// operations, and a codebook the codec does not fix can be calibrated on the device (BF16).
func (dc *devCodec) plan(c *codec.Codec, d layout.DType, n uint64) (codec.TensorPlan, error) {
	p, err := c.PlanTensor(d, n)
	if err != nil {
		return p, staged("the codec's format list codes this tensor on the host only: %v", err)
	}
	if !dc.vb.SupportsResident(p.Format) {
		return p, staged("no device-resident %s on %s", codec.FormatName(p.Format), dc.vb.Device())
	}
	if p.UsesCodebook && p.Codebook == nil && (d != layout.DTypeBF16 || n > vkcodec.MaxExpHistValues) {
		return p, staged("a per-encode codebook for %d values of %s", n, dtypeName(d))
	}
	return p, nil
}

// ensureBody makes the body buffer hold at least n bytes (grow-only).
func (dc *devCodec) ensureBody(n uint64) error {
	if dc.body != nil && dc.body.Size() >= n {
		return nil
	}
	dc.flushOps()
	if dc.body != nil {
		dc.body.Close()
		dc.body = nil
	}
	b, err := dc.vb.VK().NewBuffer(growSize(n), vk.DeviceLocal)
	if err != nil {
		return err
	}
	dc.body = b
	return nil
}

// growSize is the size a grow-only buffer takes for n bytes: the next power of two from 1 MiB, so a loop over
// growing tensors reallocates a few times only, or n in whole MiB where that power would pass devMaxBytes.
func growSize(n uint64) uint64 {
	s := uint64(1 << 20)
	for s < n {
		s <<= 1
	}
	if s > devMaxBytes {
		s = (n + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return s
}

func (dc *devCodec) flushOps() {
	closeAll(dc.encs)
	closeAll(dc.decs)
	closeAll(dc.hists)
}

func closeAll[K comparable, O interface{ Close() }](m map[K]O) {
	for k, op := range m {
		op.Close()
		delete(m, k)
	}
}

// cachedOp returns the operation of *m under k, prepared on first use; past maxCachedOps the cache starts over.
func cachedOp[K comparable, O interface{ Close() }](m *map[K]O, k K, prepare func() (O, error)) (O, error) {
	if op, ok := (*m)[k]; ok {
		return op, nil
	}
	if len(*m) >= maxCachedOps {
		closeAll(*m)
	}
	op, err := prepare()
	if err != nil {
		return op, err
	}
	if *m == nil {
		*m = map[K]O{}
	}
	(*m)[k] = op
	return op, nil
}

// expHist counts the exponents of the n BF16 values at the start of vals on the device (vkcodec.ExpHistOp).
func (dc *devCodec) expHist(ctx context.Context, vals vk.BufferRange, n uint64) (codec.ExpHistogram, error) {
	op, err := cachedOp(&dc.hists, histKey{vals, n}, func() (*vkcodec.ExpHistOp, error) {
		return dc.vb.PrepareExpHist(ctx, vals, n)
	})
	if err != nil {
		return codec.ExpHistogram{}, err
	}
	if err := op.SubmitWith(nil, nil); err != nil {
		return codec.ExpHistogram{}, err
	}
	return op.Finish(ctx)
}

func keyOf(format uint8, d layout.DType, n uint64, shift uint, cb *codec.Codebook, checksums bool) opKey {
	k := opKey{tensorKey: tensorKey{format: format, dtype: d, n: n, shift: shift, checksums: checksums}}
	if cb != nil {
		k.cb = *cb
	}
	return k
}

// encode encodes the n values of d at vals under p (from plan) and appends the payload (one final
// container, the tensor named "" of shape dims, nil: flat) to dst.
func (dc *devCodec) encode(ctx context.Context, c *codec.Codec, vals vk.BufferRange, d layout.DType, dims []uint64,
	n uint64, p codec.TensorPlan, dst []byte) ([]byte, error) {
	if err := dc.ensureBody(p.MaxBody); err != nil {
		return dst, err
	}
	p, bodyLen, _, err := dc.encodeBody(ctx, vals, vk.BufferRange{Buf: dc.body}, d, n, p)
	if err != nil {
		return dst, err
	}
	return c.AppendPrecoded(dst, codec.PrecodedTensor{DType: d, Shape: dims, N: n, Plan: p, BodyLen: bodyLen}, true,
		func(body []byte) error { return dc.vb.VK().Download(ctx, body, dc.body, 0) })
}

// encodeBody codes the n values of d at vals under p into body (room for p.MaxBody bytes): the plan with its
// codebook (calibrated on the device when the codec fixes none), the body's length, and the operation that ran,
// whose copy of the chunk table (EncodeOp.Table) is valid until its next run.
func (dc *devCodec) encodeBody(ctx context.Context, vals, body vk.BufferRange, d layout.DType, n uint64,
	p codec.TensorPlan) (codec.TensorPlan, uint64, *vkcodec.EncodeOp, error) {
	if p.UsesCodebook && p.Codebook == nil {
		h, err := dc.expHist(ctx, vals, n)
		if err != nil {
			return p, 0, nil, err
		}
		cb := codec.CodebookFromHistogram(&h)
		p.Codebook = &cb
	}
	k := keyOf(p.Format, d, n, p.Shift, p.Codebook, p.Checksums)
	k.vals, k.body = vals, body
	op, err := cachedOp(&dc.encs, k, func() (*vkcodec.EncodeOp, error) {
		return dc.vb.PrepareEncode(ctx, vkcodec.EncodeSpec{Format: p.Format, DType: d, N: n, Shift: p.Shift,
			Codebook: p.Codebook, Checksums: p.Checksums, Src: vals, Dst: body, Table: true})
	})
	if err != nil {
		return p, 0, nil, err
	}
	bodyLen, err := op.Run(ctx)
	return p, bodyLen, op, err
}

// devPayload is a payload the device path decodes: one final container holding one coded tensor.
type devPayload struct {
	ct  *codec.Container
	rec *codec.ParsedRecord
	cb  *codec.Codebook
}

// parsePayload reads a payload's header for the device path: damaged headers and a bad seal give their error
// class, payloads of another shape (several containers or records, blobs, stored or host-only formats) a
// stagedReason.
func (dc *devCodec) parsePayload(src []byte) (devPayload, error) {
	ct, err := codec.ParseHeader(src)
	if err != nil {
		return devPayload{}, err
	}
	pl, err := dc.payloadOf(ct, uint64(len(src)))
	if err != nil {
		return pl, err
	}
	return pl, ct.CheckSeal(src, 0)
}

// payloadOf checks that the parsed container ct, of total bytes, is one the device decodes (a stagedReason if
// not); the seal is the caller's to check.
func (dc *devCodec) payloadOf(ct *codec.Container, total uint64) (devPayload, error) {
	if ct.Size != total || ct.Flags&layout.FlagFinal == 0 || len(ct.Recs) != 1 || ct.Recs[0].Blob {
		return devPayload{}, staged("a payload of several containers or records")
	}
	r := &ct.Recs[0]
	if r.Format == layout.FormatStored || !dc.vb.SupportsResident(r.Format) || r.Elements == 0 {
		return devPayload{}, staged("a %s body has no device-resident decode", codec.FormatName(r.Format))
	}
	pl := devPayload{ct: ct, rec: r}
	if r.Codebook != layout.NoCodebook {
		pl.cb = &ct.Codebooks[r.Codebook]
	}
	return pl, nil
}

// decode decodes the payload pl (parsed from src) into vals and waits for the verdict: an invalid body gives the
// reference decoder's error class.
func (dc *devCodec) decode(ctx context.Context, pl devPayload, src []byte, vals vk.BufferRange) error {
	r := pl.rec
	if err := dc.ensureBody(r.BodyLen); err != nil {
		return err
	}
	if err := dc.vb.VK().Upload(ctx, dc.body, 0, src[r.BodyOff:r.BodyOff+r.BodyLen]); err != nil {
		return err
	}
	return dc.decodeBody(ctx, pl, vk.BufferRange{Buf: dc.body}, vals, nil)
}

// decodeBody decodes pl's body, already at the start of body, into vals and waits for the verdict. A non-nil
// during runs on the host while the device decodes; its error, when it has one, is returned instead of the
// decode's verdict, as if it had run first.
func (dc *devCodec) decodeBody(ctx context.Context, pl devPayload, body, vals vk.BufferRange, during func() error) error {
	r := pl.rec
	k := keyOf(r.Format, r.DType, r.Elements, uint(r.Shift), pl.cb, pl.ct.Checksums())
	k.bodyLen, k.vals, k.body = r.BodyLen, vals, body
	op, err := cachedOp(&dc.decs, k, func() (*vkcodec.DecodeOp, error) {
		return dc.vb.PrepareDecode(ctx, vkcodec.DecodeSpec{Format: r.Format, DType: r.DType, N: r.Elements,
			Shift: uint(r.Shift), Codebook: pl.cb, Checksums: pl.ct.Checksums(), Body: body,
			BodyLen: r.BodyLen, Dst: vals})
	})
	if err != nil {
		return err
	}
	if during == nil {
		return op.Run(ctx)
	}
	if err := op.SubmitWith(nil, nil); err != nil {
		return err
	}
	derr := during()
	if err := op.Finish(ctx); derr == nil {
		return err
	}
	return derr
}

func (dc *devCodec) close() {
	dc.flushOps()
	if dc.body != nil {
		dc.body.Close()
		dc.body = nil
	}
}
