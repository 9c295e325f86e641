package vkcodec

import (
	"fmt"
	"slices"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/shaders"
)

// auto on Vulkan (docs/FORMAT.md §11).
//
// Encode of BF16 (candidates splitzip4, zf12, tbe3), two passes: auto_size reads each chunk's values once and sizes
// its one-chunk body under every candidate (the exponent histogram gives splitzip4's escapes and tbe3's window; the
// block field ranges, found from a second read only where zf12 could win, zf12's raw blocks), keeps the smallest and
// records its size (and the sums of its 64 and 4,096 chunks), format and info word; then the piece encoders
// auto_sz4, auto_zf12 and auto_tbe3, side by side, each code the chunks that chose their format, once, directly at
// their piece offsets (summed from the sizes): dense pieces, table entry, side piece, CRCs. So the values are read
// twice and each body byte written once.
//
// Encode of the other dtypes (the xw candidates): every candidate encodes the whole tensor into a scratch body with
// its own kernels (its passes run side by side with the other candidates'); auto_pick, one dispatch per candidate
// in id order, sizes each chunk's one-chunk body and keeps the smallest; sz4_scan turns the sizes into offsets;
// auto_gather, one dispatch per candidate, copies the pieces of the chunks that chose it out of its body into place.
//
// Decode: one pass. Each candidate's decoder over pieces takes the chunks whose table entry names its format and
// decodes them (the choice of candidate is the encoder's: docs/FORMAT.md §11.2); the dispatches run together, each
// chunk decoded once, and a workgroup with none of its format's chunks leaves at once.
//
// The candidate bodies and the auto body must each fit one storage-buffer binding; larger tensors are refused
// (ErrTooLarge) and stay with the CPU backend.

func init() { register(layout.FormatAuto, autoCodec{}) }

var (
	kAutoSize = kernel("auto_size")
	kAutoSZ4  = kernel("auto_sz4")
	kAutoZF12 = kernel("auto_zf12")
	kAutoTBE3 = kernel("auto_tbe3")
)

type autoCodec struct{}

// kernelDefaults: auto_size loads 4 slots per invocation together (it streams the values with little work per
// value); the TBE-3 and zf12 piece encoders take 5-bit CRC tables, as those formats' own encoders do.
func (autoCodec) kernelDefaults(kernel string) (crcBits, unroll int) {
	switch kernel {
	case kAutoSize.Name:
		return 0, 4
	case kAutoTBE3.Name, kAutoZF12.Name:
		return 5, 0
	}
	return 0, 0
}

// autoCandidate is a format auto can choose per chunk (its file implements it beside gpuCodec).
type autoCandidate interface {
	// candLayout is where the candidate's scratch body keeps each chunk's piece.
	candLayout(t *tensor) candLayout
	// candEncode plans the encode of the whole tensor into a scratch body laid out as l.
	candEncode(b *Backend, t *tensor, r *regions, l candLayout) *plan
	// candDecode records the candidate's decoder over the pieces of an auto body.
	candDecode(rec *recorder, t *tensor, a *autoPieces) error
}

// autoPieces is what a candidate's pieces decoder binds: the auto body, the values (one view per segment of
// chunks; one whole view for dtypes other than BF16), the status words, which candidates the body may name and
// whether this candidate validates the table.
type autoPieces struct {
	body      view
	bodyLen   uint64
	segs      []autoSeg
	status    loc
	mask      uint32
	validate  bool
	checksums bool
	cb        *codec.Codebook
}

type autoSeg struct {
	first, count uint64
	dst          view
}

func (a *autoPieces) piecesLen(C uint64) uint32 { return uint32(a.bodyLen - layout.ChunkEntrySize*C) }
func (a *autoPieces) autoBase() uint32          { return a.body.words() }
func (a *autoPieces) pieceBase(C uint64) uint32 {
	return a.body.words() + uint32(layout.ChunkEntryWords*C)
}

// autoCands lists auto's candidates for d or says why this backend cannot run auto on d: a candidate without piece
// kernels here.
func autoCands(d layout.DType) ([]uint8, []autoCandidate, error) {
	var ids []uint8
	var cs []autoCandidate
	for _, f := range codec.AutoCandidates(d) {
		c, ok := gpuCodecs[f.ID].(autoCandidate)
		if !ok {
			return nil, nil, &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
				Detail: fmt.Sprintf("vulkan backend: auto candidate %s has no piece kernels", f.Name)}
		}
		ids, cs = append(ids, f.ID), append(cs, c)
	}
	if len(ids) == 0 {
		return nil, nil, &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
			Detail: fmt.Sprintf("vulkan backend: auto on %v has no candidates", d)}
	}
	return ids, cs, nil
}

