package codec

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

// CPUBackend is the pure-Go reference backend: every other backend is checked byte for byte against it. It spreads
// the chunks of all jobs of a call over a fixed number of goroutines; calls share nothing, so concurrent callers
// never wait on each other.
type CPUBackend struct {
	workers int
	tables  sync.Map // Codebook -> *cbTables, so small calls do not rebuild 16 KiB of tables each time
}

// cbTables are the encoder's lookup tables for one codebook.
type cbTables struct {
	et *encTables
	at *avx2EncTables
}

func (b *CPUBackend) tablesFor(cb *Codebook) *cbTables {
	if t, ok := b.tables.Load(*cb); ok {
		return t.(*cbTables)
	}
	t := &cbTables{et: encodeTable(cb)}
	if useAVX2 {
		t.at, _ = newAVX2EncTables(cb)
	}
	b.tables.Store(*cb, t)
	return t
}

// NewCPUBackend returns the reference backend using workers goroutines per call (0 = GOMAXPROCS).
func NewCPUBackend(workers int) *CPUBackend { return &CPUBackend{workers: workers} }

func init() {
	RegisterBackend(BackendFactory{Name: "cpu", Priority: 0,
		Open: func(string, bool) (Backend, error) { return NewCPUBackend(0), nil }})
}

func (b *CPUBackend) Name() string { return "cpu" }
func (b *CPUBackend) Device() string {
	return runtime.GOARCH + " CPU, " + itoa(b.nworkers()) + " goroutines"
}
func (b *CPUBackend) Close() error { return nil }

// Workers is the number of goroutines a call uses.
func (b *CPUBackend) Workers() int { return b.nworkers() }

func (b *CPUBackend) nworkers() int {
	if b.workers > 0 {
		return b.workers
	}
	return runtime.GOMAXPROCS(0)
}

// unit is one chunk of one job.
type unit struct{ job, chunk uint64 }

// forEach runs fn over units 0..n-1 on the backend's goroutines, stopping early when ctx is done.
func (b *CPUBackend) forEach(ctx context.Context, n uint64, fn func(w int, i uint64)) error {
	w := min(uint64(b.nworkers()), n)
	if w <= 1 {
		for i := uint64(0); i < n; i++ {
			if i%64 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			fn(0, i)
		}
		return ctx.Err()
	}
	var next atomic.Uint64
	run := func(k int) {
		for {
			i := next.Add(1) - 1
			if i >= n || ctx.Err() != nil {
				return
			}
			fn(k, i)
		}
	}
	var wg sync.WaitGroup
	for k := 1; k < int(w); k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			run(k)
		}(k)
	}
	run(0) // the caller is worker 0: one goroutine fewer to start and wake on small inputs
	wg.Wait()
	return ctx.Err()
}

// units flattens the chunks of all jobs; chunkCount(j) gives job j's chunk count.
func units(n int, chunkCount func(j int) uint64) []unit {
	var total uint64
	for j := 0; j < n; j++ {
		total += chunkCount(j)
	}
	u := make([]unit, 0, total)
	for j := 0; j < n; j++ {
		for c := uint64(0); c < chunkCount(j); c++ {
			u = append(u, unit{uint64(j), c})
		}
	}
	return u
}

type encState struct {
	g  sz4Geom
	et *encTables
	at *avx2EncTables // nil: the Go loops only
}

// plannedMin is the input size from which Codec.Encode has the CPU backend count escapes first and write the
// container in place: for data that streams from main memory, skipping a staging copy of the payload pays for the
// extra read; for data in cache, one pass and a copy are cheaper.
const plannedMin = 32 << 20

// Encode encodes bodies into the jobs' Dst buffers (capacity ≥ the format's largest body), each format with its
// reference codec.
func (b *CPUBackend) Encode(ctx context.Context, jobs []EncodeJob) error {
	return EncodeByFormat(jobs, func(id uint8, jobs []EncodeJob) error {
		f, err := formatOf("cpu", id)
		if err != nil {
			return err
		}
		return f.CPU.Encode(b, ctx, jobs)
	})
}

// Decode decodes bodies into the jobs' Dst buffers, each format with its reference codec; invalid bodies get their
// error class in the job's Err.
func (b *CPUBackend) Decode(ctx context.Context, jobs []DecodeJob) error {
	return DecodeByFormat(jobs, func(id uint8, jobs []DecodeJob) error {
		f, err := formatOf("cpu", id)
		if err != nil {
			return err
		}
		return f.CPU.Decode(b, ctx, jobs)
	})
}

