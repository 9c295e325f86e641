package codec

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// auto (docs/FORMAT.md §11): every chunk in whichever candidate format codes it smallest. The body is a chunk table
// and one piece per chunk; a piece is a complete one-chunk body of its format (the format's own table, checksums
// and canonical form), so a format joins auto by having ChunkBodySize and CheckBody, and a decoder runs each
// format's own decoder on its pieces.
//
//	chunk table  12 bytes per chunk: info (format << 24), offset of the piece / 4, CRC-32C of info and offset
//	pieces       piece c: the chunk's values as a body of format info>>24, chunk shift the tensor's

// candidates are the formats auto may choose for dtype d, by id (the tie-break order): every format that can size a
// chunk's body without encoding it.
func candidates(d layout.DType) []*Format {
	var out []*Format
	for _, f := range Formats() {
		if f.ChunkBodySize != nil && f.ID != layout.FormatAuto && slices.Contains(f.DTypeList(), d) {
			out = append(out, f)
		}
	}
	return out
}

// AutoCandidates lists the formats auto chooses from for dtype d, by id.
func AutoCandidates(d layout.DType) []*Format { return candidates(d) }

// autoDTypes is the union of the candidates' dtypes.
func autoDTypes() []layout.DType {
	var out []layout.DType
	for _, f := range Formats() {
		if f.ChunkBodySize == nil || f.ID == layout.FormatAuto {
			continue
		}
		for _, d := range f.DTypeList() {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// autoCodebook reports whether an auto tensor of dtype d references a codebook: when a candidate uses one.
func autoCodebook(d layout.DType) bool {
	for _, f := range candidates(d) {
		if f.UsesCodebook(d) {
			return true
		}
	}
	return false
}

// autoGeom is the size arithmetic of an auto body of N values with chunks of 1<<Shift values.
type autoGeom struct {
	N     uint64
	Shift uint
}

// Chunks is the number of chunks.
func (a autoGeom) Chunks() uint64 { return layout.SZ4(a).Chunks() }

// ChunkLen is the number of values of chunk c.
func (a autoGeom) ChunkLen(c uint64) uint64 { return layout.SZ4(a).ChunkLen(c) }

// PieceOffset is where the pieces start in the body.
func (a autoGeom) PieceOffset() uint64 { return layout.ChunkEntrySize * a.Chunks() }

// autoBounds is the smallest and largest auto body: the table plus, per chunk, the smallest (largest) body any
// candidate can have for it.
func autoBounds(n uint64, d layout.DType, shift uint) (lo, hi uint64) {
	a := autoGeom{N: n, Shift: shift}
	c := a.Chunks()
	lo, hi = a.PieceOffset(), a.PieceOffset()
	if c == 0 {
		return lo, hi
	}
	full, last := a.ChunkLen(0), a.ChunkLen(c-1)
	var flo, fhi, llo, lhi uint64 = 1<<63 - 1, 0, 1<<63 - 1, 0
	for _, f := range candidates(d) {
		l, h := f.BodyBounds(full, d, shift)
		flo, fhi = min(flo, l), max(fhi, h)
		l, h = f.BodyBounds(last, d, shift)
		llo, lhi = min(llo, l), max(lhi, h)
	}
	if flo > fhi { // no candidate: nothing is valid
		return 1, 0
	}
	return lo + (c-1)*flo + llo, hi + (c-1)*fhi + lhi
}

// autoEntryCRC is the CRC-32C of a table entry's info and offset words.
func autoEntryCRC(info, off4 uint32) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], info)
	binary.LittleEndian.PutUint32(b[4:], off4)
	return crc32c.Checksum(b[:])
}

// chooseChunk returns the candidate that codes m values (src) smallest, ties to the lowest id, and its size.
func chooseChunk(cands []*Format, src []byte, d layout.DType, m int, shift uint, cb *Codebook) (*Format, uint64) {
	var best *Format
	var size uint64
	for _, f := range cands {
		if s := f.ChunkBodySize(src, d, m, shift, cb); best == nil || s < size {
			best, size = f, s
		}
	}
	return best, size
}

