package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// kvLike returns n BF16 values (little-endian) with the narrow exponent range of a KV cache: sin-shaped values of
// magnitude around 1, the upper 16 bits of each float32.
func kvLike(n int) []byte {
	b := make([]byte, 2*n)
	for i := range n {
		v := float32(math.Sin(float64(i)*0.37) * (1 + float64(i%7)/8))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(v)>>16))
	}
	return b
}

// EncodeAll and DecodeAll: one tensor of BF16 values in, one container out, and back bit for bit.
func ExampleCodec_EncodeAll() {
	c, err := codec.New(codec.WithBackendName("cpu", ""))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	values := kvLike(1 << 16)
	payload, err := c.EncodeAll(values, nil)
	if err != nil {
		panic(err)
	}
	back, err := c.DecodeAll(payload, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("smaller:", len(payload) < len(values), "bit-exact:", bytes.Equal(back, values))
	// Output: smaller: true bit-exact: true
}

// DecodeAll reports damage as an error of a class, usable with errors.Is: here a flipped bit in a tensor body.
func ExampleCodec_DecodeAll_corrupt() {
	c, err := codec.New(codec.WithBackendName("cpu", ""))
	if err != nil {
		panic(err)
	}
	defer c.Close()

	payload, err := c.EncodeAll(kvLike(1<<16), nil)
	if err != nil {
		panic(err)
	}
	payload[len(payload)/2] ^= 0x10
	_, err = c.DecodeAll(payload, nil)
	fmt.Println(errors.Is(err, codec.ErrChecksum))
	// Output: true
}

// A Writer compresses a stream of any length in frames of bounded size, and a Reader gives it back; both hold one
// frame at a time.
func ExampleCodec_NewWriter() {
	c, err := codec.New(codec.WithBackendName("cpu", ""))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	src := kvLike(3 << 16)
	var wire bytes.Buffer
	w, err := c.NewWriter(ctx, &wire, 1<<16) // frames of 64 KiB of input
	if err != nil {
		panic(err)
	}
	if _, err := io.Copy(w, bytes.NewReader(src)); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	var out bytes.Buffer
	if _, err := io.Copy(&out, c.NewReader(ctx, &wire)); err != nil {
		panic(err)
	}
	fmt.Println("bit-exact:", bytes.Equal(out.Bytes(), src))
	// Output: bit-exact: true
}

// Whole files go through Encode as records (a header blob and named tensors) and come back, record by record,
// through DecodeStream.
func ExampleCodec_Encode() {
	c, err := codec.New(codec.WithBackendName("cpu", ""), codec.WithFormat("tbe3"))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	recs := []codec.Record{
		{Name: "header", Blob: true, Data: []byte(`{"layers":1}`)},
		{Name: "layer0.k", DType: layout.DTypeBF16, Shape: []uint64{256, 64}, Data: kvLike(256 * 64)},
		{Name: "layer0.v", DType: layout.DTypeBF16, Shape: []uint64{256, 64}, Data: kvLike(256 * 64)},
	}
	payload, err := c.Encode(ctx, nil, recs, true)
	if err != nil {
		panic(err)
	}
	err = c.DecodeStream(ctx, payload, func(r *codec.ParsedRecord, data []byte) error {
		if r.Blob {
			fmt.Printf("blob %s\n", data)
			return nil
		}
		f, _ := codec.LookupFormat(r.Format)
		fmt.Printf("%s %v %s, %d bytes\n", r.Name, r.Shape, f.Name, len(data))
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// blob {"layers":1}
	// layer0.k [256 64] tbe3, 32768 bytes
	// layer0.v [256 64] tbe3, 32768 bytes
}

// A backend is linked by importing its package; asking for one that is not linked fails with ErrUnsupported and
// names the import to add (this test binary links only the CPU backend).
func ExampleWithBackendName_notLinked() {
	_, err := codec.New(codec.WithBackendName("vulkan", ""))
	fmt.Println(errors.Is(err, codec.ErrUnsupported))
	fmt.Println(strings.Contains(err.Error(), `import _ "github.com/vkzip/vkzip/codec/vkcodec"`))
	// Output:
	// true
	// true
}
