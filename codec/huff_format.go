package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// huff as a registered format: directory rules, the CPU backend's chunk-parallel codec and the chunk lister.

func init() {
	RegisterFormat(Format{ID: layout.FormatHuff, Name: "huff",
		About: "BF16: sign+mantissa bytes kept, exponents Huffman-coded with a canonical code per chunk in 32 " +
			"lanes; the ratio mode, about 1.50x on KV caches (vkzip encode --prefer ratio)",
		DTypes: []layout.DType{layout.DTypeBF16}, MinShift: layout.HuffMinShift, MaxShift: layout.HuffMaxShift,
		ShiftFor: layout.HuffShiftFor, MaxValues: layout.MaxCodedValues, NoEmpty: true,
		BodyBounds: func(n uint64, _ layout.DType, shift uint) (uint64, uint64) {
			g := layout.Huff{N: n, Shift: shift}
			return g.MinBodySize(), g.MaxBodySize()
		},
		Table: func(_ layout.DType, n uint64, shift uint) (uint64, uint64, bool) {
			g := newHuffGeom(n, shift)
			return g.table, g.Chunks(), true
		},
		CPU: huffCPU{}, Chunks: huffChunks, CheckBody: func(body []byte, _ layout.DType, n uint64, shift uint) error {
			return checkHuffBody(body, n, shift)
		}})
}

// huffBody adapts a huff body to the chunk-parallel driver: the low piece is the dense part, the piece the side.
type huffBody struct{ huffGeom }

func (g *huffBody) chunks() uint64                        { return g.Chunks() }
func (g *huffBody) chunkLen(c uint64) uint64              { return g.ChunkLen(c) }
func (g *huffBody) maxBody() uint64                       { return g.MaxBodySize() }
func (g *huffBody) tableOff() uint64                      { return g.table }
func (g *huffBody) sideOff() uint64                       { return g.huffGeom.pieces }
func (g *huffBody) sideSlot() uint64                      { return layout.HuffRawPiece(g.ChunkValues()) }
func (g *huffBody) rawSide(m uint64) uint64               { return layout.HuffRawPiece(m) }
func (g *huffBody) sideSize(info uint32, m uint64) uint64 { return huffPieceSize(info, m) }
func (g *huffBody) valueSize() uint64                     { return 2 }
func (g *huffBody) check(body []byte) error               { return checkHuffBody(body, g.N, g.Shift) }
func (g *huffBody) wordOffsets()                          {}

func (g *huffBody) dense(body []byte, c uint64) (a, b []byte) {
	lo, hi := g.lowPiece(c)
	return body[lo:hi], nil
}

func (g *huffBody) encode(body, src []byte, c, m uint64, side []byte) (uint32, int) {
	v := c << g.Shift
	low, _ := g.dense(body, c)
	return huffEncodeChunk(src[2*v:2*(v+m)], int(m), low, side)
}

func (g *huffBody) decode(dst, body []byte, c, m uint64, info uint32, side []byte) error {
	v := c << g.Shift
	low, _ := g.dense(body, c)
	return huffDecodeChunk(dst[2*v:2*(v+m)], int(m), info, low, side)
}

// pieces are chunk c's entry words, piece and low piece in a body whose table has passed huffCheckTable.
func (g *huffBody) chunkPieces(body []byte, c uint64) (info, po, crc uint32, piece, low []byte) {
	e := body[g.table+c*layout.ChunkEntrySize:]
	info = binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
	po = binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
	crc = binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
	at := g.huffGeom.pieces + 4*uint64(po)
	piece = body[at : at+huffPieceSize(info, g.ChunkLen(c))]
	low, _ = g.dense(body, c)
	return info, po, crc, piece, low
}

// huffCPU is huff's reference codec on the CPU backend: all chunks of all jobs in parallel.
type huffCPU struct{}

func (huffCPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		if err := checkHuffParams(jobs[j].N, jobs[j].Shift, ErrInvalidInput); err != nil {
			return err
		}
		if jobs[j].N == 0 {
			return errorf(ErrInvalidInput, "an empty tensor has no huff body (it is stored)")
		}
		geo[j] = &huffBody{newHuffGeom(jobs[j].N, jobs[j].Shift)}
	}
	return b.encodeChunked(ctx, jobs, geo)
}

func (huffCPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	geo := make([]chunkedBody, len(jobs))
	for j := range jobs {
		if err := checkHuffParams(jobs[j].N, jobs[j].Shift, ErrInvalidInput); err != nil {
			return err
		}
		geo[j] = &huffBody{newHuffGeom(jobs[j].N, jobs[j].Shift)}
	}
	return b.decodeChunked(ctx, jobs, geo)
}

// huffChunks lists a huff body's chunk table (Escapes is 0; SideOffset is the piece offset in bytes).
func huffChunks(body []byte, _ layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	g := newHuffGeom(n, shift)
	if err := huffCheckTable(body, &g); err != nil {
		return nil, err
	}
	out := make([]ChunkInfo, g.Chunks())
	for c := range out {
		e := body[g.table+uint64(c)*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		out[c] = ChunkInfo{Format: "huff", Kind: "coded", Values: g.ChunkLen(uint64(c)),
			SideOffset: 4 * binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]),
			CRC:        binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])}
		if info>>layout.KindShift == layout.ChunkRaw {
			out[c].Kind = "raw"
		}
	}
	return out, nil
}
