// Package splicetest builds payloads whose every body is valid but stands in the wrong place: a tensor body swapped
// with or copied over another, the metadata of one encoding spliced onto the bodies of another, a body moved
// between the frames of a stream, frames reordered (docs/FORMAT.md §4.4, §8). Version 1 decodes the first three
// kinds to wrong bytes without an error; version 2 must refuse them all. Tests of every backend run Check.
package splicetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// Attack is one spliced payload.
type Attack struct {
	Name    string
	Payload []byte
	// Want is the class a version 2 decoder must give; a version 1 decoder decodes the payload without error.
	Want error
	// Input is what the payload's unspliced original decodes to: a decoder that returns it (a reorder of equal
	// frames) has not been fooled.
	Input []byte
}

// Codebooks are two orderings of the same 16 exponents: data that uses only these exponents codes to bodies of equal
// length under either, with different codes.
var (
	CodebookA = codec.Codebook{126, 127, 125, 128, 124, 123, 122, 129, 121, 120, 119, 118, 117, 116, 115, 130}
	CodebookB = codec.Codebook{130, 115, 116, 117, 118, 119, 120, 121, 129, 122, 123, 124, 128, 125, 127, 126}
)

// values draws n values of dtype d whose exponents lie in the codebooks (BF16) or a narrow window (others).
func values(r *rand.Rand, d layout.DType, n int) []byte {
	b := make([]byte, n*d.Size())
	for i := 0; i < n; i++ {
		switch d {
		case layout.DTypeBF16:
			e := uint16(CodebookA[r.IntN(16)])
			binary.LittleEndian.PutUint16(b[2*i:], uint16(r.Uint32())&0x807F|e<<7)
		case layout.DTypeF16:
			e := uint16(12 + r.IntN(4))
			binary.LittleEndian.PutUint16(b[2*i:], uint16(r.Uint32())&0x83FF|e<<10)
		default:
			b[i] = byte(r.Uint32())
		}
	}
	return b
}

// twin is src with every value's low byte changed but its exponent kept: a different tensor whose body has the
// same length in every format (lengths depend on exponents only).
func twin(src []byte, d layout.DType) []byte {
	out := bytes.Clone(src)
	for i := 0; i < len(out); i += d.Size() {
		out[i] ^= 0x55 // BF16: bit 7 (an exponent bit) is clear in 0x55; F16: mantissa bits
	}
	return out
}

// bodySpan is the byte range of tensor record i's body and, in version 2, its seal.
func bodySpan(ct *codec.Container, i int) (lo, hi int) {
	r := &ct.Recs[i]
	hi = int(r.BodyOff + r.BodyLen)
	if ct.Sealed() {
		hi += layout.SealSize
	}
	return int(r.BodyOff), hi
}

// FormatCase is a format and the dtype its attacks use.
type FormatCase struct {
	Format string
	DType  layout.DType
}

// Formats are the formats the record attacks cover: each BF16 format, an exponent-window format, and stored.
var Formats = []FormatCase{
	{"splitzip4", layout.DTypeBF16}, {"zf12", layout.DTypeBF16}, {"tbe3", layout.DTypeBF16},
	{"huff", layout.DTypeBF16}, {"auto", layout.DTypeBF16}, {"xw3", layout.DTypeF16}, {"stored", layout.DTypeU8},
}

func encoder(version int, opts ...codec.Option) (*codec.Codec, error) {
	return codec.New(append([]codec.Option{codec.WithBackend(codec.NewCPUBackend(1)), codec.WithContainerVersion(version),
		codec.WithChunkSize(1024)}, opts...)...)
}

