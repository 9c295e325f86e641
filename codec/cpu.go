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
type CPUBackend struct{ workers int }

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
	var wg sync.WaitGroup
	for k := 0; k < int(w); k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(k, i)
			}
		}(k)
	}
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
	g       sz4Geom
	et      *encTables
	info    []uint32 // per chunk
	sideLen []uint32 // per chunk
	dcrc    []uint32 // standard CRC-32C of code piece || low piece, per chunk
	out     []byte   // Dst sized for the largest body
}

// Encode encodes SplitZip-4 bodies: dense streams in place, side pieces first at their worst-case spot, then
// moved down to their final offsets once the prefix sum is known.
func (b *CPUBackend) Encode(ctx context.Context, jobs []EncodeJob) error {
	st := make([]encState, len(jobs))
	for j := range jobs {
		job := &jobs[j]
		if job.Format != layout.FormatSplitZip4 {
			return errorf(ErrUnsupported, "cpu backend: format %d", job.Format)
		}
		s := &st[j]
		s.g = newSZ4Geom(job.N, job.Shift)
		if uint64(len(job.Src)) < 2*job.N {
			return errorf(ErrInvalidInput, "source holds %d bytes for %d values", len(job.Src), job.N)
		}
		if uint64(cap(job.Dst)) < s.g.MaxBodySize() {
			return errorf(ErrInvalidInput, "destination capacity %d below the %d-byte worst case", cap(job.Dst), s.g.MaxBodySize())
		}
		s.et = encodeTable(job.Codebook)
		nc := s.g.Chunks()
		s.info, s.sideLen, s.dcrc = make([]uint32, nc), make([]uint32, nc), make([]uint32, nc)
		s.out = job.Dst[:s.g.MaxBodySize()]
	}
	us := units(len(jobs), func(j int) uint64 { return st[j].g.Chunks() })
	err := b.forEach(ctx, uint64(len(us)), func(_ int, i uint64) {
		u := us[i]
		s, job := &st[u.job], &jobs[u.job]
		g := &s.g
		m := g.ChunkLen(u.chunk)
		v0 := u.chunk << g.Shift
		cl, ch := g.codePiece(u.chunk)
		ll, lh := g.lowPiece(u.chunk)
		rs := layout.RawSide(g.ChunkValues())
		side := s.out[g.side+u.chunk*rs : g.side+u.chunk*rs+layout.RawSide(m)]
		info, sl := sz4EncodeChunk(job.Src[2*v0:2*(v0+m)], int(m), s.out[cl:ch], s.out[ll:lh], s.et, side)
		s.info[u.chunk], s.sideLen[u.chunk] = info, uint32(sl)
		if job.Checksums {
			s.dcrc[u.chunk] = crc32c.Update(crc32c.Checksum(s.out[cl:ch]), s.out[ll:lh])
		}
	})
	if err != nil {
		return err
	}
	for j := range jobs {
		s, job := &st[j], &jobs[j]
		g := &s.g
		rs := layout.RawSide(g.ChunkValues())
		var off uint64
		var shiftFull uint32
		for c := uint64(0); c < g.Chunks(); c++ {
			sl := uint64(s.sideLen[c])
			copy(s.out[g.side+off:], s.out[g.side+c*rs:g.side+c*rs+sl]) // moves down, never over a later piece
			e := s.out[g.table+c*layout.ChunkEntrySize:]
			binary.LittleEndian.PutUint32(e[4*layout.EntryInfo:], s.info[c])
			binary.LittleEndian.PutUint32(e[4*layout.EntrySideOff:], uint32(off))
			var crc uint32
			if job.Checksums {
				cl, ch := g.codePiece(c)
				ll, lh := g.lowPiece(c)
				dlen := ch - cl + lh - ll
				head := crc32c.Update(crc32c.Checksum(e[:8]), s.out[g.side+off:g.side+off+sl])
				// Shift head over the dense pieces; full chunks share one shift constant.
				var sh uint32
				if c+1 < g.Chunks() {
					if shiftFull == 0 {
						shiftFull = crc32c.XPow(8 * dlen)
					}
					sh = shiftFull
				} else {
					sh = crc32c.XPow(8 * dlen)
				}
				crc = crc32c.MulMod(head, sh) ^ s.dcrc[c]
			}
			binary.LittleEndian.PutUint32(e[4*layout.EntryCRC:], crc)
			off += sl
		}
		job.Out = s.out[:g.side+off]
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
	errs jobErrs
}

// Decode decodes SplitZip-4 bodies after validating every chunk table; all chunks of all jobs run in parallel.
func (b *CPUBackend) Decode(ctx context.Context, jobs []DecodeJob) error {
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
		if e := decodeOneChunk(job, &s.g, u.chunk, &s.ct, s.dt); e != nil {
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
func decodeOneChunk(job *DecodeJob, g *sz4Geom, c uint64, ct *[256]uint8, dt *[256]uint32) *Error {
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
		ct, dt); err != nil {
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
