package vkcodec

import (
	"context"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// refEncodeBF16 is the body the CPU reference codec makes of n BF16 values src in format f, in dst's capacity.
func refEncodeBF16(f uint8, dst, src []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	j := []codec.EncodeJob{{Format: f, Src: src, N: n, Shift: shift, Checksums: checksums, Dst: dst}}
	if err := codec.NewCPUBackend(1).Encode(context.Background(), j); err != nil {
		return nil, err
	}
	return j[0].Out, nil
}

// refDecodeBF16 is the CPU reference codec's verdict on a body of n BF16 values in format f, decoded into dst.
func refDecodeBF16(f uint8, dst, body []byte, n uint64, shift uint, checksums bool) error {
	j := []codec.DecodeJob{{Format: f, Body: body, N: n, Shift: shift, Checksums: checksums, Dst: dst}}
	if err := codec.NewCPUBackend(1).Decode(context.Background(), j); err != nil {
		return err
	}
	return j[0].Err
}

func encodeHuffRef(dst, src []byte, n uint64, shift uint, cs bool) ([]byte, error) {
	return refEncodeBF16(layout.FormatHuff, dst, src, n, shift, cs)
}

func encodeTBE3Ref(dst, src []byte, n uint64, shift uint, cs bool) ([]byte, error) {
	return refEncodeBF16(layout.FormatTBE3, dst, src, n, shift, cs)
}

func decodeHuffRef(dst, body []byte, n uint64, shift uint, cs bool) error {
	return refDecodeBF16(layout.FormatHuff, dst, body, n, shift, cs)
}

func decodeTBE3Ref(dst, body []byte, n uint64, shift uint, cs bool) error {
	return refDecodeBF16(layout.FormatTBE3, dst, body, n, shift, cs)
}

// huffTableOK reports whether a huff body's chunk table and piece headers pass the reference's checks (its
// format's chunk listing checks them first).
func huffTableOK(body []byte, n uint64, shift uint) bool {
	f, _ := codec.LookupFormat(layout.FormatHuff)
	_, err := f.Chunks(body, layout.DTypeBF16, n, shift)
	return err == nil
}

// xwMaxBody is the largest body of n values of dtype dt in exponent-window format f (ok false: f does not code dt).
func xwMaxBody(f uint8, dt layout.DType, n uint64, shift uint) (uint64, bool) {
	x, ok := layout.NewXW(f, dt, n, shift)
	if !ok {
		return 0, false
	}
	return x.MaxBodySize(), true
}
