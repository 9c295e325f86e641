package spec

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func TestCRC32CCheckValue(t *testing.T) {
	if got := CRC32C([]byte("1234"), []byte("56789")); got != 0xE3069283 {
		t.Fatalf("CRC-32C of 123456789 = %08x", got)
	}
}

// TestDeflateInflates: the canonical stream is ordinary DEFLATE, on text, runs (length 258, overlapping sources),
// noise and the 32 KiB window's edge.
func TestDeflateInflates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 5000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	far := append(append(append([]byte{}, noise[:100]...), make([]byte, 32768-100)...), noise[:100]...)
	for _, in := range [][]byte{nil, []byte("a"), []byte("ab"), []byte("abcabcabcabc"), bytes.Repeat([]byte{7}, 1000),
		[]byte("the quick brown fox jumps over the quick brown dog"), noise, far} {
		out, err := io.ReadAll(flate.NewReader(bytes.NewReader(Deflate(in))))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("%d bytes: inflates to %d bytes, %v", len(in), len(out), err)
		}
	}
	// A run of 259 equal bytes: literal, then one match of 258 (symbol 285) at distance 1, then end of block.
	got := Deflate(bytes.Repeat([]byte{0}, 259))
	var w bitWriter
	w.bits(1, 1)
	w.bits(1, 2)
	w.code(0x30, 8)   // literal 0
	w.code(0xC0+5, 8) // symbol 285
	w.code(0, 5)      // distance code 0: distance 1
	w.code(0, 7)      // end of block
	if want := w.flush(); !bytes.Equal(got, want) {
		t.Fatalf("run of 259: % x, want % x", got, want)
	}
}

func kvValues(r *rand.Rand, n int, far float64) []byte {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		e := 120 + r.IntN(9)
		if r.Float64() < far {
			e = r.IntN(256)
		}
		v := uint16(r.Uint32())&0x807F | uint16(e)<<7
		b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	}
	return b
}

func TestSZ4RoundTripAndClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 1023, 1024, 1025, 5000} {
		for _, far := range []float64{0, 0.01, 0.5} {
			for _, cs := range []bool{false, true} {
				src := kvValues(r, n, far)
				cb := Calibrate(src)
				body, err := SZ4Encode(src, 10, cb, cs)
				if err != nil {
					t.Fatal(err)
				}
				if lo, hi := SZ4BodyBounds(uint64(n), 10); uint64(len(body)) < lo || uint64(len(body)) > hi {
					t.Fatalf("n %d: body %d outside [%d, %d]", n, len(body), lo, hi)
				}
				out, err := SZ4Decode(body, uint64(n), 10, cb, cs)
				if err != nil || !bytes.Equal(out, src) {
					t.Fatalf("n %d far %v: %v", n, far, err)
				}
				// Every single bit flip is rejected when checksums are on.
				if cs && n <= 1025 {
					for bit := 0; bit < 8*len(body); bit += 7 {
						bad := append([]byte{}, body...)
						bad[bit/8] ^= 1 << (bit % 8)
						if _, err := SZ4Decode(bad, uint64(n), 10, cb, true); err == nil {
							t.Fatalf("n %d: flip of bit %d decodes", n, bit)
						}
					}
				}
			}
		}
	}
}

func TestSZ4Canonical(t *testing.T) {
	src := kvValues(rand.New(rand.NewPCG(5, 6)), 2999, 0.01)
	cb := Calibrate(src)
	body, _ := SZ4Encode(src, 10, cb, false)
	g := newSZ4Geom(2999, 10)
	expect := func(b []byte, cls error, chunk int64) {
		t.Helper()
		_, err := SZ4Decode(b, 2999, 10, cb, false)
		if !errors.Is(err, cls) || ChunkOf(err) != chunk {
			t.Fatalf("got %v, want %v at chunk %d", err, cls, chunk)
		}
	}
	bad := append([]byte{}, body...)
	put32(bad[g.table+12*1+8:], 1) // a crc without CHECKSUMS
	expect(bad, ErrNonCanonical, 1)
	bad = append([]byte{}, body...)
	bad[g.Lc+2999] = 1 // low-stream padding
	expect(bad, ErrNonCanonical, 2)
	bad = append([]byte{}, body...)
	bad[1499] |= 0x10 // the code nibble after the last value
	expect(bad, ErrNonCanonical, 2)
	bad = append([]byte{}, body...)
	put32(bad[g.table+12*2:], 3<<24) // kind 3
	expect(bad, ErrCorrupt, 2)
	// Raw chunks that should be coded: encoded with a codebook the values lack, decoded with theirs.
	var other Codebook
	for i := range other {
		other[i] = uint8(i)
	}
	raw, _ := SZ4Encode(src, 10, other, false)
	if _, err := SZ4Decode(raw, 2999, 10, other, false); err != nil {
		t.Fatal(err)
	}
	expect(raw, ErrNonCanonical, 0)
}

