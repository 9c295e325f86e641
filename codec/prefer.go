package codec

// preferLists are the format lists (WithFormat syntax) of the prefer modes, one source for every front end: the
// CLI's --prefer, the C ABI and the Python package all resolve a mode here, so their payloads agree byte for byte.
var preferLists = map[string]string{
	// speed: the fastest coder of each dtype, never stored: BF16 splitzip4; F16, F32 and F8_E5M2 xw4; F8_E4M3 xw3
	// (xw4 does not code it).
	"speed": "splitzip4,xw4,xw3",
	// balanced: auto, each tensor (or chunk) in the smallest fixed-width format, so at least the ratio of each.
	"balanced": "auto",
	// ratio: the smallest payload: BF16 huff (entropy-coded exponents); other dtypes auto, as balanced.
	"ratio": "huff,auto",
}

// PreferFormats returns the format list (as WithFormat takes it) of a prefer mode: "speed", "balanced" or "ratio".
// ok is false for any other name.
func PreferFormats(mode string) (formats string, ok bool) {
	formats, ok = preferLists[mode]
	return formats, ok
}