// autoTensorFormats is the format the encoder writes each job's tensor in with --format auto: of auto's candidates
// for its dtype, the one whose body is smallest (ties to the lowest id), unless the auto body, each chunk
// in its smallest per-chunk candidate plus the chunk table, is strictly smaller. A format's body is the sum of its
// one-chunk bodies (chunk pieces of the dense streams are aligned), so one pass of chunk sizes decides.
func autoTensorFormats(ctx context.Context, b *CPUBackend, jobs []EncodeJob) ([]uint8, error) {
	choices := make([][]*Format, len(jobs))
	sizes := make([][]uint64, len(jobs)) // per chunk, per choice: its one-chunk body
	for j := range jobs {
		choices[j] = candidates(jobDType(jobs[j].DType))
		a := autoGeom{N: jobs[j].N, Shift: jobs[j].Shift}
		sizes[j] = make([]uint64, a.Chunks()*uint64(len(choices[j])))
	}
	us := units(len(jobs), func(j int) uint64 { return autoGeom{N: jobs[j].N, Shift: jobs[j].Shift}.Chunks() })
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		job := &jobs[u.job]
		a := autoGeom{N: job.N, Shift: job.Shift}
		d := jobDType(job.DType)
		size := uint64(d.Size())
		m := a.ChunkLen(u.chunk)
		v0 := u.chunk << a.Shift
		K := uint64(len(choices[u.job]))
		for k, f := range choices[u.job] {
			sizes[u.job][u.chunk*K+uint64(k)] = f.ChunkBodySize(job.Src[size*v0:size*(v0+m)], d, int(m), a.Shift, job.Codebook)
		}
	})
	if err != nil {
		return nil, err
	}
	ids := make([]uint8, len(jobs))
	for j := range jobs {
		K := len(choices[j])
		if K == 0 {
			return nil, errorf(ErrUnsupported, "auto has no format for %v", jobDType(jobs[j].DType))
		}
		a := autoGeom{N: jobs[j].N, Shift: jobs[j].Shift}
		sums := make([]uint64, K)
		autoSum := a.PieceOffset()
		for c := uint64(0); c < a.Chunks(); c++ {
			lo := uint64(1<<63 - 1)
			for k := range choices[j] {
				s := sizes[j][c*uint64(K)+uint64(k)]
				sums[k] += s
				lo = min(lo, s)
			}
			autoSum += lo
		}
		ids[j] = layout.FormatAuto
		top := autoSum
		for k := K - 1; k >= 0; k-- { // the lowest id wins ties, and a single format wins a tie with auto
			if sums[k] <= top {
				ids[j], top = choices[j][k].ID, sums[k]
			}
		}
	}
	return ids, nil
}

type autoCPU struct{}