func twoTensors(t *testing.T, version int, checksums bool) ([]Record, []byte) {
	r := rand.New(rand.NewPCG(7, 8))
	recs := []Record{
		{Name: "a", DType: DTypeBF16, Shape: []uint64{2, 1000}, Data: kvValues(r, 2000, 0)},
		{Blob: true, Data: []byte("header")},
		{Name: "b", DType: DTypeBF16, Shape: []uint64{2000}, Data: kvValues(r, 2000, 0)},
		{Name: "c", DType: DTypeU8, Shape: []uint64{5}, Data: []byte{1, 2, 3, 4, 5}},
	}
	p, err := EncodeContainer(recs, EncodeOptions{Version: version, Checksums: checksums, Final: true, Shift: 10})
	if err != nil {
		t.Fatal(err)
	}
	return recs, p
}

func TestContainerRoundTrip(t *testing.T) {
	for _, v := range []int{1, 2} {
		for _, cs := range []bool{false, true} {
			recs, p := twoTensors(t, v, cs)
			c, err := DecodeContainer(p)
			if err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			if c.Len != len(p) || c.Version != v || len(c.Records) != len(recs) {
				t.Fatalf("v%d: %+v", v, c)
			}
			var want []byte
			for _, r := range recs {
				want = append(want, r.Data...)
			}
			if out, err := DecodeStream(p); err != nil || !bytes.Equal(out, want) {
				t.Fatalf("v%d: stream: %v", v, err)
			}
		}
	}
}

// TestV2Seals: the v2 seal catches what v1 cannot: two equal-length bodies swapped, and a body moved between
// containers; without checksums seals are zero.
func TestV2Seals(t *testing.T) {
	for _, v := range []int{1, 2} {
		_, p := twoTensors(t, v, true)
		c, err := DecodeContainer(p)
		if err != nil {
			t.Fatal(err)
		}
		a, b := c.Records[0].Body, c.Records[2].Body
		if len(a) != len(b) {
			t.Fatal("test tensors' bodies differ in length")
		}
		offA := bytes.Index(p, a)
		offB := bytes.Index(p, b)
		swapped := append([]byte{}, p...)
		copy(swapped[offA:], b)
		copy(swapped[offB:], a)
		_, err = DecodeContainer(swapped)
		if v == 1 && err != nil {
			t.Fatalf("v1 swap: %v (v1 cannot see it)", err)
		}
		if v == 2 && !errors.Is(err, ErrChecksum) {
			t.Fatalf("v2 swap: %v, want checksum", err)
		}
	}
	// Seal rules: truncated, wrong, non-zero without checksums.
	_, p := twoTensors(t, 2, true)
	if _, err := DecodeContainer(p[:len(p)-2]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut seal: %v", err)
	}
	bad := append([]byte{}, p...)
	bad[len(bad)-1] ^= 1
	if _, err := DecodeContainer(bad); !errors.Is(err, ErrChecksum) {
		t.Fatalf("wrong seal: %v", err)
	}
	_, q := twoTensors(t, 2, false)
	if le32(q[len(q)-4:]) != 0 {
		t.Fatal("seal without checksums is not 0")
	}
	bad = append([]byte{}, q...)
	bad[len(bad)-1] = 1
	if _, err := DecodeContainer(bad); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("seal without checksums: %v", err)
	}
}

func TestStreamRules(t *testing.T) {
	rec := []Record{{Name: "", DType: DTypeBF16, Shape: []uint64{600}, Data: kvValues(rand.New(rand.NewPCG(9, 9)), 600, 0)}}
	frame := func(v int, seq uint64, final bool) []byte {
		p, err := EncodeContainer(rec, EncodeOptions{Version: v, Checksums: true, Final: final, Shift: 10, Sequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cat := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	for _, c := range []struct {
		name string
		p    []byte
		want error
	}{
		{"v2 0 1", cat(frame(2, 0, false), frame(2, 1, true)), nil},
		{"v1 v1", cat(frame(1, 0, false), frame(1, 0, true)), nil},
		{"v2 0 0", cat(frame(2, 0, false), frame(2, 0, true)), ErrCorrupt},
		{"v2 starting at 1", frame(2, 1, true), ErrCorrupt},
		{"v1 then v2", cat(frame(1, 0, false), frame(2, 1, true)), ErrCorrupt},
		{"no final", frame(2, 0, false), ErrTruncated},
		{"after final", cat(frame(2, 0, true), []byte{0}), ErrCorrupt},
	} {
		_, err := DecodeStream(c.p)
		if (c.want == nil) != (err == nil) || c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
