// Package vktune holds the tuning knobs of the Vulkan backend (codec/vkcodec): workgroup sizes, grids, table
// layouts and kernel variants that change speed, never bytes. Every knob's zero value is the shipped default, so a
// zero Params (or a nil *Params in vkcodec.Options.Tune) is the product's configuration.
//
// The package is internal on purpose: only code of this module (the lab command cmd/vkzip-lab, tests) can set a
// knob; users of the library and of the vkzip command get the defaults, which are the fastest measured on the
// reference card (bench/RESULTS.md). No knob is read from the environment.
package vktune

// Params are the tuning knobs of one vkcodec.Backend. Values out of a knob's range are clamped where the backend
// applies them (to the device's limits as well), except CRCBits, which Open refuses outside 4 to 8.
type Params struct {
	// WorkGroup is the threads per workgroup of the chunk kernels (SplitZip-4, zf12, TBE-3, the copy). Default 256;
	// at least the device's widest subgroup, at most its limit, and halved until the kernels' shared memory fits.
	// Wider groups share one copy of the CRC tables among more threads but hold fewer groups per SM.
	WorkGroup int
	// Repl replicates the CRC tables in shared memory (default 1): fewer bank conflicts for more shared memory
	// (dropped first when the kernels do not fit).
	Repl int
	// CRCBits is the register bits per CRC shift-table lookup, 4 to 8, for every kernel (default 0: each kernel's
	// fastest, 4 to 8 by kernel). Narrow tables take less shared memory and more lookups.
	CRCBits int
	// Groups is the workgroups per dispatch (default 0: 4096 on GPUs, 256 on CPU devices). Fewer groups loop more
	// chunks each; a set value also keeps small tensors from getting wider workgroups.
	Groups int
	// EscCap is the escapes the SplitZip-4 decoder stages in shared memory per workgroup (default 1024): more
	// staged escapes for more shared memory (halved, down to 64, when the kernels do not fit).
	EscCap int
	// Unroll is the 8-value slots each thread of the chunk kernels loads together (default 0: each kernel's
	// fastest, 4 for the SplitZip-4 encoder and decoder, 2 elsewhere): more loads in flight for more registers.
	Unroll int
	// SZ4PlaceWG is the workgroup of SplitZip-4's placement pass (default 32, or the widest subgroup where that is
	// more; at most 1024).
	SZ4PlaceWG uint32
	// XWEncodeWG and XWDecodeWG are the workgroups of the exponent-window encoder (default 1024, or the device's
	// limit: a chunk's value words stay in registers across the window choice) and decoder (default WorkGroup).
	XWEncodeWG, XWDecodeWG uint32
	// TBE3WG is the workgroup of the TBE-3 encode, placement and decode kernels (default 128, or WorkGroup where
	// that is less; at most a chunk's 32-value units).
	TBE3WG uint32
	// Queues is the compute queues the device opens, 1 to 8 (default 0: min(4, what the queue family offers)):
	// more queues let more submissions run at once, each queue costs driver resources.
	Queues int
	// Huff holds the knobs of the huff kernels.
	Huff Huff
	// DebugBounds builds the SplitZip-4 and zf12 decoders with clamp counting (status word 4, DecodeOp.Clamps):
	// a test hook for the bounds checks, slower; default off.
	DebugBounds bool
}

// Huff are the knobs of the huff (format 5) kernels: huff_encode, sz4_scan, huff_place for encode; huff_decode (or
// huff_decode_i64) and huff_check for decode. Workgroup sizes are rounded down to whole teams of 32 invocations and
// capped at Params.WorkGroup.
type Huff struct {
	// EncodeWG is the encoder's workgroup, 32 × segments per lane (default 256).
	EncodeWG uint32
	// PlaceWG is the placement pass's workgroup (default 128).
	PlaceWG uint32
	// DecodeWG is the decoder's workgroup, 32 invocations per chunk in flight (default 128: 4 chunks; halved until
	// its shared memory fits the device). More chunks per group share less of an SM with other groups.
	DecodeWG uint32
	// DecodeGroups caps the decoder's workgroups (default 0: the backend's grid, Params.Groups).
	DecodeGroups uint32
	// CheckWG is the workgroup of the decoder's checksum pass (default 128).
	CheckWG uint32
	// CheckGroups caps the checksum pass's workgroups (default 0: as many as its words need).
	CheckGroups uint32
	// CheckFirst records the checksum pass before the decoder instead of after it (default off).
	CheckFirst bool
	// Batch is the loads each invocation issues together (source, low, piece and CRC words), at most 32 (default
	// 8): more loads in flight for more registers.
	Batch uint32
	// CacheShift: the encoder keeps the exponents of chunks of up to 2^CacheShift values in shared memory (default
	// 14); larger chunks read them again from memory.
	CacheShift uint32
	// NoTeamSync turns off running each decode team of 32 as one subgroup synced by subgroup barriers, which is
	// the default wherever the device's subgroups are exactly 32 invocations and can be required full.
	NoTeamSync bool
	// NoInt64 turns off the decoder built with 64- and 16-bit integers (huff_decode_i64: one funnel shift per lane
	// window, 16-bit table entries), which is the default wherever the device enabled shaderInt64 and shaderInt16.
	NoInt64 bool
	// TableEntries is the 16-bit entries of a chunk's decode tables in the decoder's shared memory: 256, 512 or
	// 1024 (default 0: 1024; other values mean the default). Smaller tables leave room for more chunks in flight
	// and send more codes to the second level.
	TableEntries uint32
	// L1Bits is the fewest index bits of the decoder tables' first level (default 6, clamped to 5 to 9).
	L1Bits uint32
	// TwoReads reads both levels of the decoder's tables for every code, the first choosing, instead of the one
	// level chosen by the code's index (default off).
	TwoReads bool
	// RingFill is the words each decode lane loads into its ring per block (default 2, clamped to 1 to 4).
	RingFill uint32
	// LowAhead is how many blocks ahead the decoder loads the low words (default 1, clamped to 1 to 3): earlier
	// loads for more registers.
	LowAhead uint32
}

// Or is v, or def where v is zero (a knob left at its default).
func Or[T int | uint32](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
