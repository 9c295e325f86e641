package corpusgen

import (
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
)

// The zf12 corpus (docs/FORMAT.md §10). Valid categories here, invalid ones in zf12_invalid.go.

const zf12 = "zf12"

func init() {
	RegisterFormat(Format{Name: zf12, ID: layout.FormatZF12, Version: 2})
	reg := func(name string, min int, about string, gen func(g *Gen) error) {
		Register(Category{Format: zf12, Name: name, Min: min, About: about, Generate: gen})
	}
	reg("bitpatterns", 7, "every BF16 bit pattern: in order (coded blocks), shuffled (raw) and sparse in KV-like values", zfBitPatterns)
	reg("special", 8, "NaN, infinities, zeros, subnormals and the largest finite values: bases 0 and 127", zfSpecial)
	reg("spans", 12, "field spans 0, 7 (coded), 8 and 15 (raw), every base 0..127, odd smallest exponents", zfSpans)
	reg("lengths", 40, "lengths around blocks and chunks (1, 3, 8, 511, 512, 513, chunk±1, 2·chunk+3) for every chunk size", zfLengths)
	reg("raw-blocks", 10, "no raw block, all, alternating, first or last, short raw last blocks of odd and even length", zfRawBlocks)
	reg("kv", 9, "real KV-cache tensors (stories260K), several chunk sizes", zfKV)
	reg("synthetic", 8, "Gaussian at several scales, uniform bits, KV-like (1M values), wide-exponent mixes", zfSynthetic)
	reg("stored", 4, "tensors the format does not code travel stored (containers only)", zfStored)
	reg("invalid-container", 25, "broken containers and zf12 directory rules (container level)", zfInvalidContainer)
	reg("invalid-table", 30, "chunk tables and headers that contradict the body (body level; corrupt)", zfInvalidTable)
	reg("invalid-checksum", 15, "flipped bits under chunk checksums (body level; the kernels' CRC check)", zfInvalidChecksum)
	reg("invalid-stream", 30, "non-canonical bodies, checksums off (the kernels answer) and CRC re-fixed (body level)", zfInvalidStream)

}

// zfb is a zfblocks/1 spec.
func zfb(n int, seed uint64, blocks ...int64) *Spec {
	return &Spec{Gen: "zfblocks/1", N: n, Seed: seed, Args: blocks}
}

// blk is a zfblocks/1 block spec.
func blk(base, span int64) int64 { return base<<8 | span }

func zfBitPatterns(g *Gen) error {
	asc := &Spec{Gen: "allbits/1", N: 65536, Args: []int64{0}}
	shuf := &Spec{Gen: "allbits/1", N: 65536, Seed: 7, Args: []int64{1}}
	sparse := &Spec{Gen: "allbits/1", N: 16 * 65536, Seed: 11, Args: []int64{2}}
	return genAll(g, []Valid{
		{ID: "ascending/c1024", Spec: asc, Chunk: 1024, Checksums: true, Note: "4 exponents per block: all coded"},
		{ID: "ascending/c16384/nocrc", Spec: asc, Chunk: 16384},
		{ID: "ascending/c65536", Spec: asc, Chunk: 65536, Checksums: true},
		{ID: "shuffled/c1024", Spec: shuf, Chunk: 1024, Checksums: true, Note: "all raw"},
		{ID: "shuffled/c65536/nocrc", Spec: shuf, Chunk: 65536},
		{ID: "sparse/c4096", Spec: sparse, Chunk: 4096, Checksums: true},
		{ID: "sparse/c65536/nocrc", Spec: sparse, Chunk: 65536},
	})
}