// SupportsFormat reports whether the CPU backend runs format id: every registered format with a reference codec.
func (b *CPUBackend) SupportsFormat(id uint8) bool {
	f, ok := LookupFormat(id)
	return ok && (f.CPU != nil || id == layout.FormatStored)
}

// sz4CPU is SplitZip-4's reference codec on the CPU backend.
type sz4CPU struct{}

func (sz4CPU) Encode(b *CPUBackend, ctx context.Context, jobs []EncodeJob) error {
	return b.sz4Encode(ctx, jobs)
}
func (sz4CPU) Decode(b *CPUBackend, ctx context.Context, jobs []DecodeJob) error {
	return b.sz4Decode(ctx, jobs)
}

// sz4Encode encodes SplitZip-4 bodies into the jobs' Dst buffers (capacity ≥ layout.SZ4.MaxBodySize).
func (b *CPUBackend) sz4Encode(ctx context.Context, jobs []EncodeJob) error {
	var total uint64
	for j := range jobs {
		total += 2 * jobs[j].N
	}
	if total < plannedMin {
		return b.encodeOnePass(ctx, jobs)
	}
	plans, err := b.PlanBodies(ctx, jobs)
	if err != nil {
		return err
	}
	for j := range jobs {
		if uint64(cap(jobs[j].Dst)) < plans[j].Len {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte body", cap(jobs[j].Dst), plans[j].Len)
		}
		jobs[j].Dst = jobs[j].Dst[:plans[j].Len]
	}
	return b.EncodePlanned(ctx, jobs, plans)
}

// encodeOnePass encodes in one pass over the input: dense streams in place, side pieces first at their worst-case
// spot, then moved down to their final offsets once the prefix sum is known.
func (b *CPUBackend) encodeOnePass(ctx context.Context, jobs []EncodeJob) error {
	st, err := b.encStates(jobs)
	if err != nil {
		return err
	}
	type pass struct {
		info, sideLen, dcrc []uint32 // per chunk; dcrc: CRC-32C of code piece || low piece
		out                 []byte
	}
	ps := make([]pass, len(jobs))
	for j := range jobs {
		g := &st[j].g
		if uint64(cap(jobs[j].Dst)) < g.MaxBodySize() {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(jobs[j].Dst), g.MaxBodySize())
		}
		nc := g.Chunks()
		ps[j] = pass{make([]uint32, nc), make([]uint32, nc), make([]uint32, nc), jobs[j].Dst[:g.MaxBodySize()]}
	}
	us := units(len(jobs), func(j int) uint64 { return st[j].g.Chunks() })
	err = b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		s, p, job := &st[u.job], &ps[u.job], &jobs[u.job]
		g := &s.g
		m := g.ChunkLen(u.chunk)
		v0 := u.chunk << g.Shift
		cl, ch := g.codePiece(u.chunk)
		ll, lh := g.lowPiece(u.chunk)
		rs := layout.RawSide(g.ChunkValues())
		side := p.out[g.side+u.chunk*rs : g.side+u.chunk*rs+layout.RawSide(m)]
		info, sl := sz4EncodeChunk(job.Src[2*v0:2*(v0+m)], int(m), p.out[cl:ch], p.out[ll:lh], s.et, s.at, side)
		p.info[u.chunk], p.sideLen[u.chunk] = info, uint32(sl)
		if job.Checksums {
			p.dcrc[u.chunk] = crc32c.Update(crc32c.Checksum(p.out[cl:ch]), p.out[ll:lh])
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		s, p, job := &st[j], &ps[j], &jobs[j]
		g := &s.g
		rs := layout.RawSide(g.ChunkValues())
		var off uint64
		var shiftFull uint32
		for c := uint64(0); c < g.Chunks(); c++ {
			sl := uint64(p.sideLen[c])
			copy(p.out[g.side+off:], p.out[g.side+c*rs:g.side+c*rs+sl]) // moves down, never over a later piece
			e := p.out[g.table+c*layout.ChunkEntrySize:]
			binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], p.info[c])
			binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off))
			var crc uint32
			if job.Checksums {
				cl, ch := g.codePiece(c)
				ll, lh := g.lowPiece(c)
				dlen := ch - cl + lh - ll
				head := crc32c.Update(crc32c.Checksum(e[:8]), p.out[g.side+off:g.side+off+sl])
				// Shift head over the dense pieces; full chunks share one shift constant.
				sh := shiftFull
				if c+1 == g.Chunks() || sh == 0 {
					sh = crc32c.XPow(8 * dlen)
					if c+1 < g.Chunks() {
						shiftFull = sh
					}
				}
				crc = crc32c.MulMod(head, sh) ^ p.dcrc[c]
			}
			binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
			off += sl
		}
		job.Out = p.out[:g.side+off]
	}
	return nil
}

