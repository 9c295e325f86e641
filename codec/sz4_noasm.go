//go:build !amd64 || purego

package codec

// No assembly on this platform (or with -tags purego): the Go loops do everything.

const useAVX2 = false

type avx2EncTables struct{}

func newAVX2EncTables(*Codebook) (*avx2EncTables, bool) { return nil, false }

func encodeAVX2(src *byte, blocks int, codes *byte, lows *byte, esc *uint32, t *avx2EncTables) {}

func decodeAVX2(codes *byte, lows *byte, blocks int, dst *byte, cb *[32]byte, stream bool) {}

func countEscAVX2(src *byte, blocks int, t *avx2EncTables) int { return 0 }
