package vkcodec

import (
	"fmt"

	"github.com/vkzip/vkzip/shaders"
)

// The kernels this backend dispatches. Package shaders declares each kernel's contract once (bindings by name,
// the push-constant block as a Go struct matching the GLSL block member by member, specialization constants by
// name with their IDs); the pipeline cache (pipeline.go) builds pipelines from those declarations and the formats
// fill the push structs by field name and set constants by name.
var (
	kSZ4Encode     = kernel("sz4_encode")
	kSZ4Scan       = kernel("sz4_scan")
	kSZ4Place      = kernel("sz4_place")
	kSZ4Decode     = kernel("sz4_decode")
	kSZ4Pieces     = kernel("sz4_decode_pieces")
	kZF12Encode    = kernel("zf12_encode")
	kZF12Place     = kernel("zf12_place")
	kZF12Decode    = kernel("zf12_decode")
	kZF12Pieces    = kernel("zf12_decode_pieces")
	kTBE3Encode    = kernel("tbe3_encode")
	kTBE3Place     = kernel("tbe3_place")
	kTBE3Decode    = kernel("tbe3_decode")
	kTBE3Pieces    = kernel("tbe3_decode_pieces")
	kXWEncode      = kernel("xw_encode")
	kXWPlace       = kernel("xw_place")
	kXWDecode      = kernel("xw_decode")
	kXWPieces      = kernel("xw_decode_pieces")
	kAutoPick      = kernel("auto_pick")
	kAutoGather    = kernel("auto_gather")
	kCopy          = kernel("copy")
	kStored        = kernel("stored")
	kHuffEncode    = kernel("huff_encode")
	kHuffPlace     = kernel("huff_place")
	kHuffCheck     = kernel("huff_check")
	kHuffDecode    = kernel("huff_decode")
	kHuffDecodeI64 = kernel("huff_decode_i64")
	kExpHist       = kernel("exphist")
)

// kernel is the contract of the named kernel; a missing one is a programming error, caught at start-up.
func kernel(name string) *shaders.Kernel {
	k := shaders.Lookup(name)
	if k == nil {
		panic(fmt.Sprintf("vkcodec: no contract for kernel %s", name))
	}
	return k
}

// hasSpec reports whether kernel k declares the named specialization constant.
func hasSpec(k *shaders.Kernel, name string) bool {
	for _, s := range k.Spec {
		if s.Name == name {
			return true
		}
	}
	return false
}

// specUnrollID is the ID of the chunk kernels' unrolling constant U (the copy kernel's U is another constant).
const specUnrollID = 5