// jobErrs collects the lowest failing chunk per error class of one job.
type jobErrs struct {
	mu       sync.Mutex
	checksum *Error
	canon    *Error
}

func (e *jobErrs) record(err *Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	slot := &e.canon
	if err.Class == ErrChecksum {
		slot = &e.checksum
	}
	if *slot == nil || err.Chunk < (*slot).Chunk {
		*slot = err
	}
}

// first returns the job's error by precedence: checksum, then non-canonical.
func (e *jobErrs) first() *Error {
	if e.checksum != nil {
		return e.checksum
	}
	return e.canon
}

type decState struct {
	g    sz4Geom
	ct   [256]uint8
	dt   *[256]uint32
	cb32 *[32]byte // codebook in both AVX2 lanes; nil: the Go loops only
	errs jobErrs
}

// sz4Decode decodes SplitZip-4 bodies after validating every chunk table; all chunks of all jobs run in parallel.
func (b *CPUBackend) sz4Decode(ctx context.Context, jobs []DecodeJob) error {
	st := make([]decState, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		if job.Format != layout.FormatSplitZip4 {
			return errorf(ErrUnsupported, "cpu backend: format %d", job.Format)
		}
		s := &st[j]
		s.g = newSZ4Geom(job.N, job.Shift)
		if uint64(len(job.Dst)) != 2*job.N {
			return errorf(ErrInvalidInput, "destination holds %d bytes for %d values", len(job.Dst), job.N)
		}
		job.Err = nil
		if err := sz4CheckTable(job.Body, &s.g); err != nil {
			job.Err = withTensor(err, job.Name)
		}
		s.ct = job.Codebook.CodeTable()
		s.dt = decodeTable(job.Codebook)
		if useAVX2 {
			s.cb32 = new([32]byte)
			copy(s.cb32[:16], job.Codebook[:])
			copy(s.cb32[16:], job.Codebook[:])
		}
	}
	us := units(len(jobs), func(j int) uint64 {
		if jobs[j].Err != nil {
			return 0
		}
		return st[j].g.Chunks()
	})
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		s, job := &st[u.job], &jobs[u.job]
		if e := decodeOneChunk(job, &s.g, u.chunk, &s.ct, s.dt, s.cb32); e != nil {
			s.errs.record(e)
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		if e := st[j].errs.first(); e != nil && jobs[j].Err == nil {
			jobs[j].Err = withTensor(e, jobs[j].Name)
		}
	}
	return nil
}

// decodeOneChunk verifies (checksum or zero CRC field) and decodes chunk c of a structurally valid body.
func decodeOneChunk(job *DecodeJob, g *sz4Geom, c uint64, ct *[256]uint8, dt *[256]uint32, cb32 *[32]byte) *Error {
	body := job.Body
	e := body[g.table+c*layout.ChunkEntrySize:]
	info := binary.LittleEndian.Uint32(e[4*layout.EntryInfo:])
	so := uint64(binary.LittleEndian.Uint32(e[4*layout.EntrySideOff:]))
	stored := binary.LittleEndian.Uint32(e[4*layout.EntryCRC:])
	m := g.ChunkLen(c)
	cl, ch := g.codePiece(c)
	ll, lh := g.lowPiece(c)
	side := body[g.side+so : g.side+so+sideSize(info, m)]
	if job.Checksums {
		if got := chunkCRC(info, uint32(so), side, body[cl:ch], body[ll:lh]); got != stored {
			return chunkErr(ErrChecksum, c, "CRC-32C %08x, stored %08x", got, stored)
		}
	} else if stored != 0 {
		return chunkErr(ErrNonCanonical, c, "CRC field %08x in a payload without checksums", stored)
	}
	v0 := c << g.Shift
	if err := sz4DecodeChunk(job.Dst[2*v0:2*(v0+m)], int(m), info, body[cl:ch], body[ll:lh], side, job.Codebook,
		ct, dt, cb32, len(job.Dst) >= plannedMin); err != nil {
		ce := err.(*Error)
		ce.Chunk = int64(c)
		return ce
	}
	return nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// BodyPlan is what the CPU backend learns by counting escapes before encoding: every chunk's info word and the
// body's exact length, so a container can be written in its final place in one pass, with no staging copy.
type BodyPlan struct {
	Len  uint64
	info []uint32
}

// PlannedEncoder is implemented by backends that can size bodies before encoding them (the CPU backend).
type PlannedEncoder interface {
	PlanBodies(ctx context.Context, jobs []EncodeJob) ([]BodyPlan, error)
	// EncodePlanned encodes each job into its Dst, which holds exactly the planned length.
	EncodePlanned(ctx context.Context, jobs []EncodeJob, plans []BodyPlan) error
}

// countEscapes counts the values of a chunk whose exponents have no code.
func countEscapes(src []byte, m int, t *encTables, at *avx2EncTables) int {
	k, i := 0, 0
	if at != nil && m >= 32 {
		k = countEscAVX2(&src[0], m/32, at)
		i = m &^ 31
	}
	for ; i < m; i++ {
		if t[0][uint8(binary.LittleEndian.Uint16(src[2*i:])>>7)]>>32 != 0 {
			k++
		}
	}
	return k
}

func (b *CPUBackend) encStates(jobs []EncodeJob) ([]encState, error) {
	st := make([]encState, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		if job.Format != layout.FormatSplitZip4 {
			return nil, errorf(ErrUnsupported, "cpu backend: format %d", job.Format)
		}
		if uint64(len(job.Src)) < 2*job.N {
			return nil, errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(job.Src), job.N)
		}
		s := &st[j]
		s.g = newSZ4Geom(job.N, job.Shift)
		t := b.tablesFor(job.Codebook)
		s.et, s.at = t.et, t.at
	}
	return st, nil
}

