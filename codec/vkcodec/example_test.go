package vkcodec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec" // links the "vulkan" backend
	"github.com/vkzip/vkzip/vk"
)

// The Vulkan backend through the codec API: the blank import links it, WithBackendName picks it. Its payloads are
// byte-identical to the CPU backend's, so a program may fall back to the CPU where no Vulkan device exists and
// still read and write the same bytes.
func Example() {
	values := make([]byte, 2<<16) // 2^16 BF16 values of a KV-like spread
	for i := range 1 << 16 {
		v := float32(math.Sin(float64(i)*0.37) * (1 + float64(i%7)/8))
		binary.LittleEndian.PutUint16(values[2*i:], uint16(math.Float32bits(v)>>16))
	}

	gpu, err := codec.New(codec.WithBackendName("vulkan", ""), codec.WithFormat("splitzip4"))
	if errors.Is(err, codec.ErrNoDevice) {
		gpu, err = codec.New(codec.WithBackendName("cpu", ""), codec.WithFormat("splitzip4"))
	}
	if err != nil {
		panic(err)
	}
	defer gpu.Close()
	cpu, err := codec.New(codec.WithBackendName("cpu", ""), codec.WithFormat("splitzip4"))
	if err != nil {
		panic(err)
	}
	defer cpu.Close()

	payload, err := gpu.EncodeAll(values, nil)
	if err != nil {
		panic(err)
	}
	reference, err := cpu.EncodeAll(values, nil)
	if err != nil {
		panic(err)
	}
	back, err := cpu.DecodeAll(payload, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("same payload as the CPU:", bytes.Equal(payload, reference), "bit-exact:", bytes.Equal(back, values))
	// Output: same payload as the CPU: true bit-exact: true
}

// A device-resident operation: values already in device memory are encoded into a body in device memory and
// decoded back, each Run one queue submission; only the body's size (encode) and the verdict (decode) come back to
// the host. PrepareEncode records the work once, so a serving loop reruns it for every new tensor of that shape.
func ExampleBackend_PrepareEncode() {
	const n = 1 << 16 // BF16 values, chunks of 2^12
	values := make([]byte, 2*n)
	for i := range n {
		v := float32(math.Sin(float64(i)*0.37) * (1 + float64(i%7)/8))
		binary.LittleEndian.PutUint16(values[2*i:], uint16(math.Float32bits(v)>>16))
	}
	ctx := context.Background()
	reference := tbe3Reference(values, n)

	b, err := vkcodec.Open(vkcodec.Options{}) // any Vulkan device: make deps installs lavapipe where there is none
	if err != nil {
		panic(err)
	}
	defer b.Close()
	dev := b.VK()
	in, _ := dev.NewBuffer(2*n, vk.DeviceLocal)
	body, _ := dev.NewBuffer(4*n, vk.DeviceLocal) // room for the largest body
	out, _ := dev.NewBuffer(2*n, vk.DeviceLocal)
	defer in.Close()
	defer body.Close()
	defer out.Close()
	if err := dev.Upload(ctx, in, 0, values); err != nil { // in a server, the values are already there
		panic(err)
	}

	enc, err := b.PrepareEncode(ctx, vkcodec.EncodeSpec{Format: layout.FormatTBE3, N: n, Shift: 12, Checksums: true,
		Src: vk.BufferRange{Buf: in}, Dst: vk.BufferRange{Buf: body}})
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	size, err := enc.Run(ctx)
	if err != nil {
		panic(err)
	}
	got := make([]byte, size)
	if err := dev.Download(ctx, got, body, 0); err != nil {
		panic(err)
	}
	fmt.Println("body equals the CPU codec's:", bytes.Equal(got, reference))

	dec, err := b.PrepareDecode(ctx, vkcodec.DecodeSpec{Format: layout.FormatTBE3, N: n, Shift: 12, Checksums: true,
		Body: vk.BufferRange{Buf: body}, BodyLen: size, Dst: vk.BufferRange{Buf: out}})
	if err != nil {
		panic(err)
	}
	defer dec.Close()
	if err := dec.Run(ctx); err != nil { // a damaged body fails here with the codec's error class
		panic(err)
	}
	back := make([]byte, 2*n)
	if err := dev.Download(ctx, back, out, 0); err != nil {
		panic(err)
	}
	fmt.Println("decoded bit-exact:", bytes.Equal(back, values))
	// Output:
	// body equals the CPU codec's: true
	// decoded bit-exact: true
}

// tbe3Reference is the TBE-3 body the CPU backend makes of n BF16 values.
func tbe3Reference(values []byte, n uint64) []byte {
	f, _ := codec.LookupFormat(layout.FormatTBE3)
	jobs := []codec.EncodeJob{{Format: layout.FormatTBE3, Src: values, N: n, Shift: 12, Checksums: true,
		Dst: make([]byte, f.MaxBodyOf(n, layout.DTypeBF16, 12))}}
	if err := codec.NewCPUBackend(1).Encode(context.Background(), jobs); err != nil {
		panic(err)
	}
	return jobs[0].Out
}
