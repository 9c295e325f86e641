package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// testSafetensors builds a safetensors file of tensors with the given byte sizes: BF16 (KV-like) for even sizes,
// U8 for odd ones, with one F32 scalar in front.
func testSafetensors(t testing.TB, r *rand.Rand, sizes []int) []byte {
	var hdr strings.Builder
	var data []byte
	hdr.WriteString(`{"__metadata__":{"format":"pt"}`)
	add := func(name, dtype, shape string, b []byte) {
		fmt.Fprintf(&hdr, `,"%s":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, name, dtype, shape, len(data), len(data)+len(b))
		data = append(data, b...)
	}
	add("scalar", "F32", "[]", []byte{0, 0, 0x80, 0x3f})
	for i, n := range sizes {
		if n%2 == 0 {
			add(fmt.Sprintf("t%d", i), "BF16", fmt.Sprintf("[%d]", n/2), kvLike(r, n/2, 0.01))
		} else {
			b := make([]byte, n)
			for k := range b {
				b[k] = byte(r.IntN(7))
			}
			add(fmt.Sprintf("t%d", i), "U8", fmt.Sprintf("[%d]", n), b)
		}
	}
	hdr.WriteString("}")
	h := hdr.String()
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, data...)
}

// onlyReader hides every method but Read, as a pipe would.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func encodeFile(t testing.TB, c *Codec, in []byte, o FileOptions) ([]byte, *FileStats) {
	var out bytes.Buffer
	st, err := c.EncodeFile(context.Background(), &out, onlyReader{bytes.NewReader(in)}, o)
	require.NoError(t, err)
	require.Equal(t, int64(out.Len()), st.OutputBytes)
	require.Equal(t, int64(len(in)), st.InputBytes)
	return out.Bytes(), st
}

// TestEncodeFileRoundTrip: safetensors, npy and raw inputs, framed small enough that tensors are cut into slices
// and packed together, decode byte for byte through DecodeFile and every other stream reader.
func TestEncodeFileRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := newCPU(t)
	st := testSafetensors(t, r, []int{100, 70000, 3, 0, 300000, 64, 65536})
	dict := "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 25000), }"
	dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), 0)
	npy = append(npy, dict...)
	require.Zero(t, len(npy)%64)
	npy = append(npy, kvLike(r, 75000, 0.01)...)
	raw := kvLike(r, 200001, 0.02)
	cases := []struct {
		name string
		in   []byte
		o    FileOptions
	}{
		{"safetensors", st, FileOptions{}},
		{"npy", npy, FileOptions{OpenOptions: tensorfile.OpenOptions{DType: layout.DTypeBF16}, Name: "k.npy"}},
		{"raw", raw, FileOptions{OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw, DType: layout.DTypeBF16}}},
		{"raw-opaque-odd", raw[:77777], FileOptions{OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw}}},
	}
	for _, tc := range cases {
		for _, frame := range []int{0, 1 << 16, 40000, 8} {
			if frame == 8 && len(tc.in) > 100000 {
				continue // one frame per 8 bytes: correct but slow
			}
			t.Run(fmt.Sprintf("%s/%d", tc.name, frame), func(t *testing.T) {
				o := tc.o
				o.FrameSize, o.Verify = frame, true
				payload, fst := encodeFile(t, c, tc.in, o)
				if frame == 0 {
					assert.Equal(t, 1, fst.Frames)
				} else {
					assert.Greater(t, fst.Frames, 1)
				}
				var got bytes.Buffer
				got.WriteString("poison")
				got.Reset()
				dst, err := c.DecodeFile(context.Background(), &got, onlyReader{bytes.NewReader(payload)})
				require.NoError(t, err)
				require.True(t, bytes.Equal(tc.in, got.Bytes()), "DecodeFile output differs")
				assert.Equal(t, fst.Frames, dst.Frames)
				assert.Equal(t, int64(len(payload)), dst.InputBytes)
				all, err := c.DecodeAll(payload, []byte("poison"))
				require.NoError(t, err)
				require.True(t, bytes.Equal(tc.in, all[6:]))
				rd, err := io.ReadAll(c.NewReader(context.Background(), bytes.NewReader(payload)))
				require.NoError(t, err)
				require.True(t, bytes.Equal(tc.in, rd))
			})
		}
	}
}

// TestEncodeFileSingleFrameIsEncode: a file that fits one frame gives exactly the container Encode writes for
// its records (header blob, then each tensor with its shape), so whole-file payloads are unchanged.
func TestEncodeFileSingleFrameIsEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	in := testSafetensors(t, r, []int{1000, 5, 200000, 0})
	c := newCPU(t)
	payload, st := encodeFile(t, c, in, FileOptions{})
	f, err := tensorfile.Parse(in, tensorfile.OpenOptions{})
	require.NoError(t, err)
	recs := []Record{{Blob: true, Data: f.Prefix}}
	for _, tt := range f.Tensors {
		shape := tt.Shape
		if shape == nil {
			shape = []uint64{}
		}
		recs = append(recs, Record{Name: tt.Name, DType: tt.DType, Shape: shape, Data: tt.Data})
	}
	want, err := c.Encode(context.Background(), nil, recs, true)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, payload))
	assert.Equal(t, len(recs), st.Records)
	assert.Equal(t, []FormatCount{{"xw3", 1}, {"splitzip4", 2}, {"stored", 2}}, st.Formats)
	require.NotNil(t, st.Codebook)
	require.Len(t, st.Chunks, 2)
	assert.Equal(t, "xw3", st.Chunks[0].Format)
	assert.Equal(t, ChunkCount{Format: "splitzip4", Chunks: 3, Values: 100500}, ChunkCount{Format: st.Chunks[1].Format,
		Chunks: st.Chunks[1].Chunks, Values: st.Chunks[1].Values})
}

// TestEncodeFileBadInput: inputs that end early, go on after their data, or hold a partial value fail with
// ErrInvalidInput or the tensorfile class, never a payload.
func TestEncodeFileBadInput(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	in := testSafetensors(t, r, []int{1000, 2000})
	c := newCPU(t)
	enc := func(b []byte, o FileOptions) error {
		_, err := c.EncodeFile(context.Background(), io.Discard, onlyReader{bytes.NewReader(b)}, o)
		return err
	}
	assert.ErrorIs(t, enc(in[:len(in)-1], FileOptions{}), ErrInvalidInput)
	assert.ErrorIs(t, enc(append(in[:len(in):len(in)], 0), FileOptions{}), ErrInvalidInput)
	assert.ErrorIs(t, enc(in[:20], FileOptions{}), tensorfile.ErrInvalid)
	rawBF16 := FileOptions{OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw, DType: layout.DTypeBF16}, FrameSize: 64}
	assert.ErrorIs(t, enc(make([]byte, 1001), rawBF16), ErrInvalidInput)
	assert.NoError(t, enc(make([]byte, 1000), rawBF16))
	// A regular file's length is known: one cut short fails in the header check.
	p := filepath.Join(t.TempDir(), "x.safetensors")
	require.NoError(t, os.WriteFile(p, in[:len(in)-2], 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	_, err = c.EncodeFile(context.Background(), io.Discard, f, FileOptions{Name: p})
	assert.ErrorIs(t, err, tensorfile.ErrInvalid)
}

// TestDecodeFileWritesOnlyVerifiedFrames: a payload whose third frame is damaged gives exactly the first two
// frames' output and a checksum error; a payload cut inside a frame gives the frames before it and a truncation.
func TestDecodeFileWritesOnlyVerifiedFrames(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	raw := kvLike(r, 4*65536, 0.01)
	c := newCPU(t)
	const frame = 131072
	payload, st := encodeFile(t, c, raw, FileOptions{OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw,
		DType: layout.DTypeBF16}, FrameSize: frame})
	require.Equal(t, 4, st.Frames)
	// Find the third frame's first body byte.
	off := uint64(0)
	for range 2 {
		ct, err := ParseHeader(payload[off:])
		require.NoError(t, err)
		off += ct.Size
	}
	ct, err := ParseHeader(payload[off:])
	require.NoError(t, err)
	bad := append([]byte(nil), payload...)
	bad[off+ct.Recs[0].BodyOff+100] ^= 4
	var got bytes.Buffer
	_, err = c.DecodeFile(context.Background(), &got, bytes.NewReader(bad))
	assert.ErrorIs(t, err, ErrChecksum)
	assert.True(t, bytes.Equal(raw[:2*frame], got.Bytes()), "got %d bytes", got.Len())

	got.Reset()
	_, err = c.DecodeFile(context.Background(), &got, bytes.NewReader(payload[:off+ct.Size-1]))
	assert.ErrorIs(t, err, ErrTruncated)
	assert.True(t, bytes.Equal(raw[:2*frame], got.Bytes()))
	// Frames swapped: the sequence check.
	_, err = c.DecodeFile(context.Background(), io.Discard, bytes.NewReader(append(append([]byte(nil), payload[off:]...), payload[:off]...)))
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = c.DecodeFile(context.Background(), io.Discard, bytes.NewReader(append(append([]byte(nil), payload...), 0)))
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = c.DecodeFile(context.Background(), io.Discard, bytes.NewReader(nil))
	assert.ErrorIs(t, err, ErrTruncated)
}

// TestDecodeFileClaimedLengths: a directory that claims a body far longer than the input fails as truncated
// without allocating what it claims.
func TestDecodeFileClaimedLengths(t *testing.T) {
	c := newCPU(t)
	dir := []ParsedRecord{{Name: "x", DType: layout.DTypeOpaque, Shape: []uint64{1 << 40}, Elements: 1 << 40,
		Format: layout.FormatStored, Codebook: layout.NoCodebook, BodyLen: layout.StoredBody(1 << 40)}}
	hdr := appendHeader(nil, dirHead{version: layout.Version2}, c.flags(true), nil, dir)
	payload := append(hdr, make([]byte, 1000)...)
	_, err := c.DecodeFile(context.Background(), io.Discard, bytes.NewReader(payload))
	assert.ErrorIs(t, err, ErrTruncated)
	// From a regular file, whose length is known.
	p := filepath.Join(t.TempDir(), "claim.vkz")
	require.NoError(t, os.WriteFile(p, payload, 0o600))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	_, err = c.DecodeFile(context.Background(), io.Discard, f)
	assert.ErrorIs(t, err, ErrTruncated)
}

// TestDecodeFileVersion1: whole-file version 1 payloads decode through DecodeFile, in batches.
func TestDecodeFileVersion1(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	in := testSafetensors(t, r, []int{1000, 5, 200000, 0})
	c := newCPU(t, WithContainerVersion(1))
	payload, _ := encodeFile(t, c, in, FileOptions{FrameSize: 50000})
	var got bytes.Buffer
	_, err := newCPU(t).DecodeFile(context.Background(), &got, bytes.NewReader(payload))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(in, got.Bytes()))
	if !errors.Is(err, nil) {
		t.Fatal(err)
	}
}

// faultyBackend flips one bit of every body its backend encodes: a broken encoder that Verify must catch.
type faultyBackend struct{ Backend }

func (f faultyBackend) Encode(ctx context.Context, jobs []EncodeJob) error {
	if err := f.Backend.Encode(ctx, jobs); err != nil {
		return err
	}
	for i := range jobs {
		if len(jobs[i].Out) > 0 {
			jobs[i].Out[len(jobs[i].Out)/2] ^= 1
		}
	}
	return nil
}

// TestEncodeFileVerify: with Verify, a frame that does not decode to its input fails with ErrVerify before it is
// written; without it the faulty payload goes out (and its decode fails).
func TestEncodeFileVerify(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	in := testSafetensors(t, r, []int{70000, 70000, 70000})
	c, err := New(WithBackend(faultyBackend{NewCPUBackend(0)}))
	require.NoError(t, err)
	defer c.Close()
	var out bytes.Buffer
	_, err = c.EncodeFile(context.Background(), &out, bytes.NewReader(in), FileOptions{FrameSize: 100000, Verify: true})
	assert.ErrorIs(t, err, ErrVerify)
	assert.Zero(t, out.Len(), "a frame that failed verification was written")
	out.Reset()
	_, err = c.EncodeFile(context.Background(), &out, bytes.NewReader(in), FileOptions{FrameSize: 100000})
	require.NoError(t, err)
	_, err = newCPU(t).DecodeFile(context.Background(), io.Discard, bytes.NewReader(out.Bytes()))
	assert.Error(t, err)
}
