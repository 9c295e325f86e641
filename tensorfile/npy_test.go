package tensorfile

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

func TestNPYValid(t *testing.T) {
	tests := []struct {
		major byte
		dict  string
		data  []byte
		dtype layout.DType
		shape []uint64
	}{
		{1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", seq(24), layout.DTypeF32, []uint64{2, 3}},
		{1, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", seq(6), layout.DTypeF16, []uint64{3}},
		{1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", seq(8), layout.DTypeF64, []uint64{}},
		{2, "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }", nil, layout.DTypeU8, []uint64{0, 4}},
		{3, `{"shape": ( 1 , 2 ) ,"fortran_order":False,"descr":"<i8"}`, seq(16), layout.DTypeI64, []uint64{1, 2}},
		{1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,)}", seq(2), layout.DTypeBool, []uint64{2}},
		{1, "{'descr': 'bfloat16', 'fortran_order': False, 'shape': (2,),\n }", seq(4), layout.DTypeBF16, []uint64{2}},
		{1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", seq(4), layout.DTypeOpaque, []uint64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.dict, func(t *testing.T) {
			in := buildNPY(tc.major, tc.dict, tc.data)
			f, err := Parse(in, OpenOptions{})
			require.NoError(t, err)
			assert.Equal(t, NPY, f.Kind)
			require.Len(t, f.Tensors, 1)
			x := f.Tensors[0]
			assert.Equal(t, tc.dtype, x.DType)
			assert.Equal(t, tc.shape, x.Shape)
			assert.Equal(t, "", x.Name)
			assert.Zero(t, len(f.Prefix)%64)
			checkRebuild(t, f, in, true)
		})
	}
}

func TestNPYForcedDType(t *testing.T) {
	for _, descr := range []string{"<u2", "<i2", "<V2", "|V2", "bfloat16"} {
		in := buildNPY(1, "{'descr': '"+descr+"', 'fortran_order': False, 'shape': (4,), }", seq(8))
		f, err := Parse(in, OpenOptions{DType: layout.DTypeBF16})
		require.NoError(t, err, descr)
		assert.Equal(t, layout.DTypeBF16, f.Tensors[0].DType)
		assert.Equal(t, descr, f.Tensors[0].DTypeName)
	}
	in := buildNPY(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", seq(8))
	_, err := Parse(in, OpenOptions{DType: layout.DTypeBF16})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "4-byte elements")

	f, err := Parse(in, OpenOptions{DType: layout.DTypeF32})
	require.NoError(t, err)
	assert.Equal(t, layout.DTypeF32, f.Tensors[0].DType)

	in = buildNPY(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", seq(4))
	_, err = Parse(in, OpenOptions{DType: layout.DTypeBF16})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "is F16, which cannot be read as BF16")

	_, err = Parse(in, OpenOptions{DType: 200})
	assert.ErrorIs(t, err, ErrUnsupported)
}

func TestNPYInvalid(t *testing.T) {
	dict := func(descr, fortran, shape string) string {
		return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
	}
	good := dict("<u2", "False", "(2,)")
	withLen := func(major byte, n uint32) []byte {
		b := append([]byte("\x93NUMPY"), major, 0)
		if major == 1 {
			return binary.LittleEndian.AppendUint16(b, uint16(n))
		}
		return binary.LittleEndian.AppendUint32(b, n)
	}
	noNewline := buildNPY(1, good, seq(4))
	noNewline[len(noNewline)-5] = ' '
	tests := []struct {
		name  string
		in    []byte
		class error
		msg   string
	}{
		{"magic", []byte("\x93NUMPX\x01\x00"), ErrInvalid, "magic"},
		{"no version", []byte("\x93NUMPY\x01"), ErrInvalid, "version"},
		{"version 4", buildNPY(4, good, seq(4)), ErrUnsupported, "version 4.0"},
		{"minor", append([]byte("\x93NUMPY\x01\x01"), 0, 0), ErrUnsupported, "version 1.1"},
		{"no length", []byte("\x93NUMPY\x02\x00\x00"), ErrInvalid, "header length"},
		{"length beyond", withLen(1, 100), ErrInvalid, "exceeds the 0 bytes"},
		{"length beyond v2", withLen(2, 1<<31), ErrInvalid, "exceeds the 0 bytes"},
		{"empty header", withLen(1, 0), ErrInvalid, "newline"},
		{"no newline", noNewline, ErrInvalid, "newline"},
		{"fortran", buildNPY(1, dict("<u2", "True", "(2,)"), seq(4)), ErrUnsupported, "fortran_order True"},
		{"big endian", buildNPY(1, dict(">f4", "False", "(1,)"), seq(4)), ErrUnsupported, "big-endian"},
		{"unknown descr", buildNPY(1, dict("<c8", "False", "(1,)"), seq(8)), ErrUnsupported, `descr "<c8"`},
		{"void zero", buildNPY(1, dict("|V0", "False", "(1,)"), nil), ErrUnsupported, `descr "|V0"`},
		{"empty descr", buildNPY(1, dict("", "False", "(1,)"), nil), ErrInvalid, "empty descr"},
		{"structured", buildNPY(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", seq(4)), ErrUnsupported, "structured"},
		{"size short", buildNPY(1, dict("<u2", "False", "(3,)"), seq(4)), ErrInvalid, "needs 6 data bytes, the file has 4"},
		{"size long", buildNPY(1, dict("<u2", "False", "(1,)"), seq(4)), ErrInvalid, "needs 2 data bytes"},
		{"huge shape", buildNPY(1, dict("<u2", "False", "(1152921504606846976,)"), seq(4)), ErrInvalid, "needs 2305843009213693952"},
		{"overflow", buildNPY(1, dict("<u2", "False", "(4294967296, 4294967296)"), seq(4)), ErrInvalid, "overflows"},
		{"dim too big", buildNPY(1, dict("<u2", "False", "(18446744073709551616,)"), seq(4)), ErrInvalid, "64 bits"},
		{"not a tuple", buildNPY(1, dict("<u2", "False", "(2)"), seq(4)), ErrInvalid, "trailing comma"},
		{"list shape", buildNPY(1, dict("<u2", "False", "[2]"), seq(4)), ErrInvalid, "tuple"},
		{"negative", buildNPY(1, dict("<u2", "False", "(-2,)"), seq(4)), ErrInvalid, "non-negative"},
		{"leading zero", buildNPY(1, dict("<u2", "False", "(02,)"), seq(4)), ErrInvalid, "leading zero"},
		{"bool int", buildNPY(1, dict("<u2", "0", "(2,)"), seq(4)), ErrInvalid, "True or False"},
		{"bool prefix", buildNPY(1, dict("<u2", "Falsey", "(2,)"), seq(4)), ErrInvalid, "True or False"},
		{"unknown key", buildNPY(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), 'x': 1}", seq(4)), ErrInvalid, `key "x"`},
		{"duplicate key", buildNPY(1, "{'descr': '<u2', 'descr': '<u2', 'fortran_order': False, 'shape': (2,)}", seq(4)), ErrInvalid, "twice"},
		{"missing key", buildNPY(1, "{'descr': '<u2', 'shape': (2,)}", seq(4)), ErrInvalid, `no "fortran_order"`},
		{"escape", buildNPY(1, "{'descr': '<u\\x32', 'fortran_order': False, 'shape': (2,)}", seq(4)), ErrInvalid, "escape"},
		{"unterminated", buildNPY(1, "{'descr: 1}", seq(4)), ErrInvalid, "unterminated"},
		{"no colon", buildNPY(1, "{'descr' '<u2'}", seq(4)), ErrInvalid, "':'"},
		{"no comma", buildNPY(1, "{'descr': '<u2' 'shape': (2,)}", seq(4)), ErrInvalid, "','"},
		{"not a dict", buildNPY(1, "('descr', '<u2')", seq(4)), ErrInvalid, "'{'"},
		{"trailing", buildNPY(1, good+" x", seq(4)), ErrInvalid, "after the header"},
		{"unclosed", buildNPY(1, "{'descr': '<u2'", seq(4)), ErrInvalid, "expected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in, OpenOptions{Kind: NPY})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			assert.ErrorContains(t, err, tc.msg)
			checkClass(t, err)
		})
	}
}

func TestRaw(t *testing.T) {
	in := seq(6)
	f, err := Parse(in, OpenOptions{DType: layout.DTypeBF16})
	require.NoError(t, err)
	assert.Equal(t, Raw, f.Kind)
	require.Len(t, f.Tensors, 1)
	assert.Equal(t, []uint64{3}, f.Tensors[0].Shape)
	assert.Equal(t, layout.DTypeBF16, f.Tensors[0].DType)
	assert.Empty(t, f.Prefix)
	checkRebuild(t, f, in, true)

	_, err = Parse(seq(7), OpenOptions{DType: layout.DTypeBF16})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "not a multiple")

	_, err = Parse(seq(7), OpenOptions{})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "forced dtype")

	f, err = Parse(seq(7), OpenOptions{Kind: Raw})
	require.NoError(t, err)
	assert.Equal(t, layout.DTypeOpaque, f.Tensors[0].DType)
	assert.Equal(t, []uint64{7}, f.Tensors[0].Shape)

	f, err = Parse(nil, OpenOptions{DType: layout.DTypeF32})
	require.NoError(t, err)
	assert.Equal(t, []uint64{0}, f.Tensors[0].Shape)
	checkRebuild(t, f, nil, true)
}
