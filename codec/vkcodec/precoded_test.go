package vkcodec_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/synth"
)

// precodedValues is n values of d: KV-like BF16, converted for the other dtypes.
func precodedValues(t *testing.T, d layout.DType, n int) []byte {
	t.Helper()
	v := synth.KVLike(n, 7)
	if d == layout.DTypeBF16 {
		return v
	}
	out, err := synth.ConvertBF16(nil, v, d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bodyVia encodes one tensor's body under plan p on backend b (the job API every backend implements).
func bodyVia(t *testing.T, b codec.Backend, d layout.DType, vals []byte, n uint64, p codec.TensorPlan) []byte {
	t.Helper()
	dst := bytes.Repeat([]byte{0xA5}, int(p.MaxBody)) // poisoned: a body must overwrite what it claims
	jobs := []codec.EncodeJob{{Format: p.Format, DType: d, Src: vals, N: n, Shift: p.Shift, Codebook: p.Codebook,
		Checksums: p.Checksums, Dst: dst}}
	if err := b.Encode(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	return jobs[0].Out
}

// precodedOf plans the tensor, calibrating the codebook from the values when the codec has none, as Encode does.
func precodedOf(t *testing.T, c *codec.Codec, d layout.DType, vals []byte, shape []uint64) (codec.TensorPlan, uint64) {
	t.Helper()
	n := uint64(len(vals) / d.Size())
	p, err := c.PlanTensor(d, n)
	if err != nil {
		t.Fatal(err)
	}
	if p.UsesCodebook && p.Codebook == nil {
		var h codec.ExpHistogram
		h.Add(vals)
		cb := codec.CodebookFromHistogram(&h)
		p.Codebook = &cb
	}
	return p, n
}

func appendPrecoded(c *codec.Codec, d layout.DType, shape []uint64, n uint64, p codec.TensorPlan, body []byte) ([]byte, error) {
	return c.AppendPrecoded([]byte("prefix"), codec.PrecodedTensor{DType: d, Shape: shape, N: n, Plan: p,
		BodyLen: uint64(len(body))}, true, func(dst []byte) error {
		if len(dst) != len(body) {
			return errors.New("fill got a region of the wrong size")
		}
		copy(dst, body)
		return nil
	})
}

// A container around a body encoded by a backend equals the one Encode makes from the same values, for the CPU
// backend and the Vulkan backend (lavapipe here), every option that changes the header, and decodes back.
func TestAppendPrecodedEqualsEncode(t *testing.T) {
	backends := map[string]codec.Backend{"cpu": codec.NewCPUBackend(0)}
	if vb, err := vkcodec.Open(vkcodec.Options{}); err == nil {
		backends["vulkan"] = vb
		defer vb.Close()
	} else {
		t.Logf("no Vulkan device, CPU backend only: %v", err)
	}
	cb := synth.KVCodebook()
	cases := []struct {
		name  string
		d     layout.DType
		n     int
		shape []uint64
		opts  []codec.Option
	}{
		{"bf16-calibrated", layout.DTypeBF16, 3<<16 + 5, nil, nil},
		{"bf16-codebook-shape", layout.DTypeBF16, 1 << 17, []uint64{2, 4, 1 << 14}, []codec.Option{codec.WithCodebook(cb)}},
		{"bf16-nochecksums-chunk", layout.DTypeBF16, 40000, nil, []codec.Option{codec.WithChecksums(false), codec.WithChunkSize(4096)}},
		{"bf16-v1", layout.DTypeBF16, 70000, nil, []codec.Option{codec.WithContainerVersion(1)}},
		{"bf16-tbe3", layout.DTypeBF16, 70000, nil, []codec.Option{codec.WithFormat("tbe3")}},
		{"f16", layout.DTypeF16, 70001, nil, nil},
		{"f8e4m3", layout.DTypeF8E4M3, 1<<16 + 3, []uint64{1<<16 + 3}, nil},
		{"f8e5m2", layout.DTypeF8E5M2, 5000, nil, nil},
		{"f32", layout.DTypeF32, 9000, nil, nil},
	}
	for _, tc := range cases {
		for name, b := range backends {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				c, err := codec.New(tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				vals := precodedValues(t, tc.d, tc.n)
				want, err := c.Encode(context.Background(), []byte("prefix"), []codec.Record{{DType: tc.d, Shape: tc.shape, Data: vals}}, true)
				if err != nil {
					t.Fatal(err)
				}
				p, n := precodedOf(t, c, tc.d, vals, tc.shape)
				if _, ok := b.(codec.FormatSupporter); ok && !codec.SupportsFormat(b, p.Format) {
					t.Skipf("%s does not run %s", name, codec.FormatName(p.Format))
				}
				body := bodyVia(t, b, tc.d, vals, n, p)
				got, err := appendPrecoded(c, tc.d, tc.shape, n, p, body)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("container of %d bytes differs from Encode's %d bytes", len(got), len(want))
				}
				dec, err := c.DecodeAll(got[len("prefix"):], nil)
				if err != nil || !bytes.Equal(dec, vals) {
					t.Fatalf("decode: %v, equal %v", err, bytes.Equal(dec, vals))
				}
			})
		}
	}
}

// PlanTensor refuses what Encode does not code with a format (stored tensors, auto), and AppendPrecoded refuses
// plans and bodies that do not fit the tensor, leaving dst as it was.
func TestAppendPrecodedRefuses(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.PlanTensor(layout.DTypeI32, 100); !errors.Is(err, codec.ErrUnsupported) {
		t.Errorf("i32 (stored): %v, want ErrUnsupported", err)
	}
	if _, err := c.PlanTensor(layout.DTypeBF16, 0); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("0 values: %v, want ErrInvalidInput", err)
	}
	ca, err := codec.New(codec.WithFormat("auto"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.PlanTensor(layout.DTypeBF16, 1000); !errors.Is(err, codec.ErrUnsupported) {
		t.Errorf("auto: %v, want ErrUnsupported", err)
	}
	vals := precodedValues(t, layout.DTypeBF16, 1<<16)
	p, n := precodedOf(t, c, layout.DTypeBF16, vals, nil)
	body := bodyVia(t, codec.NewCPUBackend(1), layout.DTypeBF16, vals, n, p)
	noCB := p
	noCB.Codebook = nil
	noSum := p
	noSum.Checksums = false
	for _, x := range []struct {
		name  string
		p     codec.TensorPlan
		shape []uint64
		body  []byte
		cls   error
	}{
		{"no codebook", noCB, nil, body, codec.ErrInvalidInput},
		{"checksums differ", noSum, nil, body, codec.ErrInvalidInput},
		{"shape", p, []uint64{3, 5}, body, codec.ErrInvalidInput},
		{"body not words", p, nil, body[:len(body)-2], codec.ErrCorrupt},
		{"body too long", p, nil, make([]byte, p.MaxBody+4), codec.ErrCorrupt},
	} {
		got, err := appendPrecoded(c, layout.DTypeBF16, x.shape, n, x.p, x.body)
		if !errors.Is(err, x.cls) {
			t.Errorf("%s: %v, want %v", x.name, err, x.cls)
		}
		if string(got) != "prefix" {
			t.Errorf("%s: dst is %d bytes after a refusal, want the 6 it had", x.name, len(got))
		}
	}
	failed := errors.New("download failed")
	got, err := c.AppendPrecoded([]byte("prefix"), codec.PrecodedTensor{DType: layout.DTypeBF16, N: n, Plan: p,
		BodyLen: uint64(len(body))}, true, func([]byte) error { return failed })
	if !errors.Is(err, failed) || string(got) != "prefix" {
		t.Errorf("fill failing: %v, dst %d bytes; want its error and dst as it was", err, len(got))
	}
}
