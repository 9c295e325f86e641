package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// The exponent-window formats (xw2, xw3, xw4) as registered formats: directory rules, the CPU backend's
// chunk-parallel codec and the chunk lister.

func init() {
	f8 := []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32}
	for _, x := range []struct {
		id     uint8
		dtypes []layout.DType
		about  string
	}{
		{layout.FormatXW3, f8, "F8_E5M2, F8_E4M3, F16, F32: 3-bit codes over each chunk's best window of 7 " +
			"exponents, sign and mantissa kept, other exponents escaped (KV: 1.30x E5M2, 1.13x E4M3 and F16, " +
			"1.18x F32)"},
		{layout.FormatXW2, f8, "as xw3 with 2-bit codes over 3 exponents: for narrow exponent ranges " +
			"(slightly ahead of xw3 on F8_E4M3 KV data)"},
		{layout.FormatXW4, []layout.DType{layout.DTypeF8E5M2, layout.DTypeF16, layout.DTypeF32},
			"as xw3 with 4-bit codes over 15 exponents: for wide exponent ranges (not F8_E4M3)"},
	} {
		id := x.id
		RegisterFormat(Format{ID: id, Name: formatNameXW(id), About: x.about, DTypes: x.dtypes,
			MinShift: layout.MinChunkShift, MaxShift: layout.MaxChunkShift, MaxValues: layout.MaxCodedValues,
			BodyBounds: func(n uint64, d layout.DType, shift uint) (uint64, uint64) {
				g, ok := layout.NewXW(id, d, n, shift)
				if !ok {
					return 1, 0 // no body is valid
				}
				return g.MinBodySize(), g.MaxBodySize()
			},
			Table: func(d layout.DType, n uint64, shift uint) (uint64, uint64, bool) {
				g, ok := newXWGeom(id, d, n, shift)
				return g.table, g.Chunks(), ok
			},
			CPU: xwCPU{}, Chunks: func(body []byte, d layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
				return xwChunks(id, body, d, n, shift)
			},
			CheckBody: func(body []byte, d layout.DType, n uint64, shift uint) error {
				g, ok := newXWGeom(id, d, n, shift)
				if !ok {
					return errorf(ErrCorrupt, "%s does not code %v", formatNameXW(id), d)
				}
				return g.checkTable(body)
			},
			ChunkBodySize: func(src []byte, d layout.DType, m int, shift uint, _ *Codebook) uint64 {
				return xwChunkBodySize(id, src, d, m, shift)
			}})
	}
}

// xwChunkBodySize is the one-chunk body of m values of dtype d in format f: planes, bytes, one table entry and the
// side piece of the chunk's best window (§13.2.3). 0 for a dtype the format does not code (never called: auto only
// asks the candidates of a dtype).
func xwChunkBodySize(f uint8, src []byte, d layout.DType, m int, shift uint) uint64 {
	g, ok := newXWGeom(f, d, uint64(m), shift)
	if !ok {
		return 0
	}
	_, in := g.bestWindow(g.expHistogram(src, m))
	side, mm := g.RawSide(uint64(m)), uint64(m)
	if k := mm - in; g.CodedFits(mm, k) {
		side = g.CodedSide(k)
	}
	return g.MinBodySize() + side
}

// xwBody adapts an exponent-window body to the chunk-parallel driver.
type xwBody struct{ xwGeom }

func (g *xwBody) chunks() uint64                        { return g.Chunks() }
func (g *xwBody) chunkLen(c uint64) uint64              { return g.ChunkLen(c) }
func (g *xwBody) maxBody() uint64                       { return g.MaxBodySize() }
func (g *xwBody) tableOff() uint64                      { return g.table }
func (g *xwBody) sideOff() uint64                       { return g.side }
func (g *xwBody) sideSlot() uint64                      { return g.RawSide(g.ChunkValues()) }
func (g *xwBody) rawSide(m uint64) uint64               { return g.RawSide(m) }
func (g *xwBody) sideSize(info uint32, m uint64) uint64 { return g.xwGeom.sideSize(info, m) }
func (g *xwBody) valueSize() uint64                     { return uint64(g.size) }
func (g *xwBody) check(body []byte) error               { return g.checkTable(body) }

func (g *xwBody) dense(body []byte, c uint64) (a, b []byte) {
	pl, ph := g.planePiece(c)
	ll, lh := g.lowPiece(c)
	return body[pl:ph], body[ll:lh]
}

func (g *xwBody) encode(body, src []byte, c, m uint64, side []byte) (uint32, int) {
	v, sz := c<<g.Shift, uint64(g.size)
	planes, lows := g.dense(body, c)
	return g.encodeChunk(src[v*sz:(v+m)*sz], int(m), planes, lows, side)
}

func (g *xwBody) decode(dst, body []byte, c, m uint64, info uint32, side []byte) error {
	v, sz := c<<g.Shift, uint64(g.size)
	planes, lows := g.dense(body, c)
	return g.decodeChunk(dst[v*sz:(v+m)*sz], int(m), info, planes, lows, side)
}

// xwCPU is the exponent-window formats' reference codec on the CPU backend: all chunks of all jobs in parallel
// (EncodeXW and DecodeXW do one tensor at a time).
type xwCPU struct{}

func (xwCPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		g, err := xwArgs(jobs[j].Format, jobs[j].DType, jobs[j].N, jobs[j].Shift)
		if err != nil {
			return err
		}
		geo[j] = &xwBody{g}
	}
	return b.encodeChunked(ctx, jobs, geo)
}

func (xwCPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		g, err := xwArgs(jobs[j].Format, jobs[j].DType, jobs[j].N, jobs[j].Shift)
		if err != nil {
			return err
		}
		geo[j] = &xwBody{g}
	}
	return b.decodeChunked(ctx, jobs, geo)
}

// xwChunks lists an exponent-window body's chunk table.
func xwChunks(format uint8, body []byte, d layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	g, ok := newXWGeom(format, d, n, shift)
	if !ok {
		return nil, errorf(ErrCorrupt, "%s does not code %v", formatNameXW(format), d)
	}
	if err := g.checkTable(body); err != nil {
		return nil, err
	}
	out := make([]ChunkInfo, g.Chunks())
	for c := range out {
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		out[c] = ChunkInfo{Format: formatNameXW(format), Kind: "coded", Values: g.ChunkLen(uint64(c)),
			SideOffset: binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]),
			CRC:        binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])}
		if info>>layout.KindShift == layout.ChunkRaw {
			out[c].Kind = "raw"
			continue
		}
		w := uint8(info >> layout.XWBaseShift & layout.XWBaseMask)
		out[c].Escapes, out[c].Window = uint64(info&layout.XWCountMask), &w
	}
	return out, nil
}
