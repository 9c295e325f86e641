//go:build race

package codec

const raceEnabled = true

// flipStride is the step of the exhaustive bit-flip tests over a body's bits. Under the race detector, which makes
// their single-payload decodes about ten times slower and has no race to find in a plain run's cases, they try
// every 11th bit: odd, so every bit position within a byte is still flipped. A plain run tries every bit.
const flipStride = 11