// candLayout is where a candidate's scratch body keeps each chunk's piece: up to three dense streams with fixed
// per-chunk pieces, the chunk table and the side section.
type candLayout struct {
	id               uint8
	streams          [3]uint64 // byte offsets; ^0 when absent
	full, last       [3]uint64 // piece bytes of a full chunk and of the last
	table, side, max uint64
}

func alignRegion(x uint64) uint64 { return (x + regionAlign - 1) &^ (regionAlign - 1) }

func (l candLayout) dense(last bool) uint64 {
	p := l.full
	if last {
		p = l.last
	}
	return p[0] + p[1] + p[2]
}

func autoMax(n uint64, d layout.DType, shift uint) uint64 {
	f, _ := codec.LookupFormat(layout.FormatAuto)
	return f.MaxBodyOf(n, d, shift)
}

// candTensor is t as candidate id codes it.
func candTensor(t *tensor, id uint8) tensor {
	c := *t
	c.format = id
	return c
}

func (autoCodec) check(b *Backend, t *tensor) error {
	ids, cs, err := autoCands(t.dt)
	if err != nil {
		return err
	}
	if t.n == 0 || (t.cb == nil && t.dt == layout.DTypeBF16) {
		return invalid("auto: empty tensor or no codebook")
	}
	for k, id := range ids {
		ct := candTensor(t, id)
		if m := cs[k].candLayout(&ct).max; m > b.slabMax {
			return errTooBig(m, b.slabMax)
		}
	}
	for _, m := range []uint64{layout.Align4(t.valueBytes()), autoMax(t.n, t.dt, t.shift)} {
		if m > b.slabMax {
			return errTooBig(m, b.slabMax)
		}
	}
	return nil
}

func (autoCodec) shape(t *tensor) shape {
	f, _ := codec.LookupFormat(layout.FormatAuto)
	lo, hi := f.BodyBounds(t.n, t.dt, t.shift)
	C := layout.SZ4{N: t.n, Shift: t.shift}.Chunks()
	work := 3*C + 1
	if ids, _, err := autoCands(t.dt); err == nil && autoSized(t.dt, ids) {
		work += (C+63)/64 + (C+4095)/4096 // auto_size's size sums of 64 and of 4,096 chunks
	}
	return shape{minBody: lo, maxBody: hi, sideOff: layout.ChunkEntrySize * C, totalWord: 2 * C, workBytes: 4 * work}
}

func (autoCodec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	total := alignRegion(layout.Align4(t.valueBytes())) + alignRegion(autoMax(t.n, t.dt, t.shift)) + 2*regionAlign
	if encode {
		ids, cs, _ := autoCands(t.dt)
		if autoSized(t.dt, ids) {
			return total + alignRegion(autoMetaBytes(t))
		}
		for k, id := range ids {
			ct := candTensor(t, id)
			total += alignRegion(cs[k].candLayout(&ct).max) + gpuCodecs[id].deviceBytes(b, &ct, true)
		}
	}
	return total
}

// autoCand is one candidate of an encode: its scratch body, work words and passes.
type autoCand struct {
	l    candLayout
	body loc
	work loc
	nb   uint64
	p    *plan
}

func (autoCodec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	ids, cs, err := autoCands(t.dt)
	if err != nil {
		return nil, err
	}
	C := layout.SZ4{N: t.n, Shift: t.shift}.Chunks()
	srcBytes := layout.Align4(t.valueBytes())
	src := r.valsAt(0, srcBytes)
	out := r.bodyAt(0, autoMax(t.n, t.dt, t.shift))
	a := &autoEncode{t: t, out: out, src: src, work: r.work.dev, chunks: C}
	if autoSized(t.dt, ids) {
		// Sizes of every candidate from one read of the values, then each chunk coded once, in place; each piece
		// encoder sums its chunk's offset from the sizes (the tensor's total is the last chunk's end).
		a.meta = r.scratch(autoMetaBytes(t))
		if r.top().err != nil {
			return nil, r.top().err
		}
		return &plan{passes: []func(*recorder) error{a.size, a.place}, oneSpan: true}, nil
	}
	for k, id := range ids {
		ct := candTensor(t, id)
		c := autoCand{l: cs[k].candLayout(&ct)}
		c.body = r.scratch(c.l.max)
		sh := gpuCodecs[id].shape(&ct)
		c.work, c.nb = r.zeroed(sh.workBytes), sh.totalWord/2
		if r.top().err != nil {
			return nil, r.top().err
		}
		c.p = cs[k].candEncode(b, &ct, r.sub(rangeOf(src, srcBytes), c.body.rng(), c.work), c.l)
		a.cands = append(a.cands, c)
	}
	// The candidates' passes side by side (the longest has three), a pick per candidate, the offsets, the gather.
	var passes []func(*recorder) error
	for k := range 3 {
		passes = append(passes, a.candPass(k))
	}
	for k := range a.cands {
		passes = append(passes, a.pick(k))
	}
	passes = append(passes, scanPass(a.work, C), a.gather)
	return &plan{passes: passes, oneSpan: true}, nil
}

