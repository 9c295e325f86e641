package codec

import (
	"context"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// chunkedBody is one body of a format laid out like SplitZip-4 (dense pieces at offsets fixed by N and the chunk
// size, a 12-byte table entry per chunk, a side section of variable pieces): what the CPU backend's chunk-parallel
// driver needs to encode and decode every chunk of every job of a call at once. TBE-3 and the exponent-window
// formats use it; SplitZip-4 keeps its own, more specialised driver.
type chunkedBody interface {
	chunks() uint64
	chunkLen(c uint64) uint64
	maxBody() uint64
	tableOff() uint64
	sideOff() uint64
	sideSlot() uint64 // side-piece capacity of a full chunk: the encoder's scratch slot
	rawSide(m uint64) uint64
	sideSize(info uint32, m uint64) uint64
	valueSize() uint64
	// dense is chunk c's fixed pieces in CRC order.
	dense(body []byte, c uint64) (a, b []byte)
	// encode codes chunk c's m values into its dense pieces of body and side (capacity rawSide(m)).
	encode(body, src []byte, c, m uint64, side []byte) (info uint32, sideLen int)
	// decode decodes chunk c into dst (its m values) and applies the canonical-form rules.
	decode(dst, body []byte, c, m uint64, info uint32, side []byte) error
	// check validates the body before any chunk is read: length and the chunk table's structure.
	check(body []byte) error
}

// wordOffsets is implemented by bodies whose table holds piece offsets in 32-bit words (huff) instead of bytes.
type wordOffsets interface{ wordOffsets() }

// offsetUnit is the bytes per unit of a body's side offsets.
func offsetUnit(g chunkedBody) uint64 {
	if _, ok := g.(wordOffsets); ok {
		return 4
	}
	return 1
}

// encodeChunked encodes jobs of one format in one pass over their inputs, all chunks of all jobs in parallel:
// dense pieces in place, side pieces first at their worst-case slot, then moved down to their offsets once the
// prefix sum is known. CRCs of the dense pieces are computed in parallel and combined with the side piece's after.
func (b *CPUBackend) encodeChunked(ctx context.Context, jobs []EncodeJob, geo []chunkedBody) error {
	type pass struct {
		info, sideLen, dcrc []uint32
		out                 []byte
	}
	ps := make([]pass, len(jobs))
	for j := range jobs {
		g, job := geo[j], &jobs[j]
		if uint64(len(job.Src)) < job.N*g.valueSize() {
			return errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(job.Src), job.N)
		}
		if uint64(cap(job.Dst)) < g.maxBody() {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(job.Dst), g.maxBody())
		}
		nc := g.chunks()
		ps[j] = pass{make([]uint32, nc), make([]uint32, nc), make([]uint32, nc), job.Dst[:g.maxBody()]}
	}
	us := units(len(jobs), func(j int) uint64 { return geo[j].chunks() })
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		g, p, job := geo[u.job], &ps[u.job], &jobs[u.job]
		m := g.chunkLen(u.chunk)
		slot := g.sideOff() + u.chunk*g.sideSlot()
		info, sl := g.encode(p.out, job.Src, u.chunk, m, p.out[slot:slot+g.rawSide(m)])
		p.info[u.chunk], p.sideLen[u.chunk] = info, uint32(sl)
		if job.Checksums {
			a, d := g.dense(p.out, u.chunk)
			p.dcrc[u.chunk] = crc32c.Update(crc32c.Checksum(a), d)
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		g, p, job := geo[j], &ps[j], &jobs[j]
		var off uint64
		var shiftFull uint32
		side, slot, nc := g.sideOff(), g.sideSlot(), g.chunks()
		for c := uint64(0); c < nc; c++ {
			sl := uint64(p.sideLen[c])
			// Moves down, never over a later chunk's slot: off ≤ c·slot and sl ≤ slot.
			copy(p.out[side+off:], p.out[side+c*slot:side+c*slot+sl])
			e := p.out[g.tableOff()+c*layout.ChunkEntrySize:]
			binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], p.info[c])
			binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off/offsetUnit(g)))
			var crc uint32
			if job.Checksums {
				a, d := g.dense(p.out, c)
				head := crc32c.Update(crc32c.Checksum(e[:8]), p.out[side+off:side+off+sl])
				// Shift head over the dense pieces; full chunks share one shift constant.
				sh := shiftFull
				if c+1 == nc || sh == 0 {
					sh = crc32c.XPow(8 * uint64(len(a)+len(d)))
					if c+1 < nc {
						shiftFull = sh
					}
				}
				crc = crc32c.MulMod(head, sh) ^ p.dcrc[c]
			}
			binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
			off += sl
		}
		job.Out = p.out[:side+off]
	}
	return nil
}

// decodeChunked validates and decodes jobs of one format, all chunks of all jobs in parallel. Each job's verdict
// follows the precedence of FORMAT.md §6: the body check (length, table structure), then checksum errors, then
// canonical-form errors, each at the lowest chunk of its class.
func (b *CPUBackend) decodeChunked(ctx context.Context, jobs []DecodeJob, geo []chunkedBody) error {
	errs := make([]jobErrs, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		if uint64(len(job.Dst)) != job.N*geo[j].valueSize() {
			return errorf(ErrInvalidInput, "destination holds %d bytes for %d values", len(job.Dst), job.N)
		}
		job.Err = nil
		if err := geo[j].check(job.Body); err != nil {
			job.Err = withTensor(err, job.Name)
		}
	}
	us := units(len(jobs), func(j int) uint64 {
		if jobs[j].Err != nil {
			return 0
		}
		return geo[j].chunks()
	})
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		g, job, c := geo[u.job], &jobs[u.job], u.chunk
		e := job.Body[g.tableOff()+c*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		soff := binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
		so := g.sideOff() + uint64(soff)*offsetUnit(g)
		stored := binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
		m := g.chunkLen(c)
		side := job.Body[so : so+g.sideSize(info, m)]
		if job.Checksums {
			a, d := g.dense(job.Body, c)
			if got := chunkCRC(info, soff, side, a, d); got != stored {
				errs[u.job].record(chunkErr(ErrChecksum, c, "CRC-32C %08x, stored %08x", got, stored))
				return
			}
		}
		// The chunk's own errors (huff's corrupt lane streams) come before a stray CRC field.
		if err := g.decode(job.Dst, job.Body, c, m, info, side); err != nil {
			ce := *err.(*Error)
			ce.Chunk = int64(c)
			errs[u.job].record(&ce)
		} else if !job.Checksums && stored != 0 {
			errs[u.job].record(chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", stored))
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		if e := errs[j].first(); e != nil && jobs[j].Err == nil {
			jobs[j].Err = withTensor(e, jobs[j].Name)
		}
	}
	return nil
}