func (autoCPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	type plan struct {
		fmts  []*Format
		sizes []uint64
	}
	ps := make([]plan, len(jobs))
	geo := make([]autoGeom, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		d := jobDType(job.DType)
		a := autoGeom{N: job.N, Shift: job.Shift}
		if len(candidates(d)) == 0 {
			return errorf(ErrUnsupported, "auto has no format for %v", d)
		}
		if autoCodebook(d) && job.Codebook == nil {
			return errorf(ErrInvalidInput, "auto on %v needs a codebook", d)
		}
		if uint64(len(job.Src)) < job.N*uint64(d.Size()) {
			return errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(job.Src), job.N)
		}
		if _, hi := autoBounds(job.N, d, job.Shift); uint64(cap(job.Dst)) < hi {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(job.Dst), hi)
		}
		geo[j], ps[j] = a, plan{make([]*Format, a.Chunks()), make([]uint64, a.Chunks())}
	}
	// Every chunk's format: the candidates' sizes, without encoding.
	us := units(len(jobs), func(j int) uint64 { return geo[j].Chunks() })
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		job, a := &jobs[u.job], geo[u.job]
		d := jobDType(job.DType)
		size := uint64(d.Size())
		m := a.ChunkLen(u.chunk)
		v0 := u.chunk << a.Shift
		f, s := chooseChunk(candidates(d), job.Src[size*v0:size*(v0+m)], d, int(m), a.Shift, job.Codebook)
		ps[u.job].fmts[u.chunk], ps[u.job].sizes[u.chunk] = f, s
	})
	if err != nil {
		return err
	}
	// Encode each chunk in its format as a body of its own, into scratch, then place it.
	var pieces []EncodeJob
	var total uint64
	for j := range jobs {
		a := geo[j]
		d := jobDType(jobs[j].DType)
		for c := uint64(0); c < a.Chunks(); c++ {
			m := a.ChunkLen(c)
			v0 := c << a.Shift
			size := uint64(d.Size())
			f := ps[j].fmts[c]
			pieces = append(pieces, EncodeJob{Format: f.ID, DType: d, Src: jobs[j].Src[size*v0 : size*(v0+m)], N: m,
				Shift: a.Shift, Codebook: jobs[j].Codebook, Checksums: jobs[j].Checksums})
			total += f.MaxBodyOf(m, d, a.Shift)
		}
	}
	scratch := make([]byte, total)
	for i := range pieces {
		f, _ := LookupFormat(pieces[i].Format)
		n := f.MaxBodyOf(pieces[i].N, jobDType(pieces[i].DType), pieces[i].Shift)
		pieces[i].Dst, scratch = scratch[:n:n], scratch[n:]
	}
	if err := b.Encode(ctx, pieces); err != nil {
		return err
	}
	k := 0
	for j := range jobs {
		a, job := geo[j], &jobs[j]
		out := job.Dst[:cap(job.Dst)]
		pos := a.PieceOffset()
		for c := uint64(0); c < a.Chunks(); c++ {
			p := pieces[k].Out
			k++
			if uint64(len(p)) != ps[j].sizes[c] {
				return errorf(ErrInvalidInput, "auto: %s piece of chunk %d is %d bytes, its size function said %d",
					ps[j].fmts[c].Name, c, len(p), ps[j].sizes[c])
			}
			info := uint32(ps[j].fmts[c].ID) << layout.KindShift
			off4 := uint32((pos - a.PieceOffset()) / 4)
			e := out[c*layout.ChunkEntrySize:]
			binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], info)
			binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], off4)
			var crc uint32
			if job.Checksums {
				crc = autoEntryCRC(info, off4)
			}
			binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
			copy(out[pos:], p)
			pos += uint64(len(p))
		}
		job.Out = out[:pos]
	}
	return nil
}

// autoPiece is one chunk's piece of a structurally valid auto body.
type autoPiece struct {
	f         *Format
	body      []byte
	info, crc uint32
	off4      uint32
}