// autoPieceKernels are the BF16 candidates' piece encoders, by format: each codes the chunks auto_size chose for
// it directly at their piece offsets.
var autoPieceKernels = []struct {
	id uint8
	k  *shaders.Kernel
}{{layout.FormatSplitZip4, kAutoSZ4}, {layout.FormatZF12, kAutoZF12}, {layout.FormatTBE3, kAutoTBE3}}

// autoSized reports whether auto_size sizes the candidates ids of dtype d: BF16's splitzip4, zf12 and tbe3, the
// formats the kernel computes.
func autoSized(d layout.DType, ids []uint8) bool {
	return d == layout.DTypeBF16 && slices.Equal(ids, []uint8{layout.FormatSplitZip4, layout.FormatZF12, layout.FormatTBE3})
}

// autoMetaBytes is auto_size's output beside the work words: an info word per chunk, then zf12 header pieces.
func autoMetaBytes(t *tensor) uint64 {
	C := layout.SZ4{N: t.n, Shift: t.shift}.Chunks()
	return 4*C + C*layout.ZF12{N: t.n, Shift: t.shift}.HeaderPiece()
}

// autoEncode is an auto encode's plan.
type autoEncode struct {
	t      *tensor
	cands  []autoCand // the whole-body candidates (dtypes auto_size does not size)
	src    view
	out    view
	work   loc // [0,C) sizes, [C,2C) offsets, [2C] total, [2C+1,3C+1) choices; sized: then size sums
	meta   loc // sized: auto_size's info words and zf12 headers
	chunks uint64
}

