package tensorfile

import (
	"bytes"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

func FuzzParseSafetensors(f *testing.F) {
	f.Add(buildST(f, map[string]string{"model": "m"},
		stTensor{"k", "BF16", []uint64{2, 2}, seq(8)},
		stTensor{"v", "F32", []uint64{1}, seq(4)},
		stTensor{"e", "I8", []uint64{0}, nil},
		stTensor{"o", "F8_E8M0", []uint64{3}, seq(3)},
	))
	f.Add(buildST(f, nil))
	f.Add(rawST(`{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]},"__metadata__":null}`, seq(1)))
	f.Add(rawST(`{"\ud83d\ude00":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, seq(1)))
	f.Add(rawST(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,1]}}`, seq(1)))
	f.Add(rawST(`{"a":{"dtype":"BF16","shape":[1152921504606846976],"data_offsets":[0,2]}}`, seq(2)))
	f.Add(rawST(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}}`, seq(1)))
	f.Add([]byte{})
	// Bare headers, which the target frames: they let the fuzzer edit the JSON without breaking its length.
	f.Add([]byte(`{"a":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}` + "\x01\x02\x03\x04"))
	f.Add([]byte(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}, "b":{"dtype":"X","shape":[],"data_offsets":[4,4]}}  ` + "abcd"))

	f.Fuzz(func(t *testing.T, data []byte) {
		checkSafetensors(t, data)
		if len(data) > 0 && data[0] == '{' {
			// Frame a bare header: everything up to the last '}' is the JSON, the rest the data section.
			if i := bytes.LastIndexByte(data, '}'); i >= 0 {
				checkSafetensors(t, rawST(string(data[:i+1]), data[i+1:]))
			}
		}
	})
}

// checkSafetensors parses data as safetensors and by detection, and checks what it gets.
func checkSafetensors(t *testing.T, data []byte) {
	file, err := Parse(data, OpenOptions{Kind: Safetensors})
	if err != nil {
		checkClass(t, err)
	} else {
		checkRebuild(t, file, data, true)
		for _, x := range file.Tensors {
			if x.DType == layout.DTypeOpaque {
				continue
			}
			if n, ok := byteSize(x.Shape, uint64(x.DType.Size())); !ok || n != uint64(x.Size) {
				t.Fatalf("tensor %q: shape %v of %s does not give its size %d", x.Name, x.Shape, x.DType, x.Size)
			}
		}
	}
	// Detection must not panic either, whatever it decides the input is.
	for _, opts := range []OpenOptions{{}, {DType: layout.DTypeBF16}} {
		if file, err := Parse(data, opts); err != nil {
			checkClass(t, err)
		} else {
			checkRebuild(t, file, data, true)
		}
	}
}

func FuzzParseNPY(f *testing.F) {
	f.Add(buildNPY(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }", seq(8)), false)
	f.Add(buildNPY(2, "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", seq(6)), true)
	f.Add(buildNPY(3, `{"descr": "bfloat16", "fortran_order": False, "shape": ()}`, seq(2)), false)
	f.Add(buildNPY(1, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", seq(4)), true)
	f.Add(buildNPY(1, "{'descr': '>f4', 'fortran_order': True, 'shape': (1,), }", seq(4)), false)
	f.Add(buildNPY(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1152921504606846976,), }", seq(4)), true)
	f.Add([]byte("\x93NUMPY\x01\x00\xff\xff"), false)
	// Bare header dicts, which the target frames: they let the fuzzer edit the dict without breaking its length.
	f.Add([]byte("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 1), }\nabcd"), true)
	f.Add([]byte(`{"shape":(),"descr":"|V2","fortran_order":True}`+"\nab"), false)
	f.Add([]byte("{'descr': '<i8', 'fortran_order': False, 'shape': (0,), }\n"), false)

	f.Fuzz(func(t *testing.T, data []byte, bf16 bool) {
		checkNPY(t, data, bf16)
		if len(data) > 0 && data[0] == '{' {
			// Frame a bare header: the dict up to the first newline, then the data.
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				major := byte(1)
				if bf16 {
					major = 3
				}
				checkNPY(t, buildNPY(major, string(data[:i]), data[i+1:]), bf16)
			}
		}
	})
}

// checkNPY parses data as npy, forcing BF16 if asked, and checks what it gets.
func checkNPY(t *testing.T, data []byte, bf16 bool) {
	opts := OpenOptions{Kind: NPY}
	if bf16 {
		opts.DType = layout.DTypeBF16
	}
	file, err := Parse(data, opts)
	if err != nil {
		checkClass(t, err)
		return
	}
	checkRebuild(t, file, data, true)
	if len(file.Tensors) != 1 {
		t.Fatalf("%d tensors", len(file.Tensors))
	}
	x := file.Tensors[0]
	if bf16 && x.DType != layout.DTypeBF16 {
		t.Fatalf("forced BF16, got %s", x.DType)
	}
	if x.DType != layout.DTypeOpaque {
		if n, ok := byteSize(x.Shape, uint64(x.DType.Size())); !ok || n != uint64(x.Size) {
			t.Fatalf("shape %v of %s does not give the size %d", x.Shape, x.DType, x.Size)
		}
	}
}
