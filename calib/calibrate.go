package calib

import (
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// Stats describe how a codebook covers the values of a histogram.
type Stats struct {
	Values        uint64                      `json:"values"`         // values counted
	Distinct      int                         `json:"distinct"`       // exponents that occur
	EntropyBits   float64                     `json:"entropy_bits"`   // Shannon entropy of the exponents, bits per value
	Coverage      float64                     `json:"coverage"`       // fraction of values whose exponent has a code; 1 when there are none
	EscapeRate    float64                     `json:"escape_rate"`    // 1 - Coverage: fraction of values escaped
	EscapedValues uint64                      `json:"escaped_values"` // values whose exponent has no code
	Counts        [layout.CodebookSize]uint64 `json:"counts"`         // Counts[i]: values coded with code i
}

// Calibrate picks the codebook for data with exponent histogram h: the 16 exponents by descending count, ties
// broken by ascending exponent. When fewer than 16 exponents occur, the rest are filled in the same order, that
// is the absent exponents from 0 up, so that the codebook always has 16 distinct entries and depends only on h.
func Calibrate(h Histogram) (codec.Codebook, Stats) {
	cb := codec.CodebookFromHistogram((*codec.ExpHistogram)(&h))
	return cb, Evaluate(cb, h)
}

// Evaluate measures codebook cb on data with exponent histogram h, for instance a codebook calibrated on one
// sample against another. An exponent listed twice in cb (an invalid codebook) is counted once.
func Evaluate(cb codec.Codebook, h Histogram) Stats {
	s := Stats{
		Values:      h.Total(),
		Distinct:    h.Distinct(),
		EntropyBits: h.Entropy(),
	}
	var coded [256]bool
	var covered uint64
	for i, e := range cb {
		s.Counts[i] = h[e]
		if !coded[e] {
			coded[e] = true
			covered += h[e]
		}
	}
	s.EscapedValues = s.Values - covered
	s.Coverage, s.EscapeRate = 1, 0
	if s.Values > 0 {
		// Both from counts rather than one as 1 minus the other, so a tiny escape rate keeps its precision.
		s.Coverage = float64(covered) / float64(s.Values)
		s.EscapeRate = float64(s.EscapedValues) / float64(s.Values)
	}
	return s
}
