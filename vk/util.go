package vk

import (
	"math"
	"math/bits"
)

// ticksToNanos multiplies by a float32 period without float64 rounding of
// large tick counts: period = m * 2^e with a 24-bit integer m.
func ticksToNanos(ticks uint64, period float32) uint64 {
	if period == 1 {
		return ticks
	}
	frac, exp := math.Frexp(float64(period))
	m := uint64(frac * (1 << 24))
	e := exp - 24
	hi, lo := bits.Mul64(ticks, m)
	if e >= 0 {
		return lo << uint(e)
	}
	s := uint(-e)
	if s >= 64 {
		return hi >> (s - 64)
	}
	return lo>>s | hi<<(64-s)
}
