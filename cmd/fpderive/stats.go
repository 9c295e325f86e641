package main

import "math"

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
