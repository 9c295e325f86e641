package vkcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/vk"
)

// Steps of the host-path batches (stage in, record passes, copy down, assemble the body) that the chunked
// formats share; each format keeps its own streams and kernels.

// stageValues copies values [vl, vh) of src into a segment's staging bytes h and zeroes the rest: the padding to
// 16 bytes the kernels may read.
func stageValues(h, src []byte, vl, vh uint64) {
	copy(h, src[2*vl:2*vh])
	clear(h[2*(vh-vl):])
}

// resetStatus records the reset of a decode status block: flags zero, and the lowest failing chunk of each class
// (words 1-3, see statusErr) all ones, so that the kernels' minimum finds the first.
func resetStatus(cmd *vk.Commands, st loc) {
	cmd.FillBuffer(st.buf, st.off, st.size, 0)
	cmd.FillBuffer(st.buf, st.off+4, 12, 0xFFFFFFFF)
}

// stageTable copies a body's chunk table (bytes [to, so)) and side section (from so on) into their staging buffers.
func stageTable(table, side staged, body []byte, to, so uint64) {
	copy(table.host.bytes(), body[to:so])
	copy(side.host.bytes(), body[so:])
}

// copyUpTable records the upload of a decode's chunk table and side section.
func (b *Backend) copyUpTable(cmd *vk.Commands, table, side staged) {
	b.copyUp(cmd, table)
	b.copyUp(cmd, side)
}

// copyDownTable records the download of what an encode's place pass leaves besides the dense streams: the chunk
// table, the side section and the scan's work words (which end with the side total).
func (b *Backend) copyDownTable(cmd *vk.Commands, table, side, work staged) {
	b.copyDown(cmd, table)
	b.copyDown(cmd, side)
	b.copyDown(cmd, work)
}

// sideTotal is the side-section size the scan (sz4_scan's layout: 2*nb block words, then the total) left in work.
// It comes from the device, so a total above limit is refused rather than trusted; what names the encoder.
func sideTotal(work staged, nb, limit uint64, what string) (uint64, error) {
	total := uint64(binary.LittleEndian.Uint32(work.host.bytes()[4*2*nb:]))
	if total > limit {
		return 0, &codec.Error{Class: codec.ErrCorrupt, Chunk: -1, Detail: what + ": side total out of range"}
	}
	return total, nil
}

// placeTable finishes an encoded body in out (the job's whole destination, dense streams already in place): the
// chunk table at [to, so), the side section from so on, and j.Out cut to the body's end.
func placeTable(j *codec.EncodeJob, out []byte, to, so uint64, table, side, work staged, nb, limit uint64,
	what string) error {
	copy(out[to:so], table.host.bytes())
	total, err := sideTotal(work, nb, limit, what)
	if err != nil {
		return err
	}
	copy(out[so:], side.host.bytes()[:total])
	j.Out = out[:so+total]
	return nil
}

// beginTimed opens a prepared op's command buffer with a pool of n timestamp queries: query 0 is written here, the
// others by the caller between and after the passes it records.
func (r *recorded) beginTimed(n uint32) error {
	var err error
	if r.qp, err = r.b.dev.NewQueryPool(n); err != nil {
		return err
	}
	cmd := r.s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	cmd.ResetQueries(r.qp, 0, n)
	cmd.Timestamp(r.qp, 0)
	return nil
}

// checkDecodeRanges refuses what a prepared decode could not bind safely (the kernels read the body and write n
// values in place, without robustBufferAccess): a body length outside [lo, hi] or not whole words, misaligned
// offsets, or ranges past their buffers.
func checkDecodeRanges(body vk.BufferRange, bodyLen, lo, hi uint64, dst vk.BufferRange, n uint64) error {
	return checkDecodeInto(body, bodyLen, lo, hi, dst, 2*n)
}

// checkBodyRange is checkDecodeRanges without the destination's size.
func checkBodyRange(body vk.BufferRange, bodyLen, lo, hi uint64, dst vk.BufferRange) error {
	if bodyLen < lo || bodyLen > hi || bodyLen%4 != 0 {
		return &codec.Error{Class: codec.ErrCorrupt, Chunk: -1,
			Detail: fmt.Sprintf("body of %d bytes outside [%d, %d]", bodyLen, lo, hi)}
	}
	if body.Offset%4 != 0 || dst.Offset%16 != 0 {
		return invalid("body offset must be a multiple of 4 and destination offset of 16")
	}
	return within(body, 0, bodyLen, "body")
}

// recordEncodePasses records an encode batch's passes over its n plans, a barrier before each and after the last:
// the chunk kernel (dense streams, side sizes), for most formats scanPass's prefix sum, and the placement of the side
// pieces. Each pass sees every plan's previous pass complete.
func (b *Backend) recordEncodePasses(s *session, n int, passes ...func(i int) error) error {
	for _, pass := range passes {
		s.cmd.Barrier()
		for i := range n {
			if err := pass(i); err != nil {
				return err
			}
		}
	}
	s.cmd.Barrier()
	return nil
}

// scanPass is sz4_scan's prefix sum of the side sizes over plan(i)'s work words: the middle pass of the chunked
// formats' encoders, all but SplitZip-4's, whose placement sums the side sizes itself.
func (b *Backend) scanPass(s *session, plan func(i int) *tensorPlan) func(i int) error {
	return func(i int) error { return b.recordScan(s, plan(i)) }
}
