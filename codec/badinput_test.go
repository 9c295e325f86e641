package codec

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// craft builds a version 1 container (no seals) whose metadata says whatever the test wants (valid framing and CRC), followed by body.
func craft(cbs []Codebook, recs []ParsedRecord, body []byte) []byte {
	b := appendHeader(nil, dirHead{version: layout.Version1}, layout.FlagChecksums|layout.FlagFinal, cbs, recs)
	return append(b, body...)
}

// TestBadInputClasses checks the error class of hand-made hostile containers, and that none of them makes the
// decoder allocate anything near what they claim.
func TestBadInputClasses(t *testing.T) {
	cb := goldenCodebook
	dup := cb
	dup[3] = dup[4]
	huge := uint64(1) << 60
	cases := []struct {
		name string
		in   []byte
		cls  error
	}{
		{"empty", nil, ErrTruncated},
		{"not vkzip", []byte("PK\x03\x04 this is a zip file, not a payload"), ErrFormat},
		{"2^60 elements", craft([]Codebook{cb}, []ParsedRecord{{Name: "x", DType: layout.DTypeBF16, Format: layout.FormatSplitZip4,
			Shift: 16, Codebook: 0, Shape: []uint64{huge}, Elements: huge, BodyLen: 1 << 62}}, nil), ErrTooLarge},
		{"2^31 values claimed, tiny body", craft([]Codebook{cb}, []ParsedRecord{{Name: "x", DType: layout.DTypeBF16,
			Format: layout.FormatSplitZip4, Shift: 16, Codebook: 0, Shape: []uint64{1 << 31}, Elements: 1 << 31,
			BodyLen: layout.SZ4{N: 1 << 31, Shift: 16}.MinBodySize()}}, make([]byte, 64)), ErrTruncated},
		{"duplicate codebook entries", craft([]Codebook{dup}, []ParsedRecord{{Name: "x", DType: layout.DTypeBF16,
			Format: layout.FormatSplitZip4, Shift: 10, Codebook: 0, Shape: []uint64{4}, Elements: 4, BodyLen: 24}},
			make([]byte, 24)), ErrCorrupt},
		{"shape disagrees with element count", craft(nil, []ParsedRecord{{Name: "x", DType: layout.DTypeF32, Format: layout.FormatStored,
			Codebook: layout.NoCodebook, Shape: []uint64{3}, Elements: 4, BodyLen: 20}}, make([]byte, 20)), ErrCorrupt},
		{"unknown format", craft(nil, []ParsedRecord{{Name: "x", DType: layout.DTypeBF16, Format: 77,
			Codebook: layout.NoCodebook, Shape: []uint64{2}, Elements: 2, BodyLen: 8}}, make([]byte, 8)), ErrUnsupported},
		{"codebook never referenced", craft([]Codebook{cb}, []ParsedRecord{{Blob: true, Data: []byte("hi")}}, nil), ErrNonCanonical},
	}
	c := newCPU(t)
	for _, tc := range cases {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.DecodeAll(tc.in, nil)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		require.Error(t, err, tc.name)
		require.True(t, errors.Is(err, tc.cls), "%s: got %v, want %v", tc.name, err, tc.cls)
		var e *Error
		require.True(t, errors.As(err, &e), "%s: untyped %v", tc.name, err)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "%s: allocated %d bytes", tc.name,
			after.TotalAlloc-before.TotalAlloc)
	}
}
