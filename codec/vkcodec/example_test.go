package vkcodec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vkzip/vkzip/codec"
	_ "github.com/vkzip/vkzip/codec/vkcodec" // links the "vulkan" backend
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
