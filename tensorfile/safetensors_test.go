package tensorfile

import (
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

func TestSafetensorsValid(t *testing.T) {
	in := buildST(t, map[string]string{"model": "m", "note": "x"},
		stTensor{"a.k", "BF16", []uint64{2, 3}, seq(12)},
		stTensor{"b", "F32", []uint64{2}, seq(8)},
		stTensor{"scalar", "I64", nil, seq(8)},
		stTensor{"empty", "F16", []uint64{0, 5}, nil},
		stTensor{"weird", "F4", []uint64{3}, seq(2)}, // unknown dtype: opaque, size not checked
	)
	f, err := Parse(in, OpenOptions{})
	require.NoError(t, err)
	assert.Equal(t, Safetensors, f.Kind)
	assert.Equal(t, map[string]string{"model": "m", "note": "x"}, f.Metadata)
	checkRebuild(t, f, in, true)

	hlen := binary.LittleEndian.Uint64(in)
	assert.Equal(t, int(8+hlen), len(f.Prefix))
	assert.Zero(t, hlen%8)

	names := make([]string, len(f.Tensors))
	for i, x := range f.Tensors {
		names[i] = x.Name
	}
	// "empty" and "weird" both begin at 28; the empty one comes first.
	assert.Equal(t, []string{"a.k", "b", "scalar", "empty", "weird"}, names)

	a, ok := f.Lookup("a.k")
	require.True(t, ok)
	assert.Equal(t, layout.DTypeBF16, a.DType)
	assert.Equal(t, "BF16", a.DTypeName)
	assert.Equal(t, []uint64{2, 3}, a.Shape)
	assert.Equal(t, seq(12), a.Data)

	s, _ := f.Lookup("scalar")
	assert.Equal(t, []uint64{}, s.Shape)
	w, _ := f.Lookup("weird")
	assert.Equal(t, layout.DTypeOpaque, w.DType)
	assert.Equal(t, "F4", w.DTypeName)
	assert.Equal(t, int64(2), w.Size)
	_, ok = f.Lookup("missing")
	assert.False(t, ok)
}

func TestSafetensorsDataOrder(t *testing.T) {
	// Header order differs from data order; tensors come back in data order.
	hdr := `{"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[3],"data_offsets":[2,5]},` +
		`"__metadata__":null}   `
	in := rawST(hdr, seq(5))
	f, err := Parse(in, OpenOptions{})
	require.NoError(t, err)
	require.Len(t, f.Tensors, 2)
	assert.Equal(t, "z", f.Tensors[0].Name)
	assert.Equal(t, "a", f.Tensors[1].Name)
	assert.Nil(t, f.Metadata)
	checkRebuild(t, f, in, true)
}

func TestSafetensorsEmpty(t *testing.T) {
	in := rawST("{}      ", nil)
	f, err := Parse(in, OpenOptions{})
	require.NoError(t, err)
	assert.Empty(t, f.Tensors)
	checkRebuild(t, f, in, true)

	_, err = Parse(rawST("{}", []byte{1}), OpenOptions{})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "cover 0 of the 1 bytes")
}

func TestSafetensorsEscapes(t *testing.T) {
	// A properly paired surrogate and an escaped backslash before 'u' are fine.
	hdr := `{"\ud83d\ude00\\udc00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`
	f, err := Parse(rawST(hdr, []byte{7}), OpenOptions{Kind: Safetensors})
	require.NoError(t, err)
	assert.Equal(t, "\U0001F600\\udc00", f.Tensors[0].Name)
}

