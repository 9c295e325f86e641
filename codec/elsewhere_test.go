package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
)

// reader reads a payload held in p, as a device buffer would be read, and counts the bytes asked for.
type reader struct {
	p     []byte
	read  uint64
	spans []codec.Span // every read, in order
}

func (r *reader) at(off, n uint64) ([]byte, error) {
	if off > uint64(len(r.p)) || n > uint64(len(r.p))-off {
		return nil, errors.New("read past the payload")
	}
	r.read += n
	r.spans = append(r.spans, codec.Span{Off: off, Len: n})
	out := make([]byte, n)
	copy(out, r.p[off:])
	return out, nil
}

// elsewhereCase encodes one tensor on the host and returns the payload and what a device encoder would know of it.
func elsewhereCase(t *testing.T, c *codec.Codec, d layout.DType, n int) ([]byte, *codec.Container, codec.PrecodedTensor) {
	t.Helper()
	vals := synth.KVLike(n, 3)
	if d != layout.DTypeBF16 {
		var err error
		if vals, err = synth.ConvertBF16(nil, vals, d); err != nil {
			t.Fatal(err)
		}
	}
	payload, err := c.Encode(context.Background(), nil, []codec.Record{{DType: d, Data: vals}}, true)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := codec.ParseHeader(payload)
	if err != nil {
		t.Fatal(err)
	}
	r := &ct.Recs[0]
	p, err := c.PlanTensor(d, r.Elements)
	if err != nil {
		t.Fatal(err)
	}
	if p.UsesCodebook && p.Codebook == nil {
		cb := ct.Codebooks[r.Codebook]
		p.Codebook = &cb
	}
	return payload, ct, codec.PrecodedTensor{DType: d, N: r.Elements, Plan: p, BodyLen: r.BodyLen}
}

