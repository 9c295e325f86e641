package calib

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

func TestCalibrateOrder(t *testing.T) {
	var h Histogram
	// 20 exponents: counts descend with a few ties, listed out of order.
	counts := map[uint8]uint64{
		200: 50, 3: 90, 130: 90, 129: 90, 7: 5, 8: 5, 9: 5, 250: 1000, 100: 1, 101: 1,
		102: 1, 103: 1, 104: 1, 105: 1, 106: 1, 107: 1, 108: 1, 109: 1, 110: 1, 0: 1,
	}
	for e, c := range counts {
		h[e] = c
	}
	cb, st := Calibrate(h)
	want := codec.Codebook{250, 3, 129, 130, 200, 7, 8, 9, 0, 100, 101, 102, 103, 104, 105, 106}
	assert.Equal(t, want, cb)
	require.NoError(t, cb.Validate())

	assert.Equal(t, uint64(1347), st.Values)
	assert.Equal(t, 20, st.Distinct)
	assert.Equal(t, uint64(4), st.EscapedValues) // 107..110
	assert.Equal(t, [16]uint64{1000, 90, 90, 90, 50, 5, 5, 5, 1, 1, 1, 1, 1, 1, 1, 1}, st.Counts)
}

func TestCalibrateDeterministic(t *testing.T) {
	var h Histogram
	for e := range h {
		h[e] = uint64(e % 3) // many ties
	}
	first, _ := Calibrate(h)
	for range 20 {
		cb, _ := Calibrate(h)
		require.Equal(t, first, cb)
	}
	// Count 2: exponents 2, 5, 8, ... ascending.
	assert.Equal(t, codec.Codebook{2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47}, first)
}

func TestCalibrateFill(t *testing.T) {
	h := Histogram{5: 10, 1: 10, 200: 3}
	cb, st := Calibrate(h)
	assert.Equal(t, codec.Codebook{1, 5, 200, 0, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14}, cb)
	require.NoError(t, cb.Validate())
	assert.Equal(t, 1.0, st.Coverage)
	assert.Zero(t, st.EscapeRate)
	assert.Zero(t, st.EscapedValues)
	assert.Equal(t, 3, st.Distinct)

	cb, st = Calibrate(Histogram{})
	assert.Equal(t, codec.Codebook{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, cb)
	assert.Zero(t, st.Values)
	assert.Equal(t, 1.0, st.Coverage)
	assert.Zero(t, st.EscapeRate)
}

func TestEvaluate(t *testing.T) {
	cb := codec.Codebook{120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135}
	h := Histogram{120: 600, 135: 300, 119: 60, 136: 40}
	st := Evaluate(cb, h)
	assert.Equal(t, uint64(1000), st.Values)
	assert.Equal(t, 4, st.Distinct)
	assert.InDelta(t, 0.9, st.Coverage, 1e-15)
	assert.InDelta(t, 0.1, st.EscapeRate, 1e-15)
	assert.Equal(t, uint64(100), st.EscapedValues)
	assert.Equal(t, uint64(600), st.Counts[0])
	assert.Equal(t, uint64(300), st.Counts[15])
	assert.InDelta(t, h.Entropy(), st.EntropyBits, 0)

	// A codebook that repeats an exponent does not count its values twice.
	bad := cb
	bad[1] = 120
	st = Evaluate(bad, h)
	assert.InDelta(t, 0.9, st.Coverage, 1e-15)
}

func TestCalibrateCoverage(t *testing.T) {
	// 17 exponents with counts 17, 16, ..., 1: the least frequent one is escaped.
	var h Histogram
	for i := range 17 {
		h[100+i] = uint64(17 - i)
	}
	_, st := Calibrate(h)
	assert.Equal(t, uint64(153), st.Values)
	assert.Equal(t, uint64(1), st.EscapedValues)
	assert.InDelta(t, 1.0/153, st.EscapeRate, 1e-15)
	assert.InDelta(t, 152.0/153, st.Coverage, 1e-15)
}
