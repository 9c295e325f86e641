package spec

// The exponent-window formats xw2, xw3, xw4 (docs/FORMAT.md §13): an independent reference encoder, value-at-a-time
// bit placement straight from the text, with per-chunk choices the caller may bend to build non-canonical bodies.

// XWChoice is how a chunk is coded: raw, or coded with window base Base; Escape names chunk-local values escaped
// although inside the window (for non-canonical test bodies).
type XWChoice struct {
	Raw    bool
	Base   uint32
	Escape map[int]bool
}

// XWGeom is the geometry of §13.1 for one format and dtype: B-bit values of E exponent and M mantissa bits, W
// code bits, K = M + 1 rest bits (KB whole bytes and KP plane bits), P = W + KP planes, chunks of 2^Shift values.
type XWGeom struct {
	E, M, W, B, K, KB, KP, P uint
	Shift                    uint
}

// Dtype ids of the exponent-window formats (§3.2) and the formats' ids (§13).
const (
	DTypeF8E5M2 = 5
	DTypeF8E4M3 = 6
	FormatXW3   = 8
	FormatXW2   = 9
	FormatXW4   = 10
)

// NewXWGeom is the geometry of an exponent-window format and dtype; false for a pair §13 does not define.
func NewXWGeom(format, dtype uint8, shift uint) (XWGeom, bool) {
	var e, m, w uint
	switch dtype {
	case DTypeF8E5M2:
		e, m = 5, 2
	case DTypeF8E4M3:
		e, m = 4, 3
	case DTypeF16:
		e, m = 5, 10
	case DTypeF32:
		e, m = 8, 23
	default:
		return XWGeom{}, false
	}
	switch format {
	case FormatXW3:
		w = 3
	case FormatXW2:
		w = 2
	case FormatXW4:
		w = 4
	default:
		return XWGeom{}, false
	}
	if w >= e {
		return XWGeom{}, false
	}
	k := m + 1
	return XWGeom{E: e, M: m, W: w, B: 1 + e + m, K: k, KB: k / 8, KP: k % 8, P: w + k%8, Shift: shift}, true
}

func setBit(b []byte, bit uint64) { b[bit/8] |= 1 << (bit % 8) }

// Canonical is the spec's choice for a chunk: the best window (brute force, lowest base on ties), coded iff
// 4·E·ceil(k/32) < 4·(E-W)·ceil(m/32).
func (g XWGeom) Canonical(exps []uint32) XWChoice {
	win := uint32(1)<<g.W - 1
	best, bestIn := uint32(0), -1
	for b := uint32(0); b+win <= 1<<g.E; b++ {
		in := 0
		for _, x := range exps {
			if x >= b && x < b+win {
				in++
			}
		}
		if in > bestIn {
			best, bestIn = b, in
		}
	}
	m, k := uint64(len(exps)), uint64(len(exps)-bestIn)
	raw := !(uint64(g.E)*ceilDiv(k, 32) < uint64(g.E-g.W)*ceilDiv(m, 32))
	if raw {
		return XWChoice{Raw: true}
	}
	return XWChoice{Base: best}
}

// Build encodes vals (each a B-bit value) with choose deciding each chunk (nil: canonical).
func (g XWGeom) Build(vals []uint32, checksums bool, choose func(c int, exps []uint32) XWChoice) []byte {
	n := uint64(len(vals))
	cv := uint64(1) << g.Shift
	chunks := ceilDiv(n, cv)
	groups := ceilDiv(n, 32)
	planes := make([]byte, 4*uint64(g.P)*groups)
	lows := make([]byte, align4(uint64(g.KB)*n))
	var table, side []byte
	for c := uint64(0); c < chunks; c++ {
		lo, hi := c*cv, min((c+1)*cv, n)
		exps := make([]uint32, hi-lo)
		for i := lo; i < hi; i++ {
			exps[i-lo] = vals[i] >> g.M & (1<<g.E - 1)
		}
		ch := g.Canonical(exps)
		if choose != nil {
			ch = choose(int(c), exps)
		}
		m := hi - lo
		var piece []byte
		var k uint64
		if ch.Raw {
			piece = make([]byte, 4*uint64(g.E-g.W)*ceilDiv(m, 32))
		}
		var escs []uint32
		for i := lo; i < hi; i++ {
			v, x := vals[i], exps[i-lo]
			r := v>>(g.B-1)<<g.M | v&(1<<g.M-1)
			var code uint32
			switch {
			case ch.Raw:
				code = x & (1<<g.W - 1)
				for t := uint(0); t < g.E-g.W; t++ {
					if x>>(g.W+t)&1 != 0 {
						setBit(piece, 32*(((i-lo)/32)*uint64(g.E-g.W)+uint64(t))+(i-lo)%32)
					}
				}
			case x >= ch.Base && x < ch.Base+(1<<g.W-1) && !ch.Escape[int(i-lo)]:
				code = x - ch.Base + 1
			default:
				escs = append(escs, x)
			}
			for b := uint(0); b < g.W; b++ {
				if code>>b&1 != 0 {
					setBit(planes, 32*((i/32)*uint64(g.P)+uint64(b))+i%32)
				}
			}
			for t := uint(0); t < g.KP; t++ {
				if r>>(8*g.KB+t)&1 != 0 {
					setBit(planes, 32*((i/32)*uint64(g.P)+uint64(g.W+t))+i%32)
				}
			}
			for q := uint(0); q < g.KB; q++ {
				lows[uint64(g.KB)*i+uint64(q)] = byte(r >> (8 * q))
			}
		}
		info := uint32(1) << 24
		if !ch.Raw {
			k = uint64(len(escs))
			piece = make([]byte, 4*uint64(g.E)*ceilDiv(k, 32))
			for j, x := range escs {
				for t := uint(0); t < g.E; t++ {
					if x>>t&1 != 0 {
						setBit(piece, 32*(uint64(j)/32*uint64(g.E)+uint64(t))+uint64(j)%32)
					}
				}
			}
			info = ch.Base<<16 | uint32(k)
		}
		table = app32(table, info)
		table = app32(table, uint32(len(side)))
		table = app32(table, 0) // CRC: below, once every piece is in place
		side = append(side, piece...)
	}
	body := append(append(append(append([]byte{}, planes...), lows...), table...), side...)
	if checksums {
		g.FixCRCs(body, n)
	}
	return body
}

// FixCRCs recomputes every chunk CRC of an (otherwise finished) body.
func (g XWGeom) FixCRCs(body []byte, n uint64) {
	cv := uint64(1) << g.Shift
	chunks := ceilDiv(n, cv)
	pl := 4 * uint64(g.P) * ceilDiv(n, 32)
	ll := align4(uint64(g.KB) * n)
	tab := pl + ll
	sideStart := tab + 12*chunks
	for c := uint64(0); c < chunks; c++ {
		e := body[tab+12*c:]
		off := uint64(le32(e[4:]))
		end := uint64(len(body))
		if c+1 < chunks {
			end = sideStart + uint64(le32(e[16:]))
		}
		lo, hi := c*cv, min((c+1)*cv, n)
		pg := 4 * uint64(g.P)
		p0, p1 := lo/32*pg, hi/32*pg
		l0, l1 := pl+uint64(g.KB)*lo, pl+uint64(g.KB)*hi
		if c == chunks-1 {
			p1, l1 = pl, pl+ll
		}
		msg := append([]byte{}, e[:8]...)
		msg = append(append(append(msg, body[sideStart+off:end]...), body[p0:p1]...), body[l0:l1]...)
		put32(e[8:], CRC32C(msg))
	}
}
