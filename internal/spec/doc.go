// Package spec is a second implementation of vkzip's payload format written from docs/FORMAT.md alone, without
// reading the codec it checks: SplitZip-4 bodies (§5), the container (§1–§3, §4.3) in versions 1 and 2, and the
// chunk formats TBE-3 (§12), zf12 (§10), huff (§14) and the exponent-window formats (§13). Tests compare the
// codec's bytes and verdicts with this package's, so expected hashes never come only from the code under test.
//
// It favours plainness over speed (value at a time, whole-message CRCs) and imports only the standard library.
// It is not linked into the vkzip binary.
package spec

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// Error classes of docs/FORMAT.md §6. Every error this package returns for a bad payload wraps exactly one.
var (
	ErrFormat       = errors.New("spec: bad magic")
	ErrVersion      = errors.New("spec: unknown version or flags")
	ErrTruncated    = errors.New("spec: truncated")
	ErrChecksum     = errors.New("spec: checksum mismatch")
	ErrCorrupt      = errors.New("spec: corrupt")
	ErrNonCanonical = errors.New("spec: non-canonical")
	ErrTooLarge     = errors.New("spec: too large")
	ErrUnsupported  = errors.New("spec: unsupported format")
	// ErrInput is a bad argument to an encoder (not a payload error).
	ErrInput = errors.New("spec: invalid input")
)

// ChunkError is a body error at one chunk (the lowest-numbered of the deciding class, §6).
type ChunkError struct {
	Class error
	Chunk int64
	What  string
}

func (e *ChunkError) Error() string { return fmt.Sprintf("%v: chunk %d: %s", e.Class, e.Chunk, e.What) }
func (e *ChunkError) Unwrap() error { return e.Class }

func chunkErr(class error, c uint64, format string, a ...any) error {
	return &ChunkError{Class: class, Chunk: int64(c), What: fmt.Sprintf(format, a...)}
}

// ChunkOf is the chunk an error names, -1 for none.
func ChunkOf(err error) int64 {
	var ce *ChunkError
	if errors.As(err, &ce) {
		return ce.Chunk
	}
	return -1
}

func classErr(class error, format string, a ...any) error {
	return fmt.Errorf("%w: %s", class, fmt.Sprintf(format, a...))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the standard CRC-32C (§1) of the concatenation of parts.
func CRC32C(parts ...[]byte) uint32 {
	var c uint32
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func app32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func app16(b []byte, v uint16) []byte { return append(b, byte(v), byte(v>>8)) }

func app64(b []byte, v uint64) []byte { return app32(app32(b, uint32(v)), uint32(v>>32)) }
