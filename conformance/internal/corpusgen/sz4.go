package corpusgen

import (
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// The SplitZip-4 corpus (docs/FORMAT.md §5). Valid categories here, invalid ones in sz4_invalid.go.

const sz4 = "splitzip4"

func init() {
	RegisterFormat(Format{Name: sz4, ID: layout.FormatSplitZip4, Version: 3})
	reg := func(name string, min int, about string, gen func(g *Gen) error) {
		Register(Category{Format: sz4, Name: name, Min: min, About: about, Generate: gen})
	}
	reg("bitpatterns", 12, "every BF16 bit pattern, in raw chunks and sparse in coded ones", genBitPatterns)
	reg("nan", 8, "NaN payloads (quiet, signalling, both signs) and infinities", genNaN)
	reg("zero", 8, "+0 and -0, alone and among other values", genZero)
	reg("subnormal", 7, "subnormal values, with and without exponent 0 in the codebook", genSubnormal)
	reg("exponents", 257, "each of the 256 exponents among KV-like values, coded or escaped", genExponents)
	reg("lengths", 91, "lengths 0, 1, 2, 3, 5, 8, 17, chunk±1, 2·chunk−1, 2·chunk+3 and a ragged one, for every chunk size", genLengths)
	reg("escapes-all", 14, "every value escaped (raw chunks), odd and short lengths", genEscapesAll)
	reg("escapes-none", 8, "no escapes, every chunk size", genEscapesNone)
	reg("escape-bursts", 24, "escape bursts at the coded/raw threshold, chunk edges, past the decoder's staging", genBursts)
	reg("codebook-unused", 7, "codebooks with unused entries, odd orders, extreme exponents", genCodebookUnused)
	reg("kv", 14, "real KV-cache tensors (stories260K), several chunk sizes and codebooks", genKV)
	reg("synthetic", 14, "synthetic distributions: Gaussian at several scales, uniform bits, escape mixes", genSynthetic)
	reg("stored", 5, "tensors the format does not code travel stored (containers only)", genStored)
	reg("invalid-container", 40, "broken containers: truncations, flips, headers, directories, streams (container level)", genInvalidContainer)
	reg("invalid-table", 24, "chunk tables that contradict the body (body level; corrupt)", genInvalidTable)
	reg("invalid-checksum", 16, "flipped bits under chunk checksums (body level; the kernels' CRC check)", genInvalidChecksum)
	reg("invalid-stream", 50, "non-canonical streams, checksums off (the kernels answer) and CRC re-fixed (body level)", genInvalidStream)
}

var kvCB = codec.Codebook(kvCodebook)

func shifts() []uint {
	var s []uint
	for x := uint(layout.MinChunkShift); x <= layout.MaxChunkShift; x++ {
		s = append(s, x)
	}
	return s
}

// vals packs BF16 values.
func vals(vs ...uint16) []byte {
	b := make([]byte, 2*len(vs))
	for i, v := range vs {
		put(b, i, v)
	}
	return b
}

// sprinkle returns kvlike/1 values with every k-th value (from offset o) taken from pick in turn.
func sprinkle(n int, seed uint64, k, o int, pick []uint16) ([]byte, error) {
	f, _ := lookupInput("kvlike/1")
	b, err := f(n, seed, nil)
	if err != nil {
		return nil, err
	}
	for i, j := o, 0; i < n; i, j = i+k, j+1 {
		put(b, i, pick[j%len(pick)])
	}
	return b, nil
}

// withLast is kvCB with its last entry replaced by e (a codebook that has e but is otherwise the KV one).
func withLast(e uint8) *codec.Codebook {
	cb := kvCB
	cb[15] = e
	return &cb
}

func withFirst(e uint8) *codec.Codebook {
	cb := kvCB
	copy(cb[1:], kvCB[:15])
	cb[0] = e
	return &cb
}

func exps(es ...uint8) []int64 {
	a := make([]int64, len(es))
	for i, e := range es {
		a[i] = int64(e)
	}
	return a
}

func genAll(g *Gen, vs []Valid) error {
	for _, v := range vs {
		if err := g.Valid(v); err != nil {
			return err
		}
	}
	return nil
}

func genBitPatterns(g *Gen) error {
	asc := &Spec{Gen: "allbits/1", N: 65536, Args: []int64{0}}
	shuf := &Spec{Gen: "allbits/1", N: 65536, Seed: 7, Args: []int64{1}}
	sparse := &Spec{Gen: "allbits/1", N: 16 * 65536, Seed: 11, Args: []int64{2}}
	var vs []Valid
	for _, s := range shifts() {
		vs = append(vs, Valid{ID: fmt.Sprintf("ascending/c%d", 1<<s), Spec: asc, Chunk: 1 << s, Checksums: true,
			Note: "calibrated codebook 0..15: chunks of those exponents coded, the rest raw"})
	}
	vs = append(vs,
		Valid{ID: "ascending/c65536/nocrc", Spec: asc, Chunk: 65536},
		Valid{ID: "ascending/kvcb/c4096", Spec: asc, Chunk: 4096, Codebook: &kvCB, Checksums: true},
		Valid{ID: "shuffled/kvcb/c1024", Spec: shuf, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		Valid{ID: "shuffled/kvcb/c65536/nocrc", Spec: shuf, Chunk: 65536, Codebook: &kvCB},
		Valid{ID: "shuffled/c16384", Spec: shuf, Chunk: 16384, Checksums: true},
		Valid{ID: "sparse/kvcb/c1024", Spec: sparse, Chunk: 1024, Codebook: &kvCB, Checksums: true,
			Note: "every pattern escaped (or coded) inside coded chunks"},
		Valid{ID: "sparse/kvcb/c8192/nocrc", Spec: sparse, Chunk: 8192, Codebook: &kvCB},
		Valid{ID: "sparse/kvcb/c65536", Spec: sparse, Chunk: 65536, Codebook: &kvCB, Checksums: true,
			Note: "about 3,800 escapes per coded chunk: more than the decoder stages at once"},
	)
	return genAll(g, vs)
}

func genNaN(g *Gen) error {
	var all []uint16 // every NaN and both infinities
	for m := uint16(0); m < 128; m++ {
		all = append(all, 0x7F80|m, 0xFF80|m)
	}
	nans := []uint16{0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF, 0xFFFF, 0x7FA5, 0xFF80, 0x7F80}
	sp, err := sprinkle(4096, 21, 64, 3, nans)
	if err != nil {
		return err
	}
	qnan := make([]uint16, 3000)
	for i := range qnan {
		qnan[i] = 0x7FC0
	}
	return genAll(g, []Valid{
		{ID: "all/calibrated/c1024", Bytes: vals(all...), Chunk: 1024, Checksums: true},
		{ID: "all/kvcb/c1024", Bytes: vals(all...), Chunk: 1024, Codebook: &kvCB, Checksums: true, Note: "raw"},
		{ID: "all/code15/c65536/nocrc", Bytes: vals(all...), Chunk: 65536, Codebook: withLast(255)},
		{ID: "sprinkled/kvcb/c1024", Bytes: sp, Chunk: 1024, Codebook: &kvCB, Checksums: true, Note: "NaNs escaped"},
		{ID: "sprinkled/kvcb/c4096/nocrc", Bytes: sp, Chunk: 4096, Codebook: &kvCB},
		{ID: "sprinkled/code0/c1024", Bytes: sp, Chunk: 1024, Codebook: withFirst(255), Checksums: true},
		{ID: "quiet/calibrated/c2048", Bytes: vals(qnan...), Chunk: 2048, Checksums: true},
		{ID: "quiet/kvcb/c1024/nocrc", Bytes: vals(qnan...), Chunk: 1024, Codebook: &kvCB},
	})
}

func genZero(g *Gen) error {
	rep := func(n int, v ...uint16) []byte {
		out := make([]uint16, n)
		for i := range out {
			out[i] = v[i%len(v)]
		}
		return vals(out...)
	}
	sp, err := sprinkle(5000, 31, 7, 0, []uint16{0x0000, 0x8000})
	if err != nil {
		return err
	}
	return genAll(g, []Valid{
		{ID: "plus/calibrated/c1024", Bytes: rep(3000, 0x0000), Chunk: 1024, Checksums: true},
		{ID: "minus/calibrated/c65536/nocrc", Bytes: rep(3000, 0x8000), Chunk: 65536},
		{ID: "alternating/kvcb/c1024", Bytes: rep(1025, 0x0000, 0x8000), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "sprinkled/kvcb/c1024", Bytes: sp, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "sprinkled/code15/c1024/nocrc", Bytes: sp, Chunk: 1024, Codebook: withLast(0)},
		{ID: "sprinkled/code0/c8192", Bytes: sp, Chunk: 8192, Codebook: withFirst(0), Checksums: true},
		{ID: "single-plus/c1024", Bytes: vals(0x0000), Chunk: 1024, Checksums: true},
		{ID: "single-minus/kvcb/c65536", Bytes: vals(0x8000), Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "pair/kvcb/c1024/nocrc", Bytes: vals(0x8000, 0x0000), Chunk: 1024, Codebook: &kvCB},
	})
}

func genSubnormal(g *Gen) error {
	var all []uint16
	for m := uint16(1); m < 128; m++ {
		all = append(all, m, 0x8000|m)
	}
	sp, err := sprinkle(6000, 41, 32, 9, all)
	if err != nil {
		return err
	}
	edge := []uint16{0x0001, 0x8001, 0x007F, 0x807F, 0x0000, 0x8000, 0x0080, 0x8080, 0x00FF, 0x7F7F, 0xFF7F}
	rep := make([]uint16, 2000)
	for i := range rep {
		rep[i] = edge[i%len(edge)]
	}
	cb := codec.Codebook{0, 1, 254, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	return genAll(g, []Valid{
		{ID: "all/calibrated/c1024", Bytes: vals(all...), Chunk: 1024, Checksums: true},
		{ID: "all/kvcb/c65536", Bytes: vals(all...), Chunk: 65536, Codebook: &kvCB, Checksums: true, Note: "raw"},
		{ID: "sprinkled/kvcb/c1024", Bytes: sp, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "sprinkled/code0/c2048/nocrc", Bytes: sp, Chunk: 2048, Codebook: withFirst(0)},
		{ID: "edges/calibrated/c1024", Bytes: vals(rep...), Chunk: 1024, Checksums: true},
		{ID: "edges/lowcb/c1024/nocrc", Bytes: vals(rep...), Chunk: 1024, Codebook: &cb},
		{ID: "edges/kvcb/c32768", Bytes: vals(rep...), Chunk: 32768, Codebook: &kvCB, Checksums: true},
	})
}

func genExponents(g *Gen) error {
	for e := 0; e < 256; e++ {
		s := uint(layout.MinChunkShift) + uint(e%7)
		v := Valid{ID: fmt.Sprintf("e%03d/c%d", e, 1<<s), Chunk: 1 << s, Codebook: &kvCB, Checksums: e%2 == 0,
			Spec: &Spec{Gen: "expmix/1", N: 1536, Seed: uint64(1000 + e), Args: []int64{int64(e)}}}
		if err := g.Valid(v); err != nil {
			return err
		}
	}
	all := make([]int64, 256)
	for e := range all {
		all[e] = int64(e)
	}
	return genAll(g, []Valid{
		{ID: "all/calibrated/c1024", Spec: &Spec{Gen: "exps/1", N: 16384, Seed: 5, Args: all}, Chunk: 1024, Checksums: true},
		{ID: "all/kvcb/c4096/nocrc", Spec: &Spec{Gen: "exps/1", N: 16384, Seed: 5, Args: all}, Chunk: 4096, Codebook: &kvCB},
	})
}

func genLengths(g *Gen) error {
	i := 0
	for _, s := range shifts() {
		c := 1 << s
		r := newRNG(uint64(s))
		ragged := 3*c + 1 + r.below(c-2)
		for _, n := range []int{0, 1, 2, 3, 5, 8, 17, c - 1, c, c + 1, 2*c - 1, 2*c + 3, ragged} {
			i++
			v := Valid{ID: fmt.Sprintf("c%d/n%d", c, n), Chunk: c, Checksums: i%2 == 0,
				Spec: &Spec{Gen: "escmix/1", N: n, Seed: uint64(100*s) + uint64(i), Args: []int64{20000}}}
			if i%3 != 0 {
				v.Codebook = &kvCB
			}
			if err := g.Valid(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func genEscapesAll(g *Gen) error {
	out := make([]int64, len(outsideKV))
	for i, e := range outsideKV {
		out[i] = int64(e)
	}
	var vs []Valid
	for k, s := range shifts() {
		c := 1 << s
		vs = append(vs, Valid{ID: fmt.Sprintf("c%d/n%d", c, c+c/2+1), Chunk: c, Codebook: &kvCB, Checksums: k%2 == 0,
			Spec: &Spec{Gen: "exps/1", N: c + c/2 + 1, Seed: uint64(200 + s), Args: out}})
	}
	for k, n := range []int{1, 2, 3, 4, 5, 6, 7, 9, 31, 33} {
		vs = append(vs, Valid{ID: fmt.Sprintf("c1024/n%d", n), Chunk: 1024, Codebook: &kvCB, Checksums: k%2 == 1,
			Spec: &Spec{Gen: "exps/1", N: n, Seed: uint64(300 + n), Args: out}})
	}
	return genAll(g, vs)
}

func genEscapesNone(g *Gen) error {
	var vs []Valid
	for k, s := range shifts() {
		c := 1 << s
		vs = append(vs, Valid{ID: fmt.Sprintf("c%d/n%d", c, 2*c+5), Chunk: c, Codebook: &kvCB, Checksums: k%2 == 1,
			Spec: &Spec{Gen: "exps/1", N: 2*c + 5, Seed: uint64(400 + s), Args: exps(kvCodebook[:]...)}})
	}
	vs = append(vs, Valid{ID: "calibrated/c4096", Chunk: 4096, Checksums: true,
		Spec: &Spec{Gen: "exps/1", N: 10000, Seed: 499, Args: exps(kvCodebook[:]...)}})
	return genAll(g, vs)
}

// burst is a burst/1 input: n values of kvCB's exponents with escapes at (start, count, stride) triples.
func burst(n int, seed uint64, triples ...int64) *Spec {
	return &Spec{Gen: "burst/1", N: n, Seed: seed, Args: triples}
}

// Base cases of the invalid categories (kept valid here, under escape-bursts): their chunk mixes are what the
// mutations need.
const (
	baseMixed1K      = "escape-bursts/mixed/c1024"       // coded (5 escapes), raw, coded (0), coded tail m=101 (2)
	baseMixed1KNoCRC = "escape-bursts/mixed/c1024/nocrc" //
	baseRawTail      = "escape-bursts/rawtail/c1024"     // coded (3 escapes), raw tail m=101
	baseRawTailNoCRC = "escape-bursts/rawtail/c1024/nocrc"
	baseK1500        = "escape-bursts/k1500/c65536" // coded with 1,500 escapes, coded tail m=3001 (10)
	baseK1500NoCRC   = "escape-bursts/k1500/c65536/nocrc"
	baseMixed8K      = "escape-bursts/mixed/c8192/nocrc" // coded (300), raw, coded tail m=777 (50)
)

func genBursts(g *Gen) error {
	mixed := burst(3*1024+101, 51, 10, 5, 100, 1024, 200, 4, 3072+7, 1, 1, 3072+90, 1, 1)
	rawTail := burst(1024+101, 52, 1, 3, 300, 1024, 60, 1)
	k1500 := burst(65536+3001, 53, 100, 1500, 37, 65536+5, 10, 200)
	mixed8K := burst(2*8192+777, 54, 3, 300, 20, 8192, 1500, 5, 16384+1, 50, 15)
	return genAll(g, []Valid{
		{ID: "mixed/c1024", Spec: mixed, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "mixed/c1024/nocrc", Spec: mixed, Chunk: 1024, Codebook: &kvCB},
		{ID: "rawtail/c1024", Spec: rawTail, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "rawtail/c1024/nocrc", Spec: rawTail, Chunk: 1024, Codebook: &kvCB},
		{ID: "k1500/c65536", Spec: k1500, Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "k1500/c65536/nocrc", Spec: k1500, Chunk: 65536, Codebook: &kvCB},
		{ID: "mixed/c8192/nocrc", Spec: mixed8K, Chunk: 8192, Codebook: &kvCB},
		// The coded/raw threshold: 4k < rawSide(m) is coded, ties go raw.
		{ID: "k127/c1024", Spec: burst(1024, 60, 0, 127, 8), Chunk: 1024, Codebook: &kvCB, Checksums: true, Note: "coded, the most escapes"},
		{ID: "k128/c1024", Spec: burst(1024, 61, 0, 128, 8), Chunk: 1024, Codebook: &kvCB, Checksums: true, Note: "raw: the tie"},
		{ID: "head/c1024/nocrc", Spec: burst(1024, 62, 0, 100, 1), Chunk: 1024, Codebook: &kvCB},
		{ID: "tail/c1024", Spec: burst(1024, 63, 924, 100, 1), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "straddle/c1024", Spec: burst(2048, 64, 974, 100, 1), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "first-last/c1024/nocrc", Spec: burst(1024, 65, 0, 1, 1, 1023, 1, 1), Chunk: 1024, Codebook: &kvCB},
		{ID: "alternate/c1024", Spec: burst(4096, 66, 0, 127, 8, 1024, 128, 8, 4095, 1, 1), Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "partial12/c1024", Spec: burst(1024+100, 67, 1024, 12, 8), Chunk: 1024, Codebook: &kvCB, Checksums: true, Note: "m=100: coded at 12"},
		{ID: "partial13/c1024/nocrc", Spec: burst(1024+100, 68, 1024, 13, 7), Chunk: 1024, Codebook: &kvCB, Note: "m=100: raw at 13"},
		{ID: "k511/c4096", Spec: burst(4096, 69, 1, 511, 8), Chunk: 4096, Codebook: &kvCB, Checksums: true},
		{ID: "k512/c4096/nocrc", Spec: burst(4096, 70, 1, 512, 8), Chunk: 4096, Codebook: &kvCB},
		{ID: "k1023/c65536", Spec: burst(65536, 71, 0, 1023, 64), Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "k1024/c65536/nocrc", Spec: burst(65536, 72, 0, 1024, 64), Chunk: 65536, Codebook: &kvCB},
		{ID: "k1025/c65536", Spec: burst(65536, 73, 0, 1025, 63), Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "k4096/c65536", Spec: burst(65536, 74, 3, 4096, 16), Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "k8191/c65536", Spec: burst(65536, 75, 0, 8191, 8), Chunk: 65536, Codebook: &kvCB, Checksums: true, Note: "coded, the most escapes"},
		{ID: "k8192/c65536/nocrc", Spec: burst(65536, 76, 0, 8192, 8), Chunk: 65536, Codebook: &kvCB, Note: "raw: the tie"},
		{ID: "head2000/c65536", Spec: burst(2*65536, 77, 0, 2000, 1, 65536, 2000, 1), Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "tail3000/c32768/nocrc", Spec: burst(32768, 78, 32768-3000, 3000, 1), Chunk: 32768, Codebook: &kvCB},
	})
}

func genCodebookUnused(g *Gen) error {
	zeros := make([]byte, 2*2000)
	return genAll(g, []Valid{
		{ID: "one-exponent/calibrated/c1024", Spec: &Spec{Gen: "exps/1", N: 3000, Seed: 81, Args: exps(127)},
			Chunk: 1024, Checksums: true, Note: "15 unused entries"},
		{ID: "three-at-end/c2048", Spec: &Spec{Gen: "exps/1", N: 3000, Seed: 82, Args: exps(120, 121, 122)},
			Chunk: 2048, Checksums: true, Codebook: &codec.Codebook{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 120, 121, 122}},
		{ID: "descending-top/c1024/nocrc", Spec: &Spec{Gen: "exps/1", N: 3000, Seed: 83, Args: exps(255, 250, 241)},
			Chunk: 1024, Codebook: &codec.Codebook{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240}},
		{ID: "disjoint/c4096", Spec: &Spec{Gen: "kvlike/1", N: 9000, Seed: 84}, Chunk: 4096, Checksums: true,
			Codebook: &codec.Codebook{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, Note: "no entry used: raw"},
		{ID: "half/c1024", Spec: &Spec{Gen: "kvlike/1", N: 9000, Seed: 85}, Chunk: 1024, Checksums: true,
			Codebook: &codec.Codebook{120, 121, 122, 123, 124, 125, 126, 127, 0, 1, 2, 3, 4, 5, 6, 7}},
		{ID: "zeros/no-zero/c1024/nocrc", Bytes: zeros, Chunk: 1024, Codebook: &kvCB},
		{ID: "zeros/last/c1024", Bytes: zeros, Chunk: 1024, Codebook: withLast(0), Checksums: true},
	})
}

// kvSamples are the real KV tensors copied into corpus/splitzip4/kv-stories260k.bin by `go run ./conformance/gen
// -import-kv`: 4 tensors of [512, 4, 8] BF16 values.
var kvSamples = []string{"seq0.layer0.k", "seq0.layer0.v", "seq7.layer2.k", "seq15.layer4.v"}

// KVSampleNames are the tensors of the shared stories260K KV test file that the corpus copies.
func KVSampleNames() []string { return append([]string(nil), kvSamples...) }

// KVSourceFile is the source file of the real KV samples.
const KVSourceFile = "kv-stories260k.bin"

func genKV(g *Gen) error {
	src, err := g.Source(KVSourceFile)
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
			Valid{ID: name + "/calibrated/c65536", Bytes: b, Shape: shape, Chunk: 65536, Checksums: true},
			Valid{ID: name + "/kvcb/c1024/nocrc", Bytes: b, Shape: shape, Chunk: 1024, Codebook: &kvCB},
			Valid{ID: name + "/kvcb/c4096", Bytes: b, Shape: shape, Chunk: 4096, Codebook: &kvCB, Checksums: true})
	}
	vs = append(vs,
		Valid{ID: "all4/calibrated/c65536", Bytes: src, Shape: []uint64{4, 512, 4, 8}, Chunk: 65536, Checksums: true},
		Valid{ID: "all4/calibrated/c16384/nocrc", Bytes: src, Shape: []uint64{4, 512, 4, 8}, Chunk: 16384})
	return genAll(g, vs)
}

func genSynthetic(g *Gen) error {
	vs := []Valid{
		{ID: "gauss/s0/calibrated/c65536", Spec: &Spec{Gen: "gauss/1", N: 100000, Seed: 91, Args: []int64{0}}, Chunk: 65536, Checksums: true},
		{ID: "gauss/s-20/calibrated/c16384/nocrc", Spec: &Spec{Gen: "gauss/1", N: 50000, Seed: 92, Args: []int64{-20}}, Chunk: 16384},
		{ID: "gauss/s40/calibrated/c4096", Spec: &Spec{Gen: "gauss/1", N: 50000, Seed: 93, Args: []int64{40}}, Chunk: 4096, Checksums: true},
		{ID: "gauss/s0/kvcb/c1024", Spec: &Spec{Gen: "gauss/1", N: 50000, Seed: 94, Args: []int64{0}}, Chunk: 1024, Codebook: &kvCB, Checksums: true},
		{ID: "kvlike/1M/kvcb/c65536", Spec: &Spec{Gen: "kvlike/1", N: 1 << 20, Seed: 95}, Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "kvlike/1M/calibrated/c16384/nocrc", Spec: &Spec{Gen: "kvlike/1", N: 1 << 20, Seed: 95}, Chunk: 16384},
		{ID: "uniform/kvcb/c65536", Spec: &Spec{Gen: "uniform/1", N: 100000, Seed: 96}, Chunk: 65536, Codebook: &kvCB, Checksums: true},
		{ID: "uniform/calibrated/c1024/nocrc", Spec: &Spec{Gen: "uniform/1", N: 100000, Seed: 97}, Chunk: 1024},
	}
	for i, ppm := range []int64{1000, 10000, 50000, 100000, 125000, 500000} {
		vs = append(vs, Valid{ID: fmt.Sprintf("escmix/%dppm/kvcb/c65536", ppm), Chunk: 65536, Codebook: &kvCB,
			Checksums: i%2 == 0, Spec: &Spec{Gen: "escmix/1", N: 200000, Seed: uint64(98 + i), Args: []int64{ppm}}})
	}
	return genAll(g, vs)
}

func genStored(g *Gen) error {
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
		{ID: "i32/n5", Bytes: seq(20), DType: layout.DTypeI32, Chunk: 65536, Checksums: true},
		{ID: "bf16/n0/nocrc", Bytes: []byte{}, Chunk: 65536},
		{ID: "bf16/scalar", Bytes: vals(0x3F80), Shape: []uint64{}, Chunk: 1024, Checksums: true},
	})
}
