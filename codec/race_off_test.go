//go:build !race

package codec

const raceEnabled = false

// flipStride is the step of the exhaustive bit-flip tests over a body's bits (race_on_test.go: a sample under the
// race detector).
const flipStride = 1
