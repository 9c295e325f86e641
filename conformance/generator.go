package conformance

import (
	"context"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// The runner's pieces the corpus generator (conformance/internal/corpusgen) builds on, so that the generator
// computes expectations with exactly the calls the runner checks backends with, and draws its inputs from the
// same frozen generators. The vkzip binary links the runner only.

// Encoded is what ReferenceEncode produced for a case: its body (nil where the format has no body-level path)
// and its containers (version 1 and 2), each with the error of its call.
type Encoded struct {
	Body, Container, ContainerV2 []byte
	BodyErr, ContErr, ContV2Err  error
}

// ReferenceEncode encodes a case's input on b as the runner does.
func ReferenceEncode(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, in []byte) (Encoded, error) {
	e, err := encodeCase(ctx, b, f, c, cb, in)
	return Encoded{e.body, e.container, e.containerV2, e.bodyErr, e.contErr, e.contV2Err}, err
}

// DecodeBody decodes a body on b as the runner does; the error is the job's verdict or the call's failure.
func DecodeBody(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, checksums bool,
	body []byte, outBytes int) ([]byte, error) {
	return decodeBody(ctx, b, f, c, cb, checksums, body, outBytes)
}

// DecodeContainer decodes a whole payload on b as the runner does.
func DecodeContainer(b codec.Backend, payload []byte) ([]byte, error) {
	return decodeContainer(b, payload)
}

// DecodeInvalid decodes an invalid payload on b as the runner does and returns its verdict; callErr is a call
// that failed as a call.
func DecodeInvalid(ctx context.Context, b codec.Backend, f Format, base *Case, iv *Invalid, payload []byte) (verdict, callErr error) {
	return decodeInvalid(ctx, b, f, base, iv, payload)
}

// Apply applies a case's edit operations to p (data is the corpus's data.bin).
func Apply(p []byte, ops []Op, data []byte) ([]byte, error) { return apply(p, ops, data) }

// ErrChunk is the chunk index an error names, -1 for none.
func ErrChunk(err error) int64 { return errChunk(err) }

// ParseCodebook parses a case's hex codebook.
func ParseCodebook(s string) (codec.Codebook, error) { return parseCodebook(s) }

// ShiftOf is the chunk shift of a chunk size in values.
func ShiftOf(chunk int) (uint, error) { return shiftOf(chunk) }

// SHA256 is the hex SHA-256 the corpus records.
func SHA256(b []byte) string { return sha(b) }

// LookupInput finds a registered input generator.
func LookupInput(name string) (InputFunc, bool) { return lookupInput(name) }

// KVCodebook is the codebook of the KV-like inputs (the 16 most common exponents of BF16 KV caches).
func KVCodebook() [16]uint8 { return kvCodebook }

// OutsideKV lists the exponents outside KVCodebook's.
func OutsideKV() []uint8 { return append([]uint8(nil), outsideKV...) }

// BF16 is the BF16 value with x's sign and mantissa bits and exponent e.
func BF16(x uint64, e uint8) uint16 { return bf16(x, e) }

// PutBF16 stores v as value i of dst (little endian).
func PutBF16(dst []byte, i int, v uint16) { put(dst, i, v) }

// RNG is the inputs' SplitMix64 generator.
type RNG struct{ r rng }

// NewRNG seeds an RNG.
func NewRNG(seed uint64) *RNG { return &RNG{rng{seed}} }

// Next is the next 64 random bits.
func (r *RNG) Next() uint64 { return r.r.next() }

// Below is a uniform number in [0, n), n ≤ 2^32.
func (r *RNG) Below(n int) int { return r.r.below(n) }

// NumValues is the number of values of the case's tensor (the product of its shape).
func (c *Case) NumValues() uint64 { return c.values() }

// ParsedDType is the case's dtype.
func (c *Case) ParsedDType() (layout.DType, error) { return c.dtype() }