func TestSafetensorsInvalid(t *testing.T) {
	u8 := func(name string, b, e int) string {
		return `"` + name + `":{"dtype":"U8","shape":[` + strconv.Itoa(e-b) + `],"data_offsets":[` + strconv.Itoa(b) + `,` + strconv.Itoa(e) + `]}`
	}
	big := rawST("{}"+strings.Repeat(" ", maxHeader-1), nil)
	tests := []struct {
		name  string
		in    []byte
		class error
		msg   string
	}{
		{"short", []byte{2, 0, 0}, ErrInvalid, "too short"},
		{"header too large", big, ErrTooLarge, "exceeds the limit"},
		{"header length 1", rawST("{", nil), ErrInvalid, "too short for a JSON object"},
		{"header beyond file", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), ErrInvalid, "exceeds the 2 bytes"},
		{"leading space", rawST(" {}", nil), ErrInvalid, "start with '{'"},
		{"bad utf8", rawST("{\"\xff\":1}", nil), ErrInvalid, "UTF-8"},
		{"lone high surrogate", rawST(`{"\ud800":{}}`, nil), ErrInvalid, "unpaired surrogate"},
		{"lone low surrogate", rawST(`{"\udc00":{}}`, nil), ErrInvalid, "unpaired surrogate"},
		{"syntax", rawST(`{"a" 1}`, nil), ErrInvalid, "header JSON"},
		{"truncated json", rawST(`{"a":`, nil), ErrInvalid, "ends early"},
		{"trailing data", rawST(`{} x`, nil), ErrInvalid, "after its JSON object"},
		{"trailing object", rawST(`{}{}`, nil), ErrInvalid, "after its JSON object"},
		{"top-level array", rawST(`{]`, nil), ErrInvalid, "header JSON"},
		{"duplicate tensor", rawST("{"+u8("a", 0, 1)+","+u8("a", 1, 2)+"}", seq(2)), ErrInvalid, "duplicate key"},
		{"duplicate metadata", rawST(`{"__metadata__":{},"__metadata__":{}}`, nil), ErrInvalid, "duplicate key"},
		{"duplicate metadata key", rawST(`{"__metadata__":{"k":"1","k":"2"}}`, nil), ErrInvalid, `key "k" twice`},
		{"metadata value", rawST(`{"__metadata__":{"k":1}}`, nil), ErrInvalid, "must be a string"},
		{"metadata array", rawST(`{"__metadata__":["k"]}`, nil), ErrInvalid, "must be an object"},
		{"entry not object", rawST(`{"a":[1]}`, nil), ErrInvalid, "entry must be an object"},
		{"unknown field", rawST(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1}}`, nil), ErrInvalid, `unknown field "x"`},
		{"duplicate field", rawST(`{"a":{"dtype":"U8","dtype":"U8","shape":[0],"data_offsets":[0,0]}}`, nil), ErrInvalid, "appears twice"},
		{"missing dtype", rawST(`{"a":{"shape":[0],"data_offsets":[0,0]}}`, nil), ErrInvalid, `missing field "dtype"`},
		{"missing shape", rawST(`{"a":{"dtype":"U8","data_offsets":[0,0]}}`, nil), ErrInvalid, `missing field "shape"`},
		{"missing offsets", rawST(`{"a":{"dtype":"U8","shape":[0]}}`, nil), ErrInvalid, `missing field "data_offsets"`},
		{"dtype number", rawST(`{"a":{"dtype":1,"shape":[0],"data_offsets":[0,0]}}`, nil), ErrInvalid, "dtype must be a string"},
		{"shape object", rawST(`{"a":{"dtype":"U8","shape":{},"data_offsets":[0,0]}}`, nil), ErrInvalid, "shape must be an array"},
		{"shape negative", rawST(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil), ErrInvalid, "negative"},
		{"shape fraction", rawST(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, seq(1)), ErrInvalid, "not an integer"},
		{"shape exponent", rawST(`{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, seq(1)), ErrInvalid, "not an integer"},
		{"shape string", rawST(`{"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, seq(1)), ErrInvalid, "must be an integer"},
		{"shape huge", rawST(`{"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}}`, seq(1)), ErrInvalid, "64 bits"},
		{"offsets count", rawST(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, seq(1)), ErrInvalid, "2 entries"},
		{"offsets reversed", rawST(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}`, seq(1)), ErrInvalid, "end before"},
		{"offsets beyond", rawST(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, seq(1)), ErrInvalid, "beyond"},
		{"size mismatch", rawST(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,2]}}`, seq(2)), ErrInvalid, "needs 4 bytes"},
		{"shape overflow", rawST(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), ErrInvalid, "overflows"},
		{"bytes overflow", rawST(`{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}`, nil), ErrInvalid, "overflows"},
		{"gap at start", rawST("{"+u8("a", 1, 2)+"}", seq(2)), ErrInvalid, "gap of 1 bytes"},
		{"gap", rawST("{"+u8("a", 0, 1)+","+u8("b", 2, 3)+"}", seq(3)), ErrInvalid, "gap of 1 bytes"},
		{"overlap", rawST("{"+u8("a", 0, 2)+","+u8("b", 1, 3)+"}", seq(3)), ErrInvalid, "overlaps"},
		{"short cover", rawST("{"+u8("a", 0, 2)+"}", seq(3)), ErrInvalid, "cover 2 of the 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in, OpenOptions{Kind: Safetensors})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			assert.ErrorContains(t, err, tc.msg)
			checkClass(t, err)
		})
	}
}

func TestSafetensorsErrorNamesTensor(t *testing.T) {
	_, err := Parse(rawST(`{"layer.0":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}`, seq(4)), OpenOptions{})
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "layer.0", e.Tensor)
	assert.Equal(t, Safetensors, e.Kind)
	assert.Equal(t, `tensorfile: invalid tensor file (safetensors, tensor "layer.0"): shape [3] of BF16 needs 6 bytes, data_offsets [0, 4] hold 4`, err.Error())
}

// A header may claim any number of elements; the parser must reject it from the sizes alone.
func TestSafetensorsHugeClaimAllocatesLittle(t *testing.T) {
	in := rawST(`{"a":{"dtype":"BF16","shape":[1152921504606846976],"data_offsets":[0,4]}}`, seq(4))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse(in, OpenOptions{})
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

func TestCheckSurrogatesEdges(t *testing.T) {
	for _, s := range []string{`\`, `\u`, `\u12`, `\ud800\u`, `\\`, `abc`} {
		// Incomplete escapes are left to the JSON decoder; only the unpaired high surrogate is rejected here.
		err := checkSurrogates([]byte(s))
		if strings.HasPrefix(s, `\ud800`) {
			assert.Error(t, err, s)
		} else {
			assert.NoError(t, err, s)
		}
	}
}