func zfSpecial(g *Gen) error {
	var nanInf, subn []uint16
	for m := uint16(0); m < 128; m++ {
		nanInf = append(nanInf, 0x7F80|m, 0xFF80|m)
		subn = append(subn, m, 0x8000|m)
	}
	rep := func(n int, v ...uint16) []byte {
		out := make([]uint16, n)
		for i := range out {
			out[i] = v[i%len(v)]
		}
		return vals(out...)
	}
	sp, err := sprinkle(4096, 21, 64, 3, []uint16{0x7FC0, 0xFF81, 0x0000, 0x8001, 0x7F80})
	if err != nil {
		return err
	}
	top := rep(1500, 0x7F7F, 0xFF7F, 0x7F00, 0x7F80, 0xFFFF, 0x7E00) // exponents 254, 255, 252: fields 127 and 126
	return genAll(g, []Valid{
		{ID: "nan-inf/c1024", Bytes: vals(nanInf...), Chunk: 1024, Checksums: true, Note: "base 127"},
		{ID: "subnormal/c1024/nocrc", Bytes: vals(subn...), Chunk: 1024, Note: "base 0"},
		{ID: "zeros/c2048", Bytes: rep(3000, 0x0000, 0x8000), Chunk: 2048, Checksums: true},
		{ID: "zero-nan/c1024", Bytes: rep(1100, 0x0000, 0x7FC0), Chunk: 1024, Checksums: true, Note: "fields 0 and 127: raw"},
		{ID: "top/c1024", Bytes: top, Chunk: 1024, Checksums: true, Note: "the largest fields"},
		{ID: "sprinkled/c1024", Bytes: sp, Chunk: 1024, Checksums: true, Note: "NaN, zeros, subnormals in KV-like values"},
		{ID: "sprinkled/c4096/nocrc", Bytes: sp, Chunk: 4096},
		{ID: "quiet-nan/c65536", Bytes: rep(3000, 0x7FC0), Chunk: 65536, Checksums: true},
		{ID: "single/c1024", Bytes: vals(0x8000), Chunk: 1024, Checksums: true},
	})
}

func zfSpans(g *Gen) error {
	var vs []Valid
	for _, span := range []int64{0, 1, 7, 8, 15} {
		vs = append(vs, Valid{ID: fmt.Sprintf("span%d/c1024", span), Spec: zfb(4096, uint64(60+span), blk(60, span)),
			Chunk: 1024, Checksums: true})
	}
	var bases []int64
	for b := int64(0); b < 128; b++ {
		bases = append(bases, blk(b, min(7, 127-b)))
	}
	// Exponents 121 and 135 (fields 60 and 67) fit [120, 135]; 121 and 136 do not.
	odd, oddRaw := make([]uint16, 1024), make([]uint16, 1024)
	for i := range odd {
		e := uint16(121 + 14*(i%2))
		odd[i] = uint16(i%2)<<15 | e<<7 | uint16(i%128)
		oddRaw[i] = odd[i] + uint16(i%2)<<7
	}
	vs = append(vs,
		Valid{ID: "every-base/c16384", Spec: zfb(65536, 70, bases...), Chunk: 16384, Checksums: true,
			Note: "one block per base 0..127, span 7 (less at the top)"},
		Valid{ID: "every-base/c65536/nocrc", Spec: zfb(65536, 71, bases...), Chunk: 65536},
		Valid{ID: "alternating-7-8/c2048/nocrc", Spec: zfb(10000, 72, blk(40, 7), blk(40, 8)), Chunk: 2048},
		Valid{ID: "top-span7/c1024", Spec: zfb(2048, 73, blk(120, 7)), Chunk: 1024, Checksums: true, Note: "fields 120..127"},
		Valid{ID: "bottom-span8/c1024", Spec: zfb(2048, 74, blk(0, 8)), Chunk: 1024, Checksums: true},
		Valid{ID: "odd-min-exponent/c1024", Bytes: vals(odd...), Chunk: 1024, Checksums: true, Note: "exponents 121 and 135: coded"},
		Valid{ID: "odd-min-exponent-raw/c1024", Bytes: vals(oddRaw...), Chunk: 1024, Checksums: true, Note: "121 and 136: raw"},
	)
	return genAll(g, vs)
}