// candPass records pass k of every candidate that has one.
func (a *autoEncode) candPass(k int) func(*recorder) error {
	return func(rec *recorder) error {
		for _, c := range a.cands {
			if k < len(c.p.passes) {
				if err := c.p.passes[k](rec); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// size records auto_size: every chunk's smallest candidate, its size and info word.
func (a *autoEncode) size(rec *recorder) error {
	b, t := rec.b, a.t
	wg := min(b.wgFor(t.shift, a.chunks), autoWideWG)
	pc := shaders.AutoSizePush{CB: codebookWords(t.cb), Chunks: uint32(a.chunks),
		LastLen: uint32(layout.SZ4{N: t.n, Shift: t.shift}.ChunkLen(a.chunks - 1)), SrcBase: uint32(a.src.base / 16),
		ExpBase: autoExpBase(t.cb), CBFirst: autoCBFirst(t.cb)}
	kk := b.chunkKey(kAutoSize, wg, t.shift)
	return rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(a.chunks), a.src.l, a.work, a.meta)
}

// autoCBFirst marks the codebook entries that are their exponent's first: an exponent listed twice codes its
// values once.
func autoCBFirst(cb *codec.Codebook) uint32 {
	if cb == nil {
		return 0
	}
	var first uint32
	for i := range cb {
		if !slices.Contains(cb[:i], cb[i]) {
			first |= 1 << i
		}
	}
	return first
}

// autoWideWG bounds the workgroups of auto_size and auto_tbe3, whose shared memory grows by 64 and 52 bytes per
// invocation: at 512 both fit the 48 KiB that wgFor's widest workgroups assume.
const autoWideWG = 512

// sharedBytes is the shared memory of the BF16 auto encode kernels for workgroups of wg invocations.
func (autoCodec) sharedBytes(b *Backend, wg uint32) uint32 {
	hot := func(k *shaders.Kernel) uint32 { return 2 * crcTableWords(b.crcBits(k.Name)) * uint32(b.t.Repl) }
	w := min(wg, autoWideWG)
	const blocks = 1 << layout.MaxChunkShift / layout.ZF12Block
	size := 16*w + 256 + 2*blocks + 4
	tbe3 := 2048 + 13*w + 4 + hot(kAutoTBE3)
	sz4 := 256 + 2*wg + 4 + hot(kAutoSZ4)
	zf12 := 2*blocks + 2*wg + 4 + hot(kAutoZF12)
	return 4 * max(size, tbe3, sz4, zf12)
}

// autoExpBase is the start of the 16 exponents auto_size counts without atomics: the range that holds the most
// codebook exponents (the lowest such start), where KV data's values concentrate. Any start gives the same counts.
func autoExpBase(cb *codec.Codebook) uint32 {
	if cb == nil {
		return 0
	}
	var best, most int
	for s := 0; s <= 240; s++ {
		n := 0
		for _, e := range cb {
			if int(e) >= s && int(e) < s+16 {
				n++
			}
		}
		if n > most {
			best, most = s, n
		}
	}
	return uint32(best)
}

// place records the piece encoders side by side.
func (a *autoEncode) place(rec *recorder) error {
	b, t := rec.b, a.t
	for _, pk := range autoPieceKernels {
		wg := b.wgFor(t.shift, a.chunks) // divides the 8-value slots of a chunk
		if pk.id == layout.FormatTBE3 {
			wg = min(wg, uint32(1)<<t.shift/32, autoWideWG) // whole 32-value units
		}
		kk := b.chunkKey(pk.k, wg, t.shift)
		cs, err := rec.consts(kk, t.shift)
		if err != nil {
			return err
		}
		pc := shaders.AutoPiecesPush{CB: codebookWords(t.cb), ChunkCRC: chunkCRC(newTensorConsts(t.n, t.shift), 0, a.chunks),
			Checksums: b2u(t.checksums), SrcBase: uint32(a.src.base / 16), OutBase: a.out.words()}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(a.chunks), a.src.l, a.out.l, a.work, a.meta,
			cs); err != nil {
			return err
		}
	}
	return nil
}

// pick records candidate k's auto_pick: each chunk's one-chunk body size, kept where it is the smallest so far.
func (a *autoEncode) pick(k int) func(*recorder) error {
	return func(rec *recorder) error {
		c, C, wg := a.cands[k], a.chunks, uint32(rec.b.t.WorkGroup)
		pc := shaders.AutoPickPush{D: [4]uint32{uint32(c.l.table / 4), uint32(2 * c.nb), uint32(c.l.dense(false)),
			uint32(c.l.dense(true))}, Chunks: uint32(C), ID: uint32(c.l.id), First: b2u(k == 0)}
		return rec.dispatch(keyOf(kAutoPick, wg), shaders.PushBytes(&pc), rec.b.gridOf((C+uint64(wg)-1)/uint64(wg)), a.work,
			c.body, c.work)
	}
}

// gather records auto_gather for every candidate: the pieces of the chunks that chose it, into place.
func (a *autoEncode) gather(rec *recorder) error {
	wg := uint32(rec.b.t.WorkGroup)
	kk := keyOf(kAutoGather, wg).with("CRC_BITS", uint32(rec.b.crcBits(kAutoGather.Name)))
	consts, err := rec.consts(kk, a.t.shift)
	if err != nil {
		return err
	}
	w32 := func(x uint64) uint32 {
		if x == ^uint64(0) {
			return ^uint32(0)
		}
		return uint32(x / 4)
	}
	for _, c := range a.cands {
		l := c.l
		pc := shaders.AutoGatherPush{Streams: [4]uint32{w32(l.streams[0]), w32(l.streams[1]), w32(l.streams[2]), uint32(l.table / 4)},
			Full:  [4]uint32{uint32(l.full[0]), uint32(l.full[1]), uint32(l.full[2]), uint32(l.side / 4)},
			LastP: [4]uint32{uint32(l.last[0]), uint32(l.last[1]), uint32(l.last[2])}, Chunks: uint32(a.chunks),
			Checksums: b2u(a.t.checksums), OutBase: a.out.words(), ID: uint32(l.id)}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(a.chunks), a.out.l, c.body, a.work, consts); err != nil {
			return err
		}
	}
	return nil
}

func (autoCodec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	ids, cs, err := autoCands(t.dt)
	if err != nil {
		return nil, err
	}
	a := &autoPieces{body: r.bodyAt(0, t.bodyLen), bodyLen: t.bodyLen, status: r.status, checksums: t.checksums,
		cb: t.cb}
	for _, id := range ids {
		a.mask |= 1 << id
	}
	g := layout.SZ4{N: t.n, Shift: t.shift}
	if t.dt == layout.DTypeBF16 {
		b.segments(g, func(first, count uint64) {
			vl, vh := valueRange(g, first, count)
			a.segs = append(a.segs, autoSeg{first: first, count: count, dst: r.valsAt(2*vl, layout.Align4(2*(vh-vl)))})
		})
	} else {
		a.segs = []autoSeg{{count: g.Chunks(), dst: r.valsAt(0, layout.Align4(t.valueBytes()))}}
	}
	return &plan{passes: []func(*recorder) error{func(rec *recorder) error {
		for k, id := range ids {
			ct := candTensor(t, id)
			ap := *a
			ap.validate = k == 0
			if err := cs[k].candDecode(rec, &ct, &ap); err != nil {
				return err
			}
		}
		return nil
	}}}, nil
}
