package codec

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/vkzip/vkzip/codec/layout"
)

// The exponent-window decoders, one fuzz target per dtype. An input is a 4-byte header (format selector, chunk
// shift 10 or 11, checksum flag, value count / 8) and a body. Whatever the bytes, decoding must end in a typed
// error or succeed; and a body it accepts must be exactly what the encoder makes of the decoded values (there is
// one canonical body per input).

func xwFuzzHeader(format uint8, shift uint, checksums bool, n uint64) []byte {
	var cs byte
	if checksums {
		cs = 1
	}
	return []byte{format, byte(shift - 10), cs, byte(n / 8)}
}

func fuzzXW(f *testing.F, dt layout.DType) {
	r := rand.New(rand.NewPCG(uint64(dt), 99))
	for _, p := range xwPairs {
		if p.dt != dt {
			continue
		}
		for _, n := range []uint64{8, 200, 1024, 2040} {
			for _, spread := range []float64{1, 6} {
				src := floatValues(r, dt, int(n), kvCenter(dt), spread)
				body := xwEncode(f, p.f, dt, src, 10, n != 200)
				f.Add(append(xwFuzzHeader(p.f, 10, n != 200, n), body...))
			}
		}
	}
	formats := []uint8{layout.FormatXW3, layout.FormatXW2, layout.FormatXW4}
	be := NewCPUBackend(1)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		format := formats[int(in[0])%len(formats)]
		shift := 10 + uint(in[1]&1)
		checksums := in[2]&1 != 0
		n := uint64(in[3]) * 8
		body := in[4:]
		if _, ok := layout.NewXW(format, dt, n, shift); !ok {
			return
		}
		dst := make([]byte, n*uint64(dt.Size()))
		bodyErr, err := be.DecodeXW(context.Background(), format, dt, body, n, shift, checksums, dst)
		if err != nil {
			t.Fatalf("call error: %v", err)
		}
		if bodyErr != nil {
			var e *Error
			if !errors.As(bodyErr, &e) || !(errors.Is(bodyErr, ErrCorrupt) || errors.Is(bodyErr, ErrChecksum) ||
				errors.Is(bodyErr, ErrNonCanonical)) {
				t.Fatalf("untyped or unexpected error: %v", bodyErr)
			}
			return
		}
		max, _ := xwMaxBodySize(format, dt, n, shift)
		again, err := be.EncodeXW(context.Background(), format, dt, dst, n, shift, checksums, make([]byte, max))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("accepted a body that is not the canonical encoding of its values (%d vs %d bytes)", len(body), len(again))
		}
	})
}

func FuzzXWDecodeE5M2(f *testing.F) { fuzzXW(f, layout.DTypeF8E5M2) }
func FuzzXWDecodeE4M3(f *testing.F) { fuzzXW(f, layout.DTypeF8E4M3) }
func FuzzXWDecodeF16(f *testing.F)  { fuzzXW(f, layout.DTypeF16) }
func FuzzXWDecodeF32(f *testing.F)  { fuzzXW(f, layout.DTypeF32) }