// The header and seal built without the body in hand, reading only through ReadAt, equal Encode's container; for
// the formats with a chunk table only the table is read.
func TestAppendPrecodedHead(t *testing.T) {
	cases := []struct {
		name  string
		d     layout.DType
		n     int
		opts  []codec.Option
		table bool
	}{
		{"splitzip4", layout.DTypeBF16, 3<<16 + 5, nil, true},
		{"splitzip4-codebook", layout.DTypeBF16, 1 << 17, []codec.Option{codec.WithCodebook(synth.KVCodebook())}, true},
		{"tbe3", layout.DTypeBF16, 70000, []codec.Option{codec.WithFormat("tbe3")}, true},
		{"huff", layout.DTypeBF16, 70000, []codec.Option{codec.WithFormat("huff")}, true},
		{"zf12", layout.DTypeBF16, 70000, []codec.Option{codec.WithFormat("zf12")}, true},
		{"xw3-f16", layout.DTypeF16, 70001, nil, true},
		{"no-checksums", layout.DTypeBF16, 40000, []codec.Option{codec.WithChecksums(false)}, false},
		{"version1", layout.DTypeBF16, 40000, []codec.Option{codec.WithContainerVersion(1)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := codec.New(append([]codec.Option{codec.WithBackend(codec.NewCPUBackend(0))}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			payload, ct, pt := elsewhereCase(t, c, tc.d, tc.n)
			r := &ct.Recs[0]
			body := &reader{p: payload[r.BodyOff : r.BodyOff+r.BodyLen]}
			head, seal, err := c.AppendPrecodedHead([]byte("x"), pt, true, body.at)
			if err != nil {
				t.Fatal(err)
			}
			got := append(append(head[1:], payload[r.BodyOff:r.SealOff()]...), seal...)
			if !bytes.Equal(got, payload) {
				t.Fatalf("header + body + seal (%d bytes) differ from Encode's %d bytes", len(got), len(payload))
			}
			if tc.table && body.read >= r.BodyLen/8 {
				t.Fatalf("read %d bytes of a %d-byte body for its checksum words", body.read, r.BodyLen)
			}
			if !tc.table && body.read != 0 {
				t.Fatalf("read %d bytes of a body without checksum words", body.read)
			}
			// The decoder's side: header from its prefix, seal through ReadAt.
			hl, err := codec.HeadLen(payload[:layout.PreambleSize])
			if err != nil || hl != r.BodyOff {
				t.Fatalf("HeadLen %d, %v; the body starts at %d", hl, err, r.BodyOff)
			}
			pc, err := codec.ParseHead(payload[:hl], uint64(len(payload)))
			if err != nil {
				t.Fatal(err)
			}
			all := &reader{p: payload}
			if err := pc.CheckSealAt(0, all.at); err != nil {
				t.Fatal(err)
			}
			// SealSpans names exactly what CheckSealAt read.
			spans, ok := pc.SealSpans(0)
			if !ok || len(spans) != len(all.spans) {
				t.Fatalf("SealSpans %v (ok %v); CheckSealAt read %v", spans, ok, all.spans)
			}
			for i := range spans {
				if spans[i] != all.spans[i] {
					t.Fatalf("SealSpans %v; CheckSealAt read %v", spans, all.spans)
				}
			}
			if _, ok := pc.SealSpans(1); ok {
				t.Fatal("SealSpans of a record the container does not hold")
			}
			at, err := codec.ParseHeadAt((&reader{p: append([]byte("xy"), payload...)}).at, 2, uint64(len(payload))+2)
			if err != nil || at.MetaCRC != pc.MetaCRC || at.Recs[0].BodyOff != r.BodyOff {
				t.Fatalf("ParseHeadAt at offset 2: %v", err)
			}
			if _, err := codec.ParseHead(payload[:hl], uint64(len(payload))-1); !errors.Is(err, codec.ErrTruncated) && ct.Sealed() {
				t.Fatalf("a payload one byte short: %v, want truncated", err)
			}
		})
	}
}

// A body whose checksum words or seal changed fails CheckSealAt with ErrChecksum, and a damaged preamble gives its
// class from HeadLen.
func TestCheckSealAtDetects(t *testing.T) {
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)), codec.WithFormat("tbe3"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload, ct, _ := elsewhereCase(t, c, layout.DTypeBF16, 3<<16)
	r := &ct.Recs[0]
	off, entries, _ := mustFormat(t, r.Format).Table(r.DType, r.Elements, uint(r.Shift))
	crcWord := r.BodyOff + off + (entries-1)*layout.ChunkEntrySize + 4*layout.EntryCRC
	for name, at := range map[string]uint64{"crc word": crcWord, "seal": r.SealOff()} {
		bad := bytes.Clone(payload)
		bad[at] ^= 0x10
		hl, _ := codec.HeadLen(bad)
		pc, err := codec.ParseHead(bad[:hl], uint64(len(bad)))
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.CheckSealAt(0, (&reader{p: bad}).at); !errors.Is(err, codec.ErrChecksum) {
			t.Fatalf("%s changed: %v, want checksum", name, err)
		}
	}
	if _, err := codec.HeadLen(payload[:10]); !errors.Is(err, codec.ErrTruncated) {
		t.Fatalf("10 bytes: %v, want truncated", err)
	}
	bad := bytes.Clone(payload[:layout.PreambleSize])
	binary.LittleEndian.PutUint32(bad, 0)
	if _, err := codec.HeadLen(bad); !errors.Is(err, codec.ErrFormat) {
		t.Fatalf("bad magic: %v, want format", err)
	}
	failing := func(off, n uint64) ([]byte, error) { return nil, errors.New("device read failed") }
	hl, _ := codec.HeadLen(payload)
	pc, _ := codec.ParseHead(payload[:hl], uint64(len(payload)))
	if err := pc.CheckSealAt(0, failing); err == nil || err.Error() != "device read failed" {
		t.Fatalf("a failing read: %v", err)
	}
}

func mustFormat(t *testing.T, id uint8) *codec.Format {
	t.Helper()
	f, ok := codec.LookupFormat(id)
	if !ok || f.Table == nil {
		t.Fatalf("format %d has no table", id)
	}
	return f
}
