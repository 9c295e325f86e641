package layout

// Geometry of the exponent-window formats (docs/FORMAT.md §13); their constants are in layout.go.

// XWCodeBits is the code width of an exponent-window format (ok false for other formats).
func XWCodeBits(format uint8) (w uint, ok bool) {
	switch format {
	case FormatXW2:
		return 2, true
	case FormatXW3:
		return 3, true
	case FormatXW4:
		return 4, true
	}
	return 0, false
}

// FloatFields gives the exponent and mantissa widths of the dtypes the exponent-window formats code.
func FloatFields(d DType) (exp, man uint, ok bool) {
	switch d {
	case DTypeF8E5M2:
		return 5, 2, true
	case DTypeF8E4M3:
		return 4, 3, true
	case DTypeF16:
		return 5, 10, true
	case DTypeF32:
		return 8, 23, true
	}
	return 0, 0, false
}

// XW is the size arithmetic of an exponent-window body: N values of a dtype with E exponent and M mantissa bits,
// W-bit codes, chunks of 1<<Shift values. The rest r = sign<<M | mantissa has K = M+1 bits: its low 8·KB bits go to
// the byte stream (KB bytes per value), its top KP bits to planes, with the W code bits: P planes per group.
type XW struct {
	N     uint64
	Shift uint
	E, M  uint // exponent and mantissa bits
	W     uint // code bits, 1 ≤ W < E
}

// NewXW returns the geometry of format f over dtype d (ok false when the pair is not defined).
func NewXW(f uint8, d DType, n uint64, shift uint) (XW, bool) {
	w, ok1 := XWCodeBits(f)
	e, m, ok2 := FloatFields(d)
	if !ok1 || !ok2 || w >= e {
		return XW{}, false
	}
	return XW{N: n, Shift: shift, E: e, M: m, W: w}, true
}

func (x XW) K() uint             { return x.M + 1 }
func (x XW) KB() uint            { return x.K() / 8 }
func (x XW) KP() uint            { return x.K() % 8 }
func (x XW) Planes() uint        { return x.W + x.KP() }
func (x XW) Window() uint        { return 1<<x.W - 1 }          // exponents with a code
func (x XW) MaxBase() uint       { return 1<<x.E - x.Window() } // largest window base
func (x XW) ChunkValues() uint64 { return 1 << x.Shift }
func (x XW) Chunks() uint64      { return (x.N + x.ChunkValues() - 1) >> x.Shift }
func (x XW) Groups() uint64      { return (x.N + XWGroup - 1) / XWGroup }

// PlaneBytes is the length of the plane stream: P words per group.
func (x XW) PlaneBytes() uint64 { return 4 * uint64(x.Planes()) * x.Groups() }

// LowBytes is the padded length of the byte stream.
func (x XW) LowBytes() uint64 { return Align4(uint64(x.KB()) * x.N) }

func (x XW) TableOffset() uint64 { return x.PlaneBytes() + x.LowBytes() }
func (x XW) SideOffset() uint64  { return x.TableOffset() + ChunkEntrySize*x.Chunks() }

// ChunkLen is the number of values in chunk c.
func (x XW) ChunkLen(c uint64) uint64 {
	start := c << x.Shift
	if start >= x.N {
		return 0
	}
	return min(x.ChunkValues(), x.N-start)
}

// RawSide is the side piece of a raw chunk of m values: the high E-W exponent bits as planes.
func (x XW) RawSide(m uint64) uint64 { return 4 * uint64(x.E-x.W) * ((m + XWGroup - 1) / XWGroup) }

// CodedSide is the side piece of a coded chunk with k escapes: E planes per 32 escapes.
func (x XW) CodedSide(k uint64) uint64 { return 4 * uint64(x.E) * ((k + XWGroup - 1) / XWGroup) }

// CodedFits reports whether a chunk of m values with k escapes is coded (else raw; the tie goes to raw).
func (x XW) CodedFits(m, k uint64) bool { return x.CodedSide(k) < x.RawSide(m) }

// MaxBodySize bounds the body for any data: raw chunks everywhere.
func (x XW) MaxBodySize() uint64 {
	full := x.N >> x.Shift
	side := full * x.RawSide(x.ChunkValues())
	if rest := x.N - full<<x.Shift; rest > 0 {
		side += x.RawSide(rest)
	}
	return x.SideOffset() + side
}

// MinBodySize is the body size with no escapes at all.
func (x XW) MinBodySize() uint64 { return x.SideOffset() }