func zfLengths(g *Gen) error {
	var vs []Valid
	i := 0
	for _, s := range shifts() {
		c := 1 << s
		for _, n := range []int{1, 3, 8, 511, 512, 513, c - 1, c + 1, 2*c + 3} {
			if s > 10 && n < 512 {
				continue // short tensors are one partial chunk at any chunk size: once is enough
			}
			id := fmt.Sprintf("n%d/c%d", n, c)
			cs := i%2 == 0
			if !cs {
				id += "/nocrc"
			}
			vs = append(vs, Valid{ID: id, Spec: &Spec{Gen: "kvlike/1", N: n, Seed: uint64(200 + i)}, Chunk: c, Checksums: cs})
			i++
		}
	}
	for _, n := range []int{2, 5, 17} {
		vs = append(vs, Valid{ID: fmt.Sprintf("n%d/c1024", n), Spec: &Spec{Gen: "kvlike/1", N: n, Seed: uint64(300 + n)},
			Chunk: 1024, Checksums: true})
	}
	vs = append(vs, Valid{ID: "n0/c1024", Bytes: []byte{}, Chunk: 1024, Checksums: true, Note: "stored: no values"})
	return genAll(g, vs)
}

// Base cases of the invalid categories (valid here): their block and chunk mixes are what the edits need.
const (
	zfBaseMixed      = "raw-blocks/mixed/c1024"       // 4 chunks: raw blocks in chunks 0 and 3; short odd raw last block
	zfBaseMixedNoCRC = "raw-blocks/mixed/c1024/nocrc" //
	zfBaseNarrow     = "raw-blocks/narrow/c2048"      // spans 0..3: room to recode a block with a lower base
	zfBaseNarrowNo   = "raw-blocks/narrow/c2048/nocrc"
	zfBaseBig        = "raw-blocks/big/c65536" // 2 chunks, the second short, raw blocks in both
)

func zfRawBlocks(g *Gen) error {
	coded, raw := blk(60, 5), blk(58, 9)
	// 3 full chunks of 1024 and one of 699: blocks raw, coded | coded, coded | coded, coded | coded, raw(187).
	mixed := zfb(3*1024+699, 80, raw, coded, coded, coded, coded, coded, coded, raw)
	narrow := zfb(5*1024+300, 81, blk(61, 3), blk(62, 0), blk(10, 2), blk(100, 1))
	alt := make([]int64, 0, 128)
	for b := 0; b < 128; b++ {
		alt = append(alt, []int64{coded, raw}[b%2])
	}
	return genAll(g, []Valid{
		{ID: "mixed/c1024", Spec: mixed, Chunk: 1024, Checksums: true},
		{ID: "mixed/c1024/nocrc", Spec: mixed, Chunk: 1024},
		{ID: "narrow/c2048", Spec: narrow, Chunk: 2048, Checksums: true},
		{ID: "narrow/c2048/nocrc", Spec: narrow, Chunk: 2048},
		{ID: "big/c65536", Spec: zfb(65536+5000, 82, alt...), Chunk: 65536, Checksums: true},
		{ID: "none/c4096", Spec: zfb(20000, 83, coded), Chunk: 4096, Checksums: true},
		{ID: "all/c4096/nocrc", Spec: zfb(20000, 84, raw), Chunk: 4096},
		{ID: "all/c65536", Spec: zfb(1<<17, 85, raw), Chunk: 65536, Checksums: true, Note: "128 raw blocks per chunk"},
		{ID: "alternating/c1024", Spec: zfb(8*512, 86, coded, raw), Chunk: 1024, Checksums: true},
		{ID: "first/c8192", Spec: zfb(16*512, 87, raw, coded, coded, coded, coded, coded, coded, coded, coded, coded,
			coded, coded, coded, coded, coded, coded), Chunk: 8192, Checksums: true},
		{ID: "last/c8192/nocrc", Spec: zfb(16*512, 88, coded, coded, coded, coded, coded, coded, coded, coded, coded,
			coded, coded, coded, coded, coded, coded, raw), Chunk: 8192},
		{ID: "short-odd/c1024", Spec: zfb(2*512+187, 89, raw), Chunk: 1024, Checksums: true},
		{ID: "short-even/c1024", Spec: zfb(2*512+188, 90, raw), Chunk: 1024, Checksums: true},
		{ID: "short-one/c1024/nocrc", Spec: zfb(512+1, 91, coded, blk(0, 0)), Chunk: 1024, Note: "a one-value last block"},
	})
}