// autoCheck validates an auto body's structure: its table (known candidate formats, offsets that are the running
// sums of the pieces, each piece within its format's bounds, the last ending at the body's end) and every piece's
// own structure. It returns the pieces.
func autoCheck(body []byte, n uint64, shift uint, d layout.DType) ([]autoPiece, error) {
	a := autoGeom{N: n, Shift: shift}
	C := a.Chunks()
	if uint64(len(body)) < a.PieceOffset() {
		return nil, errorf(ErrCorrupt, "body of %d bytes is shorter than its %d-byte chunk table", len(body), a.PieceOffset())
	}
	cands := candidates(d)
	ps := make([]autoPiece, C)
	rest := uint64(len(body)) - a.PieceOffset()
	for c := uint64(0); c < C; c++ {
		e := body[c*layout.ChunkEntrySize:]
		p := &ps[c]
		p.info = binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
		p.off4 = binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:])
		p.crc = binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
		id := uint8(p.info >> layout.KindShift)
		for _, f := range cands {
			if f.ID == id {
				p.f = f
			}
		}
		if p.f == nil || p.info&layout.CountMask != 0 {
			return nil, chunkErr(ErrCorrupt, c, "chunk info %#x names no candidate format for %v", p.info, d)
		}
		start := 4 * uint64(p.off4)
		end := rest
		if c+1 < C {
			end = 4 * uint64(binary.LittleEndian.Uint32(body[(c+1)*layout.ChunkEntrySize+4*layout.EntrySideOff:]))
		}
		if c == 0 && start != 0 {
			return nil, chunkErr(ErrCorrupt, c, "first piece at offset %d", start)
		}
		if end < start || end > rest {
			return nil, chunkErr(ErrCorrupt, c, "piece [%d, %d) outside the %d bytes of pieces", start, end, rest)
		}
		m := a.ChunkLen(c)
		lo, hi := p.f.BodyBounds(m, d, shift)
		if end-start < lo || end-start > hi {
			return nil, chunkErr(ErrCorrupt, c, "%s piece of %d bytes outside [%d, %d]", p.f.Name, end-start, lo, hi)
		}
		p.body = body[a.PieceOffset()+start : a.PieceOffset()+end]
		if err := p.f.CheckBody(p.body, d, m, shift); err != nil {
			e := *err.(*Error)
			e.Chunk = int64(c)
			e.Detail = p.f.Name + " piece: " + e.Detail
			return nil, &e
		}
	}
	return ps, nil
}

// checkAutoTable validates an auto body's structure (docs/FORMAT.md §11.3): what a GPU backend checks on the host
// before it dispatches.
func checkAutoTable(body []byte, n uint64, shift uint, d layout.DType) error {
	_, err := autoCheck(body, n, shift, jobDType(d))
	return err
}

func (autoCPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	all := make([][]autoPiece, len(jobs))
	var pieces []DecodeJob
	var owner []unit
	for j := range jobs {
		job := &jobs[j]
		d := jobDType(job.DType)
		if uint64(len(job.Dst)) != job.N*uint64(d.Size()) {
			return errorf(ErrInvalidInput, "destination holds %d bytes for %d values", len(job.Dst), job.N)
		}
		job.Err = nil
		ps, err := autoCheck(job.Body, job.N, job.Shift, d)
		if err != nil {
			job.Err = withTensor(err, job.Name)
			continue
		}
		all[j] = ps
		a := autoGeom{N: job.N, Shift: job.Shift}
		size := uint64(d.Size())
		for c := range ps {
			m := a.ChunkLen(uint64(c))
			v0 := uint64(c) << a.Shift
			pieces = append(pieces, DecodeJob{Name: job.Name, Format: ps[c].f.ID, DType: d, Body: ps[c].body, N: m,
				Shift: a.Shift, Codebook: job.Codebook, Checksums: job.Checksums, Dst: job.Dst[size*v0 : size*(v0+m)]})
			owner = append(owner, unit{uint64(j), uint64(c)})
		}
	}
	if err := b.Decode(ctx, pieces); err != nil {
		return err
	}
	errs := make([]jobErrs, len(jobs))
	verdict := make([]*Error, len(pieces))
	err := b.forEach(ctx, uint64(len(pieces)), func(_ int, i uint64) {
		u, pj := owner[i], &pieces[i]
		job, p := &jobs[u.job], &all[u.job][u.chunk]
		var e *Error
		switch {
		case job.Checksums && autoEntryCRC(p.info, p.off4) != p.crc:
			e = chunkErr(ErrChecksum, u.chunk, "chunk entry CRC-32C %08x, stored %08x", autoEntryCRC(p.info, p.off4), p.crc)
		case pj.Err != nil:
			x := *pj.Err.(*Error)
			x.Chunk, x.Tensor = int64(u.chunk), ""
			x.Detail = p.f.Name + " piece: " + x.Detail
			e = &x
		case !job.Checksums && p.crc != 0:
			e = chunkErr(ErrNonCanonical, u.chunk, "chunk entry CRC field %08x in a payload without checksums", p.crc)
		}
		verdict[i] = e
	})
	if err != nil {
		return err
	}
	for i, e := range verdict {
		if e != nil {
			errs[owner[i].job].record(e)
		}
	}
	for j := range jobs {
		if e := errs[j].first(); e != nil && jobs[j].Err == nil {
			jobs[j].Err = withTensor(e, jobs[j].Name)
		}
	}
	return nil
}

