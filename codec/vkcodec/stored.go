package vkcodec

import (
	"encoding/binary"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
)

// stored on Vulkan: a body is the values' bytes, zero padding to a whole word and a CRC-32C word (0 without
// checksums), so that a tensor no format codes stays on the device too. One pass each way (shaders/stored.comp):
// encode copies the values in and writes the padding and CRC word; decode checks them and copies the values out.
// The body's length is fixed by the values', so an encode reads back nothing it needs: the shape puts the whole
// body before the side section, whose total the zeroed work word leaves at 0.

func init() { register(layout.FormatStored, storedCodec{}) }

type storedCodec struct{}

func storedBytes(t *tensor) (data, body uint64) {
	data = t.valueBytes()
	return data, layout.StoredBody(data)
}

func (storedCodec) check(b *Backend, t *tensor) error {
	if _, body := storedBytes(t); body > b.slabMax {
		return errTooBig(body, b.slabMax)
	}
	return nil
}

func (storedCodec) shape(t *tensor) shape {
	_, body := storedBytes(t)
	return shape{minBody: body, maxBody: body, sideOff: body, workBytes: 4}
}

func (storedCodec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	data, body := storedBytes(t)
	return alignRegion(layout.Align4(data)) + alignRegion(body) + regionAlign
}

func (storedCodec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	data, body := storedBytes(t)
	return storedPass(t, r.valsAt(0, layout.Align4(data)), r.bodyAt(0, body), r.work.dev, 0), nil
}

func (storedCodec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	data, _ := storedBytes(t)
	p := storedPass(t, r.bodyAt(0, t.bodyLen), r.valsAt(0, layout.Align4(data)), r.status, 1)
	p.statusFn = storedStatusErr
	return p, nil
}

// storedPass is the one pass of the stored kernel from src to dst (status: decode's verdict; an encode binds its
// work word there, which the kernel leaves alone).
func storedPass(t *tensor, src, dst view, status loc, decode uint32) *plan {
	data, _ := storedBytes(t)
	pc := shaders.StoredPush{Words: uint32(layout.Align4(data) / 4), Bytes: uint32(data), Checksums: b2u(t.checksums),
		SrcBase: src.words(), DstBase: dst.words()}
	return &plan{passes: []func(*recorder) error{func(rec *recorder) error {
		wg := uint32(rec.b.t.WorkGroup)
		groups := max(rec.b.gridOf((uint64(pc.Words)+uint64(wg)-1)/uint64(wg)), 1)
		return rec.dispatch(keyOf(kStored, wg).with("DECODE", decode), shaders.PushBytes(&pc), groups, src.l, dst.l, status)
	}}}
}

// storedStatusErr maps the stored kernel's verdict to the reference's (codec's checkStored): the CRC first, then
// a CRC word without checksums or padding that is not zero.
func storedStatusErr(st []byte, name string) error {
	switch flags := binary.LittleEndian.Uint32(st); {
	case flags&layout.StatusChecksum != 0:
		return &codec.Error{Class: codec.ErrChecksum, Tensor: name, Chunk: -1, Detail: "stored body CRC-32C mismatch (GPU check)"}
	case flags&layout.StatusNonCanonical != 0:
		return &codec.Error{Class: codec.ErrNonCanonical, Tensor: name, Chunk: -1,
			Detail: "stored body padding or CRC field not zero (GPU check)"}
	}
	return nil
}