func zfKV(g *Gen) error {
	src, err := g.SourceOf(sz4, KVSourceFile)
	if err != nil {
		return err
	}
	const per = 2 * 512 * 4 * 8
	if len(src) != per*len(kvSamples) {
		return fmt.Errorf("%s: %d bytes, want %d", KVSourceFile, len(src), per*len(kvSamples))
	}
	shape := []uint64{512, 4, 8}
	var vs []Valid
	for i, name := range kvSamples {
		b := src[i*per : (i+1)*per]
		vs = append(vs,
			Valid{ID: name + "/c65536", Bytes: b, Shape: shape, Chunk: 65536, Checksums: true},
			Valid{ID: name + "/c1024/nocrc", Bytes: b, Shape: shape, Chunk: 1024})
	}
	vs = append(vs, Valid{ID: "all4/c16384", Bytes: src, Shape: []uint64{4, 512, 4, 8}, Chunk: 16384, Checksums: true})
	return genAll(g, vs)
}

func zfSynthetic(g *Gen) error {
	return genAll(g, []Valid{
		{ID: "gauss/s0/c65536", Spec: &Spec{Gen: "gauss/1", N: 100000, Seed: 91, Args: []int64{0}}, Chunk: 65536, Checksums: true},
		{ID: "gauss/s-20/c16384/nocrc", Spec: &Spec{Gen: "gauss/1", N: 50000, Seed: 92, Args: []int64{-20}}, Chunk: 16384},
		{ID: "gauss/s40/c4096", Spec: &Spec{Gen: "gauss/1", N: 50000, Seed: 93, Args: []int64{40}}, Chunk: 4096, Checksums: true},
		{ID: "kvlike/1M/c65536", Spec: &Spec{Gen: "kvlike/1", N: 1 << 20, Seed: 95}, Chunk: 65536, Checksums: true},
		{ID: "uniform/c65536/nocrc", Spec: &Spec{Gen: "uniform/1", N: 100000, Seed: 96}, Chunk: 65536},
		{ID: "escmix/1000ppm/c65536", Spec: &Spec{Gen: "escmix/1", N: 200000, Seed: 98, Args: []int64{1000}}, Chunk: 65536, Checksums: true},
		{ID: "escmix/100ppm/c8192", Spec: &Spec{Gen: "escmix/1", N: 200000, Seed: 99, Args: []int64{100}}, Chunk: 8192, Checksums: true},
		{ID: "escmix/10000ppm/c1024/nocrc", Spec: &Spec{Gen: "escmix/1", N: 200000, Seed: 100, Args: []int64{10000}}, Chunk: 1024},
	})
}

func zfStored(g *Gen) error {
	seq := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
		return b
	}
	return genAll(g, []Valid{
		{ID: "f32/n100", Bytes: seq(400), DType: layout.DTypeF32, Chunk: 1024, Checksums: true},
		{ID: "u8/n7/nocrc", Bytes: seq(7), DType: layout.DTypeU8, Chunk: 1024},
		{ID: "f16/n333", Bytes: seq(666), DType: layout.DTypeF16, Chunk: 65536, Checksums: true},
		{ID: "bf16/n0/nocrc", Bytes: []byte{}, Chunk: 65536},
		{ID: "bf16/scalar", Bytes: vals(0x3F80), Shape: []uint64{}, Chunk: 1024, Checksums: true, Note: "coded: one value"},
	})
}
