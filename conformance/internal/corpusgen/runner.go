package corpusgen

import (
	"context"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/conformance"
)

// The runner's types and calls under the names the generator uses.

type (
	Op       = conformance.Op
	Case     = conformance.Case
	Manifest = conformance.Manifest
	Input    = conformance.Input
	Expect   = conformance.Expect
	Invalid  = conformance.Invalid
)

const (
	LevelBody      = conformance.LevelBody
	LevelContainer = conformance.LevelContainer
	GenBytes       = conformance.GenBytes
	Schema         = conformance.Schema
)

var (
	ClassName       = conformance.ClassName
	RegisterInput   = conformance.RegisterInput
	apply           = conformance.Apply
	errChunk        = conformance.ErrChunk
	parseCodebook   = conformance.ParseCodebook
	shiftOf         = conformance.ShiftOf
	sha             = conformance.SHA256
	lookupInput     = conformance.LookupInput
	kvCodebook      = conformance.KVCodebook()
	outsideKV       = conformance.OutsideKV()
	bf16            = conformance.BF16
	put             = conformance.PutBF16
	decodeBody      = conformance.DecodeBody
	decodeContainer = conformance.DecodeContainer
	decodeInvalid   = conformance.DecodeInvalid
)

// encoded is conformance.Encoded under the generator's field names.
type encoded struct {
	body, container, containerV2 []byte
	bodyErr, contErr, contV2Err  error
}

func encodeCase(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, in []byte) (encoded, error) {
	e, err := conformance.ReferenceEncode(ctx, b, f, c, cb, in)
	return encoded{e.Body, e.Container, e.ContainerV2, e.BodyErr, e.ContErr, e.ContV2Err}, err
}

// rng is the inputs' generator (conformance.RNG).
type rng struct{ r *conformance.RNG }

func newRNG(seed uint64) rng  { return rng{conformance.NewRNG(seed)} }
func (r rng) next() uint64    { return r.r.Next() }
func (r rng) below(n int) int { return r.r.Below(n) }

// Verify, when set, checks a format's generated files (name → contents, as GenerateFormat returns them) before
// Generate writes any of them; an error stops Generate with none of that format's files written. The corpus
// generator (conformance/gen) sets it to hold the corpus to an independent implementation of the format, which
// the vkzip binary does not link.
var Verify func(format string, files map[string][]byte) error
