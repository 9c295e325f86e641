package main

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// entropy is the Shannon entropy in bits of a histogram of n values.
func entropy(h []uint64, n uint64) float64 {
	var s float64
	for _, c := range h {
		if c != 0 {
			p := float64(c) / float64(n)
			s -= p * math.Log2(p)
		}
	}
	return s
}

// printRatios encodes every tensor of a float dtype with each exponent-window format that codes it (reference
// codec, default chunk size) and prints bytes in, body bytes out and the ratio; the size of the safetensors header
// and of the container's metadata are left out (they are the same for every format). It also prints, for the
// record, what two designs that were not chosen would give (sizes computed, not encoded): SplitZip-style escapes
// (2^W exponents with codes, an escape is a 32-bit position+exponent word) and no escapes at all (the entropy of
// the exponent field, coded ideally, plus the kept bits).
func printRatios(w io.Writer, f *tensorfile.File, shift uint) error {
	type acc struct{ in, out uint64 }
	got := map[string]*acc{}
	var order []string
	add := func(key string, in, out uint64) {
		a := got[key]
		if a == nil {
			a = &acc{}
			got[key] = a
			order = append(order, key)
		}
		a.in += in
		a.out += out
	}
	be := codec.NewCPUBackend(0)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		e, m, ok := layout.FloatFields(t.DType)
		if !ok {
			continue
		}
		n := uint64(len(t.Data) / t.DType.Size())
		for _, fm := range []uint8{layout.FormatXW2, layout.FormatXW3, layout.FormatXW4} {
			x, ok := layout.NewXW(fm, t.DType, n, shift)
			if !ok {
				continue // a width the dtype does not have
			}
			max := x.MaxBodySize()
			body, err := be.EncodeXW(context.Background(), fm, t.DType, t.Data, n, shift, true, make([]byte, max))
			if err != nil {
				return err
			}
			add(fmt.Sprintf("%v %s", t.DType, codec.FormatName(fm)), uint64(len(t.Data)), uint64(len(body)))
			add(fmt.Sprintf("%v %s, SplitZip-style escapes (sized)", t.DType, codec.FormatName(fm)),
				uint64(len(t.Data)), positionalSize(t.Data, t.DType.Size(), e, m, fm, n, shift))
		}
		h := make([]uint64, 1<<e)
		for j := uint64(0); j < n; j++ {
			h[value(t.Data, int(j), t.DType.Size())>>m&(1<<e-1)]++
		}
		ideal := (float64(m+1) + entropy(h, n)) * float64(n) / 8
		add(fmt.Sprintf("%v entropy bound of the exponent field (per tensor)", t.DType), uint64(len(t.Data)), uint64(ideal))
	}
	for _, k := range order {
		a := got[k]
		fmt.Fprintf(w, "  %-58s %10d -> %10d bytes  %.4fx\n", k, a.in, a.out, float64(a.in)/float64(a.out))
	}
	return nil
}

func value(b []byte, i, size int) uint32 {
	var v uint32
	for k := size - 1; k >= 0; k-- {
		v = v<<8 | uint32(b[i*size+k])
	}
	return v
}

// positionalSize is the body size of the rejected alternative: per chunk, the best window of 2^W exponents (all
// codes used) and a 32-bit word per escape, or raw when that is smaller; same dense streams and table.
func positionalSize(data []byte, size int, e, m uint, fm uint8, n uint64, shift uint) uint64 {
	x, _ := layout.NewXW(fm, dtypeOf(e, m), n, shift)
	total := x.SideOffset()
	for c := uint64(0); c < x.Chunks(); c++ {
		mlen := x.ChunkLen(c)
		h := make([]uint64, 1<<e)
		for j := c << shift; j < c<<shift+mlen; j++ {
			h[value(data, int(j), size)>>m&(1<<e-1)]++
		}
		win := uint(1) << x.W
		best := uint64(0)
		for b := uint(0); b+win <= 1<<e; b++ {
			var in uint64
			for k := b; k < b+win; k++ {
				in += h[k]
			}
			best = max(best, in)
		}
		total += min(4*(mlen-best), x.RawSide(mlen))
	}
	return total
}

func dtypeOf(e, m uint) layout.DType {
	for _, d := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
		if e2, m2, _ := layout.FloatFields(d); e2 == e && m2 == m {
			return d
		}
	}
	return layout.DTypeOpaque
}