// RecordAttacks builds the attacks on the records of one container (A) of format fc: bodies of two equal-length
// tensors swapped (alone, and with their seals), and one body (with its seal) copied over the other.
func RecordAttacks(version int, fc FormatCase) ([]Attack, error) {
	opts := []codec.Option{codec.WithCodebook(CodebookA)}
	if fc.Format != "stored" {
		opts = append(opts, codec.WithFormat(fc.Format))
	}
	c, err := encoder(version, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(30, uint64(fc.DType)))
	a := values(r, fc.DType, 3000)
	b := twin(a, fc.DType)
	recs := []codec.Record{{Name: "a", DType: fc.DType, Data: a}, {Blob: true, Data: []byte("between")},
		{Name: "b", DType: fc.DType, Data: b}}
	p, err := c.Encode(context.Background(), nil, recs, true)
	if err != nil {
		return nil, err
	}
	ct, err := codec.ParseHeader(p)
	if err != nil {
		return nil, err
	}
	if want := "stored"; fc.Format == want && ct.Recs[0].Format != layout.FormatStored {
		return nil, fmt.Errorf("%s: tensor coded as format %d", fc.Format, ct.Recs[0].Format)
	}
	if ct.Recs[0].BodyLen != ct.Recs[2].BodyLen {
		return nil, fmt.Errorf("%s: bodies of %d and %d bytes: the twins must have equal bodies", fc.Format,
			ct.Recs[0].BodyLen, ct.Recs[2].BodyLen)
	}
	input := append(append(bytes.Clone(a), "between"...), b...)
	a0, a1 := bodySpan(ct, 0)
	b0, b1 := bodySpan(ct, 2)
	n := int(ct.Recs[0].BodyLen)
	swap := func(width int) []byte {
		q := bytes.Clone(p)
		copy(q[a0:a0+width], p[b0:b0+width])
		copy(q[b0:b0+width], p[a0:a0+width])
		return q
	}
	dup := bytes.Clone(p)
	copy(dup[b0:b1], p[a0:a1])
	out := []Attack{
		{Name: fc.Format + "/swap bodies", Payload: swap(n), Want: codec.ErrChecksum, Input: input},
		{Name: fc.Format + "/duplicate body", Payload: dup, Want: codec.ErrChecksum, Input: input},
	}
	if a1-a0 != n {
		out = append(out, Attack{Name: fc.Format + "/swap bodies with seals", Payload: swap(a1 - a0),
			Want: codec.ErrChecksum, Input: input})
	}
	return out, nil
}

// MetaAttack builds attack B: the metadata block (preamble, meta, padding, metaCRC) of one encoding of two SplitZip-4
// tensors spliced onto the bodies and seals of another encoding of the same tensors with another codebook.
func MetaAttack(version int) (Attack, error) {
	r := rand.New(rand.NewPCG(30, 2))
	a := values(r, layout.DTypeBF16, 3000)
	recs := []codec.Record{{Name: "k", DType: layout.DTypeBF16, Data: a}, {Name: "v", DType: layout.DTypeBF16, Data: twin(a, layout.DTypeBF16)}}
	var enc [2][]byte
	for i, cb := range []codec.Codebook{CodebookA, CodebookB} {
		c, err := encoder(version, codec.WithCodebook(cb))
		if err != nil {
			return Attack{}, err
		}
		enc[i], err = c.Encode(context.Background(), nil, recs, true)
		c.Close()
		if err != nil {
			return Attack{}, err
		}
	}
	ca, err := codec.ParseHeader(enc[0])
	if err != nil {
		return Attack{}, err
	}
	cb, err := codec.ParseHeader(enc[1])
	if err != nil {
		return Attack{}, err
	}
	if ca.Size-ca.MetaLen != cb.Size-cb.MetaLen || ca.Codebooks[0] == cb.Codebooks[0] {
		return Attack{}, fmt.Errorf("the two encodings must differ in codebook only")
	}
	p := append(bytes.Clone(enc[0][:ca.MetaLen]), enc[1][cb.MetaLen:]...)
	return Attack{Name: "metadata of another encoding", Payload: p, Want: codec.ErrChecksum,
		Input: append(bytes.Clone(recs[0].Data), recs[1].Data...)}, nil
}

