package codec

import "github.com/vkzip/vkzip/codec/layout"

// Codebook is a SplitZip-4 exponent codebook: code i stands for BF16 exponent Codebook[i]. The 16 entries must be
// distinct; their order is part of the payload (calibration orders them by descending frequency, ties by exponent).
type Codebook [layout.CodebookSize]uint8

// NoCode marks an exponent that has no code (it is escaped) in a CodeTable.
const NoCode = 0xFF

// Validate checks that the entries are distinct.
func (cb *Codebook) Validate() error {
	var seen [256]bool
	for i, e := range cb {
		if seen[e] {
			return errorf(ErrCorrupt, "codebook entry %d repeats exponent %d", i, e)
		}
		seen[e] = true
	}
	return nil
}

// CodeTable maps every exponent to its code, or NoCode when the exponent must be escaped.
func (cb *Codebook) CodeTable() [256]uint8 {
	var t [256]uint8
	for i := range t {
		t[i] = NoCode
	}
	for i, e := range cb {
		t[e] = uint8(i)
	}
	return t
}

// Has reports whether exponent e has a code.
func (cb *Codebook) Has(e uint8) bool {
	for _, x := range cb {
		if x == e {
			return true
		}
	}
	return false
}