// autoCRCWords appends an auto body's checksum words (docs/FORMAT.md §4.4): per chunk, its entry's crc word,
// then the checksum words of its piece (a one-chunk body of the piece's format). It reads only the table and each
// piece's own table: O(chunks), bounds-checked on any input.
func autoCRCWords(body []byte, d layout.DType, n uint64, shift uint, dst []uint32) ([]uint32, error) {
	a := autoGeom{N: n, Shift: shift}
	C := a.Chunks()
	if C > uint64(len(body))/layout.ChunkEntrySize {
		return dst, errorf(ErrCorrupt, "body of %d bytes is shorter than its %d-entry chunk table", len(body), C)
	}
	rest := uint64(len(body)) - a.PieceOffset()
	entry := func(c uint64, w int) uint32 {
		return binary.LittleEndian.Uint32(body[c*layout.ChunkEntrySize+4*uint64(w):])
	}
	for c := uint64(0); c < C; c++ {
		info := entry(c, layout.EntryInfo)
		start, end := 4*uint64(entry(c, layout.EntrySideOff)), rest
		if c+1 < C {
			end = 4 * uint64(entry(c+1, layout.EntrySideOff))
		}
		f, ok := LookupFormat(uint8(info >> layout.KindShift))
		if !ok || f.CRCWords == nil || f.ID == layout.FormatAuto || start > end || end > rest {
			return dst, chunkErr(ErrCorrupt, c, "chunk entry does not locate a piece")
		}
		dst = append(dst, entry(c, layout.EntryCRC))
		var err error
		dst, err = f.CRCWords(body[a.PieceOffset()+start:a.PieceOffset()+end], d, a.ChunkLen(c), shift, dst)
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// autoChunks lists an auto body's chunks for Inspect: each piece's own entry, under the chunk's format.
func autoChunks(body []byte, d layout.DType, n uint64, shift uint) ([]ChunkInfo, error) {
	ps, err := autoCheck(body, n, shift, d)
	if err != nil {
		return nil, err
	}
	a := autoGeom{N: n, Shift: shift}
	out := make([]ChunkInfo, len(ps))
	for c, p := range ps {
		in, err := p.f.Chunks(p.body, d, a.ChunkLen(uint64(c)), shift)
		if err != nil {
			return nil, err
		}
		out[c] = in[0]
		out[c].Format, out[c].SideOffset, out[c].CRC = p.f.Name, 4*p.off4, p.crc
	}
	return out, nil
}

func init() {
	RegisterFormat(Format{ID: layout.FormatAuto, Name: "auto",
		About: "smallest coding per tensor: one format whole or, when smaller, per chunk the candidate that codes it " +
			"smallest, recorded in the chunk table (BF16: splitzip4, zf12, tbe3; F8/F16/F32: xw3, xw2, xw4); KV: 1.43x",
		MinShift: layout.MinChunkShift, MaxShift: layout.MaxChunkShift, MaxValues: layout.MaxCodedValues,
		BodyBounds: autoBounds, CRCWords: autoCRCWords, CPU: autoCPU{}, Chunks: autoChunks, CheckBody: func(body []byte, d layout.DType, n uint64, shift uint) error {
			return checkAutoTable(body, n, shift, d)
		},
		dtypes: autoDTypes, codebookFor: autoCodebook})
}
