//go:build amd64 && !purego

package codec

import "golang.org/x/sys/cpu"

// The SplitZip-4 dense loops in AVX2 (sz4_amd64.s): 32 values per iteration, byte shuffles instead of per-value
// table lookups. They produce exactly what the Go loops do; tests compare the two on every length and codebook.

// useAVX2 is set when the CPU and OS support AVX2 (and can be cleared by tests to exercise the Go loops).
var useAVX2 = cpu.X86.HasAVX2

// avx2EncTables lets the encoder map exponents to codes with byte shuffles: the codebook's exponents are grouped
// by their high nibble (at most 4 groups for the assembly path), and per group a 16-byte table gives code+1 for
// each low nibble, 0 for "not in the codebook".
type avx2EncTables struct {
	hi  [4][32]byte // the group's high nibble in every byte; 0xFF for unused groups
	tab [4][32]byte // code+1 by low nibble, repeated in both 128-bit lanes
}

// newAVX2EncTables builds the tables; ok is false when the codebook spans more than 4 high nibbles.
func newAVX2EncTables(cb *Codebook) (t *avx2EncTables, ok bool) {
	t = &avx2EncTables{}
	var groups []uint8
	for _, e := range cb {
		h := e >> 4
		found := false
		for _, g := range groups {
			found = found || g == h
		}
		if !found {
			groups = append(groups, h)
		}
	}
	if len(groups) > 4 {
		return nil, false
	}
	for g := range t.hi {
		for i := range t.hi[g] {
			t.hi[g][i] = 0xFF
		}
	}
	for g, h := range groups {
		for i := range t.hi[g] {
			t.hi[g][i] = h
		}
		for code, e := range cb {
			if e>>4 == h {
				t.tab[g][e&15] = uint8(code) + 1
				t.tab[g][16+e&15] = uint8(code) + 1
			}
		}
	}
	return t, true
}

// encodeAVX2 encodes blocks×32 values from src: codes (16 bytes per block, escaped values coded 0), low bytes
// (32 per block) and one escape mask per block (bit i: value i has no code).
//
//go:noescape
func encodeAVX2(src *byte, blocks int, codes *byte, lows *byte, esc *uint32, t *avx2EncTables)

// decodeAVX2 decodes blocks×32 values from codes and low bytes into dst, taking exponents from the codebook
// (cb: the 16 exponents repeated in both lanes); escapes are patched by the caller. stream asks for non-temporal
// stores (outputs larger than the caches).
//
//go:noescape
func decodeAVX2(codes *byte, lows *byte, blocks int, dst *byte, cb *[32]byte, stream bool)

// countEscAVX2 counts the escapes among blocks×32 values.
//
//go:noescape
func countEscAVX2(src *byte, blocks int, t *avx2EncTables) int