// PlanBodies counts every chunk's escapes, in parallel.
func (b *CPUBackend) PlanBodies(ctx context.Context, jobs []EncodeJob) ([]BodyPlan, error) {
	st, err := b.encStates(jobs)
	if err != nil {
		return nil, err
	}
	plans := make([]BodyPlan, len(jobs))
	for j := range plans {
		plans[j].info = make([]uint32, st[j].g.Chunks())
	}
	us := units(len(jobs), func(j int) uint64 { return st[j].g.Chunks() })
	err = b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		s, job := &st[u.job], &jobs[u.job]
		m := s.g.ChunkLen(u.chunk)
		v0 := u.chunk << s.g.Shift
		k := countEscapes(job.Src[2*v0:2*(v0+m)], int(m), s.et, s.at)
		info := uint32(k)
		if !layout.CodedFits(m, uint64(k)) {
			info = layout.ChunkRaw << layout.KindShift
		}
		plans[u.job].info[u.chunk] = info
	})
	if err != nil {
		return nil, err
	}
	for j := range plans {
		g := &st[j].g
		plans[j].Len = g.side
		for c, info := range plans[j].info {
			plans[j].Len += sideSize(info, g.ChunkLen(uint64(c)))
		}
	}
	return plans, nil
}

// EncodePlanned encodes every chunk straight into its final place, table entry and checksum included.
func (b *CPUBackend) EncodePlanned(ctx context.Context, jobs []EncodeJob, plans []BodyPlan) error {
	st, err := b.encStates(jobs)
	if err != nil {
		return err
	}
	offs := make([][]uint32, len(jobs))
	for j := range jobs {
		g := &st[j].g
		if uint64(len(jobs[j].Dst)) != plans[j].Len || len(plans[j].info) != int(g.Chunks()) {
			return errorf(ErrInvalidInput, "destination of %d bytes for a planned body of %d", len(jobs[j].Dst), plans[j].Len)
		}
		offs[j] = make([]uint32, g.Chunks())
		var off uint64
		for c, info := range plans[j].info {
			offs[j][c] = uint32(off)
			off += sideSize(info, g.ChunkLen(uint64(c)))
		}
	}
	us := units(len(jobs), func(j int) uint64 { return st[j].g.Chunks() })
	err = b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		s, job := &st[u.job], &jobs[u.job]
		g := &s.g
		out := job.Dst
		m := g.ChunkLen(u.chunk)
		v0 := u.chunk << g.Shift
		cl, ch := g.codePiece(u.chunk)
		ll, lh := g.lowPiece(u.chunk)
		so := uint64(offs[u.job][u.chunk])
		side := out[g.side+so : g.side+so+sideSize(plans[u.job].info[u.chunk], m)]
		info, _ := sz4EncodeChunk(job.Src[2*v0:2*(v0+m)], int(m), out[cl:ch], out[ll:lh], s.et, s.at, side)
		e := out[g.table+u.chunk*layout.ChunkEntrySize:]
		binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], info)
		binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(so))
		var crc uint32
		if job.Checksums {
			crc = chunkCRC(info, uint32(so), side, out[cl:ch], out[ll:lh])
		}
		binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		jobs[j].Out = jobs[j].Dst
	}
	return nil
}
