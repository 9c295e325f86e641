//go:build cgo

package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
)

// The Vulkan half of the CUDA device path, on whatever Vulkan device there is (lavapipe here): the CUDA half is
// one device copy on each side, which needs a GPU (python/tests TestTorch runs it).

func openVulkan(t *testing.T) *vkcodec.Backend {
	t.Helper()
	vb, err := vkcodec.Open(vkcodec.Options{})
	if err != nil {
		t.Skipf("no Vulkan device: %v", err)
	}
	t.Cleanup(func() {
		// With VKZIP_VALIDATE=1 the Khronos validation layers watch every test here: any message fails it.
		if msgs := vb.ValidationMessages(); len(msgs) > 0 {
			t.Errorf("validation: %d messages, first: %s", len(msgs), msgs[0])
		}
		vb.Close()
	})
	return vb
}

func devValues(t *testing.T, d layout.DType, n int, seed uint64) []byte {
	t.Helper()
	v := synth.KVLike(n, seed)
	if d == layout.DTypeBF16 {
		return v
	}
	out, err := synth.ConvertBF16(nil, v, d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// poisoned is a buffer of size bytes, every byte 0xA5.
func poisoned(t *testing.T, dev *vk.Device, size uint64) *vk.Buffer {
	t.Helper()
	b, err := dev.NewBuffer(size, vk.DeviceLocal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := dev.Upload(context.Background(), b, 0, bytes.Repeat([]byte{0xA5}, int(size))); err != nil {
		t.Fatal(err)
	}
	return b
}

// The device histogram a per-encode codebook is calibrated from counts what codec.ExpHistogram counts, odd
// lengths and padding after the values included, with its prepared operations reused across calls and dropped
// with the values buffer they were prepared for.
func TestDeviceExpHistogram(t *testing.T) {
	vb := openVulkan(t)
	dev := vb.VK()
	dc := devCodec{vb: vb}
	defer dc.close()
	vals := synth.Gauss(300001, 3)
	bufs := []*vk.Buffer{poisoned(t, dev, pad256(uint64(len(vals))+512)), poisoned(t, dev, pad256(uint64(len(vals))))}
	for _, buf := range bufs {
		if err := dev.Upload(context.Background(), buf, 0, vals); err != nil {
			t.Fatal(err)
		}
	}
	for _, buf := range bufs {
		for _, n := range []int{1, 2, 255, 4097, 300001, 255} {
			var want codec.ExpHistogram
			want.Add(vals[:2*n])
			got, err := dc.expHist(context.Background(), vk.BufferRange{Buf: buf}, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%d values: the device histogram differs from the host's", n)
			}
		}
	}
	if _, err := dc.expHist(context.Background(), vk.BufferRange{Buf: bufs[0]}, bufs[0].Size()); !errors.Is(err, codec.ErrInvalidInput) {
		t.Errorf("a histogram of more values than the buffer holds: %v, want ErrInvalidInput", err)
	}
}

// The device encode's payload equals the host encoder's for the dtypes and options a serving stack uses, and the
// device decode gives the values back into a poisoned buffer; the prepared operations are reused across calls.
func TestDeviceCodecMatchesHost(t *testing.T) {
	vb := openVulkan(t)
	dev := vb.VK()
	ctx := context.Background()
	cb := synth.KVCodebook()
	cases := []struct {
		name string
		d    layout.DType
		n    int
		dims []uint64
		opts []codec.Option
	}{
		{"bf16", layout.DTypeBF16, 3<<16 + 7, nil, nil},
		{"bf16-shape-codebook", layout.DTypeBF16, 1 << 17, []uint64{4, 2, 1 << 14}, []codec.Option{codec.WithCodebook(cb)}},
		{"bf16-nochecksums", layout.DTypeBF16, 50000, nil, []codec.Option{codec.WithChecksums(false)}},
		{"f16", layout.DTypeF16, 70001, nil, nil},
		{"f8_e4m3", layout.DTypeF8E4M3, 1<<16 + 3, nil, nil},
		{"f8_e5m2", layout.DTypeF8E5M2, 9999, []uint64{9999}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := codec.New(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dc := devCodec{vb: vb}
			defer dc.close()
			// One buffer for values in and out, as the shared buffer of the CUDA path; the third tensor repeats the
			// first, and must reuse its prepared operations.
			buf := poisoned(t, dev, pad256(uint64(tc.n*tc.d.Size())))
			in, out := buf, buf
			ops := 0
			for i, seed := range []uint64{11, 12, 11} {
				if i == 2 {
					ops = len(dc.encs) + len(dc.decs)
				}
				vals := devValues(t, tc.d, tc.n, seed)
				n := uint64(tc.n)
				if err := dev.Upload(ctx, in, 0, vals); err != nil {
					t.Fatal(err)
				}
				p, err := dc.plan(c, tc.d, n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dc.encode(ctx, c, vk.BufferRange{Buf: in}, tc.d, tc.dims, n, p, []byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				want, err := encodeTensor(c, tc.d, vals, tc.dims, []byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("run %d: device payload of %d bytes differs from the host's %d", i, len(got), len(want))
				}
				// The way of a payload in CUDA memory: the body stays on the device, and its header and seal come
				// from the chunk table the encode copied to the host with its own run, without another read.
				p2, bodyLen, op, err := dc.encodeBody(ctx, vk.BufferRange{Buf: in}, vk.BufferRange{Buf: dc.body}, tc.d, n, p)
				if err != nil {
					t.Fatal(err)
				}
				reads := 0
				read := vkRead(ctx, dev, vk.BufferRange{Buf: dc.body}, bodyLen)
				head, seal, err := c.AppendPrecodedHead(nil, codec.PrecodedTensor{DType: tc.d, Shape: tc.dims, N: n,
					Plan: p2, BodyLen: bodyLen}, true, tableRead(op, func(off, k uint64) ([]byte, error) {
					reads++
					return read(off, k)
				}))
				if err != nil {
					t.Fatal(err)
				}
				body := bytes.Repeat([]byte{0xA5}, int(bodyLen))
				if err := dev.Download(ctx, body, dc.body, 0); err != nil {
					t.Fatal(err)
				}
				if got := append(append(head, body...), seal...); !bytes.Equal(got, want[1:]) {
					t.Fatalf("run %d: header, device body and seal (%d bytes) differ from the host's payload", i, len(got))
				}
				if f, _ := codec.LookupFormat(p2.Format); f.Table != nil && reads != 0 {
					t.Errorf("run %d: %d reads of the device body for a seal of %s", i, reads, codec.FormatName(p2.Format))
				}
				payload := got[1:]
				pl, err := dc.parsePayload(payload)
				if err != nil {
					t.Fatal(err)
				}
				if err := dev.Upload(ctx, out, 0, bytes.Repeat([]byte{0xA5}, len(vals))); err != nil {
					t.Fatal(err)
				}
				if err := dc.decode(ctx, pl, payload, vk.BufferRange{Buf: out}); err != nil {
					t.Fatal(err)
				}
				back := make([]byte, len(vals))
				if err := dev.Download(ctx, back, out, 0); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back, vals) {
					t.Fatalf("run %d: device decode differs from the values", i)
				}
			}
			if len(dc.encs) == 0 || len(dc.decs) == 0 || len(dc.encs)+len(dc.decs) != ops {
				t.Errorf("cached operations: %d encodes, %d decodes, %d before a repeated tensor", len(dc.encs),
					len(dc.decs), ops)
			}
		})
	}
}

// Damaged payloads get the host decoder's error class from the device decode; payloads of another shape and
// tensors the device does not code ask for the staged path.
func TestDeviceCodecRefuses(t *testing.T) {
	vb := openVulkan(t)
	dev := vb.VK()
	ctx := context.Background()
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dc := devCodec{vb: vb}
	defer dc.close()
	vals := devValues(t, layout.DTypeBF16, 1<<17, 5)
	payload, err := encodeTensor(c, layout.DTypeBF16, vals, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := codec.ParseHeader(payload)
	if err != nil {
		t.Fatal(err)
	}
	body := ct.Recs[0].BodyOff
	out := poisoned(t, dev, pad256(uint64(len(vals))))
	for _, off := range []uint64{body + 100, body + ct.Recs[0].BodyLen - 9, 3} {
		bad := bytes.Clone(payload)
		bad[off] ^= 0x10
		_, hostErr := c.DecodeAll(bad, nil)
		pl, err := dc.parsePayload(bad)
		if err == nil {
			err = dc.decode(ctx, pl, bad, vk.BufferRange{Buf: out})
		}
		if err == nil || hostErr == nil || statusOf(err) != statusOf(hostErr) {
			t.Errorf("byte %d flipped: device %v, host %v", off, err, hostErr)
		}
	}
	two, err := c.Encode(ctx, nil, []codec.Record{{DType: layout.DTypeBF16, Data: vals}, {DType: layout.DTypeBF16, Data: vals}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.parsePayload(two); !isStaged(err) {
		t.Errorf("two tensors: %v, want the staged path", err)
	}
	if _, err := dc.plan(c, layout.DTypeI32, 100); !isStaged(err) {
		t.Errorf("i32: %v, want the staged path", err)
	}
	auto, err := codec.New(codec.WithFormat("auto"))
	if err != nil {
		t.Fatal(err)
	}
	defer auto.Close()
	if _, err := dc.plan(auto, layout.DTypeBF16, 1000); !isStaged(err) {
		t.Errorf("auto: %v, want the staged path", err)
	}
	var s *stagedReason
	if errors.As(error(&stagedReason{"x"}), &s) && s.Error() != "x" {
		t.Error("stagedReason text")
	}
}