// StreamAttacks builds the attacks C on a Writer's stream of three frames with equal bodies: frame 1's body and
// seal moved into frame 0, and frames 0 and 1 reordered.
func StreamAttacks(version int) ([]Attack, error) {
	c, err := encoder(version, codec.WithCodebook(CodebookA))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(30, 3))
	f0 := values(r, layout.DTypeBF16, 3000)
	input := append(append(bytes.Clone(f0), twin(f0, layout.DTypeBF16)...), values(r, layout.DTypeBF16, 100)...)
	var out bytes.Buffer
	w, err := c.NewWriter(context.Background(), &out, len(f0))
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(input); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	p := out.Bytes()
	var frames [][]byte
	var cts []*codec.Container
	for q := p; len(q) > 0; {
		ct, err := codec.ParseHeader(q)
		if err != nil {
			return nil, err
		}
		frames, cts, q = append(frames, q[:ct.Size]), append(cts, ct), q[ct.Size:]
	}
	if len(frames) != 3 || cts[0].Recs[0].BodyLen != cts[1].Recs[0].BodyLen {
		return nil, fmt.Errorf("want three frames, the first two with bodies of equal length")
	}
	lo, hi := bodySpan(cts[0], 0)
	lo1, hi1 := bodySpan(cts[1], 0)
	moved := append(append(append(bytes.Clone(frames[0][:lo]), frames[1][lo1:hi1]...), frames[0][hi:]...), p[len(frames[0]):]...)
	reordered := append(append(bytes.Clone(frames[1]), frames[0]...), frames[2]...)
	return []Attack{
		{Name: "stream/body moved between frames", Payload: moved, Want: codec.ErrChecksum, Input: input},
		{Name: "stream/frames reordered", Payload: reordered, Want: codec.ErrCorrupt, Input: input},
	}, nil
}

// All is every attack at a container version.
func All(version int) ([]Attack, error) {
	var out []Attack
	for _, fc := range Formats {
		as, err := RecordAttacks(version, fc)
		if err != nil {
			return nil, err
		}
		out = append(out, as...)
	}
	m, err := MetaAttack(version)
	if err != nil {
		return nil, err
	}
	s, err := StreamAttacks(version)
	if err != nil {
		return nil, err
	}
	return append(append(out, m), s...), nil
}

// Check decodes every attack with dec (a Codec on the backend under test) through DecodeAll, DecodeStream and a
// Reader. At version 2 each must fail with its class; at version 1 each must decode without an error to bytes other
// than the original's, which shows the payload is a real splice (every body valid) that only the seals catch.
// skip tells which formats the backend does not run (their attacks are skipped).
func Check(t *testing.T, dec *codec.Codec, skip func(format string) bool) {
	t.Helper()
	for _, version := range []int{layout.Version1, layout.Version2} {
		attacks, err := All(version)
		if err != nil {
			t.Fatalf("building the attacks: %v", err)
		}
		for _, at := range attacks {
			t.Run(fmt.Sprintf("v%d/%s", version, at.Name), func(t *testing.T) {
				if format, _, ok := cut(at.Name); ok && skip != nil && skip(format) {
					t.Skipf("backend does not run %s", format)
				}
				got, errAll := dec.DecodeAll(at.Payload, nil)
				var streamed []byte
				errStream := dec.DecodeStream(context.Background(), at.Payload, func(_ *codec.ParsedRecord, d []byte) error {
					streamed = append(streamed, d...)
					return nil
				})
				read, errRead := io.ReadAll(dec.NewReader(context.Background(), bytes.NewReader(at.Payload)))
				if version == layout.Version1 {
					for _, e := range []error{errAll, errStream, errRead} {
						if e != nil {
							t.Fatalf("version 1 rejects the splice (%v): it is not a valid-bodies splice", e)
						}
					}
					if bytes.Equal(got, at.Input) {
						t.Fatalf("version 1 decodes the splice to the original bytes: nothing was spliced")
					}
					if !bytes.Equal(got, streamed) || !bytes.Equal(got, read) {
						t.Fatalf("version 1: DecodeAll, DecodeStream and Reader disagree")
					}
					return
				}
				for what, e := range map[string]error{"DecodeAll": errAll, "DecodeStream": errStream, "Reader": errRead} {
					if !errors.Is(e, at.Want) {
						t.Errorf("%s: %v, want %v", what, e, at.Want)
					}
				}
			})
		}
	}
}

// cut splits "format/attack".
func cut(name string) (format, rest string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return name[:i], name[i+1:], true
		}
	}
	return "", name, false
}
