package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// TBE-3 as a registered format: directory rules, the CPU backend's chunk-parallel codec and the chunk lister.

func init() {
	RegisterFormat(Format{ID: layout.FormatTBE3, Name: "tbe3",
		About: "BF16: 3-bit codes over each chunk's best window of 7 exponents in three bit-planes, sign+mantissa " +
			"bytes kept, other exponents as fallback bytes (ZipServ's TCA-TBE); about 1.43x on KV caches",
		DTypes: []layout.DType{layout.DTypeBF16}, MinShift: layout.MinChunkShift, MaxShift: layout.MaxChunkShift,
		MaxValues: layout.MaxCodedValues, NoEmpty: true,
		BodyBounds: func(n uint64, _ layout.DType, shift uint) (uint64, uint64) {
			g := layout.TBE3{N: n, Shift: shift}
			return g.MinBodySize(), g.MaxBodySize()
		},
		Table: func(_ layout.DType, n uint64, shift uint) (uint64, uint64, bool) {
			g := newTBE3Geom(n, shift)
			return g.table, g.Chunks(), true
		},
		CPU: tbe3CPU{}, Chunks: tbe3Chunks, ChunkBodySize: tbe3ChunkBodySize,
		CheckBody: func(body []byte, _ layout.DType, n uint64, shift uint) error { return checkTBE3Body(body, n, shift) }})
}

// tbe3ChunkBodySize is the one-chunk TBE-3 body of m values: planes, SM bytes, one table entry and the side piece
// of the chunk's best window (§12.2, §12.4).
func tbe3ChunkBodySize(src []byte, _ layout.DType, m int, _ uint, _ *Codebook) uint64 {
	_, covered := tbe3Window(expHistogram(src, m))
	k, mm := uint64(m)-uint64(covered), uint64(m)
	side := layout.TBE3RawSide(mm)
	if layout.TBE3CodedFits(mm, k) {
		side = layout.Align4(k)
	}
	return layout.TBE3PlanePiece(mm) + layout.Align4(mm) + layout.ChunkEntrySize + side
}

// tbe3Body adapts a TBE-3 body to the chunk-parallel driver.
type tbe3Body struct{ tbe3Geom }

func (g *tbe3Body) chunks() uint64                        { return g.Chunks() }
func (g *tbe3Body) chunkLen(c uint64) uint64              { return g.ChunkLen(c) }
func (g *tbe3Body) maxBody() uint64                       { return g.MaxBodySize() }
func (g *tbe3Body) tableOff() uint64                      { return g.table }
func (g *tbe3Body) sideOff() uint64                       { return g.side }
func (g *tbe3Body) sideSlot() uint64                      { return layout.TBE3RawSide(g.ChunkValues()) }
func (g *tbe3Body) rawSide(m uint64) uint64               { return layout.TBE3RawSide(m) }
func (g *tbe3Body) sideSize(info uint32, m uint64) uint64 { return tbe3SideSize(info, m) }
func (g *tbe3Body) valueSize() uint64                     { return 2 }
func (g *tbe3Body) check(body []byte) error               { return checkTBE3Body(body, g.N, g.Shift) }

func (g *tbe3Body) dense(body []byte, c uint64) (a, b []byte) {
	pl, ph := g.planePiece(c)
	sl, sh := g.smPiece(c)
	return body[pl:ph], body[sl:sh]
}

func (g *tbe3Body) encode(body, src []byte, c, m uint64, side []byte) (uint32, int) {
	v := c << g.Shift
	planes, sm := g.dense(body, c)
	return tbe3EncodeChunk(src[2*v:2*(v+m)], int(m), planes, sm, side)
}

func (g *tbe3Body) decode(dst, body []byte, c, m uint64, info uint32, side []byte) error {
	v := c << g.Shift
	planes, sm := g.dense(body, c)
	return tbe3DecodeChunk(dst[2*v:2*(v+m)], int(m), info, planes, sm, side)
}

// tbe3CPU is TBE-3's reference codec on the CPU backend: all chunks of all jobs in parallel.
type tbe3CPU struct{}

func (tbe3CPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		if err := checkTBE3Params(jobs[j].N, jobs[j].Shift, ErrInvalidInput); err != nil {
			return err
		}
		if jobs[j].N == 0 {
			return errorf(ErrInvalidInput, "an empty tensor has no TBE-3 body (it is stored)")
		}
		geo[j] = &tbe3Body{newTBE3Geom(jobs[j].N, jobs[j].Shift)}
	}
	return b.encodeChunked(ctx, jobs, geo)
}

func (tbe3CPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		if err := checkTBE3Params(jobs[j].N, jobs[j].Shift, ErrInvalidInput); err != nil {
			return err
		}
		geo[j] = &tbe3Body{newTBE3Geom(jobs[j].N, jobs[j].Shift)}
	}
	return b.decodeChunked(ctx, jobs, geo)
}

// tbe3Chunks lists a TBE-3 body's chunk table.
func tbe3Chunks(body []byte, _ layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	g := newTBE3Geom(n, shift)
	if err := tbe3CheckTable(body, &g); err != nil {
		return nil, err
	}
	out := make([]ChunkInfo, g.Chunks())
	for c := range out {
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		out[c] = ChunkInfo{Format: "tbe3", Kind: "coded", Values: g.ChunkLen(uint64(c)),
			SideOffset: binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]),
			CRC:        binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])}
		if info>>layout.KindShift == layout.ChunkRaw {
			out[c].Kind = "raw"
			continue
		}
		w := uint8(info >> layout.TBE3WindowShift & layout.TBE3WindowMask)
		out[c].Escapes, out[c].Window = uint64(info&layout.TBE3CountMask), &w
	}
	return out, nil
}
