package codec

import (
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// checkSideChain runs the chunk-table checks every chunked format shares: the body holds its dense streams and
// table (side is where the side section starts), each entry's side offset is the running sum of the side sizes,
// and the side section ends exactly at the body's end. entry does a format's own checks on chunk c (info word,
// m values) and returns that chunk's side size; its error comes before the side-offset check, as it always did.
func checkSideChain(body []byte, table, side, chunks uint64, chunkLen func(uint64) uint64,
	entry func(c uint64, info uint32, m uint64) (uint64, error)) error {
	if uint64(len(body)) < side {
		return errorf(ErrCorrupt, "body of %d bytes is shorter than its %d-byte dense streams and table", len(body), side)
	}
	sideLen := uint64(len(body)) - side
	var off uint64
	for c := uint64(0); c < chunks; c++ {
		e := body[table+c*layout.ChunkEntrySize:]
		info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		so := binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
		m := chunkLen(c)
		size, err := entry(c, info, m)
		if err != nil {
			return err
		}
		if uint64(so) != off {
			return chunkErr(ErrCorrupt, c, "side offset %d, expected %d", so, off)
		}
		off += size
		if off > sideLen {
			return chunkErr(ErrCorrupt, c, "side pieces overrun the %d-byte side section", sideLen)
		}
	}
	if off != sideLen {
		return errorf(ErrCorrupt, "side section is %d bytes, chunk table accounts for %d", sideLen, off)
	}
	return nil
}
