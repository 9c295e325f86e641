package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/shaders"
)

// SplitZip-4 on Vulkan (docs/FORMAT.md): encode in two passes (sz4_encode: dense pieces, escapes to scratch,
// per-chunk partial CRC; sz4_place: side offsets from pass 1's block sums, side pieces, CRCs), decode in one
// (sz4_decode). A tensor larger than one binding runs as segments of whole chunks, each stream's piece one binding.

func init() { register(layout.FormatSplitZip4, sz4Codec{}) }

type sz4Codec struct{}

func (sz4Codec) runtimeSideLen() {}

// kernelDefaults: the SplitZip-4 encoder and decoder load 4 slots per thread together (decoder on an H200: 1721
// GB/s against 1693 at 2, while 8 took 58 registers and gave 1498; encoder on an H100: 1520 against 1493 at 2).
// The decoder takes 4-bit CRC tables (the 4 KiB of 16-entry tables leave it more shared memory; 5-bit tables held
// in shared memory measured 1427 against 1550 on an H100); the encoder keeps byte-wide tables; the placement pass
// takes the defaults.
func (sz4Codec) kernelDefaults(kernel string) (crcBits, unroll int) {
	switch kernel {
	case kSZ4Decode.Name, kSZ4Pieces.Name:
		return 4, 4
	case kSZ4Encode.Name:
		return 0, 4
	}
	return 0, 0
}

// sharedBytes: the encoder's two hot CRC tables (crc_tables.glsl, CRC_SHARED_HOT), code tables, the escape counts
// of 2^16/8 slots (4 bits each) and per-thread sums; the decoder's tables, staged escapes and sums.
func (sz4Codec) sharedBytes(b *Backend, wg uint32) uint32 {
	encode := 4 * (2*crcTableWords(b.crcBits(kSZ4Encode.Name))*uint32(b.t.Repl) + 512 + 1024 + 3*wg)
	decode := 4 * (b.crcTables(kSZ4Decode.Name) + 512 + uint32(b.t.EscCap) + 2*wg)
	return max(encode, decode)
}

// sz4Seg is a run of chunks [first, first+count) whose per-chunk regions fit one binding each.
type sz4Seg struct {
	first, count      uint64
	vals, codes, lows view // values (encode source, decode destination) and the segment's pieces of the streams
	heads             view // zf12: the segment's header piece
	scratch           loc  // encode: escapes / raw spill, per chunk
}

// chunkedPlan is the device layout of one SplitZip-4 or zf12 tensor (zf12 adds a header stream).
type chunkedPlan struct {
	t           *tensor
	g           layout.SZ4 // the code/low stream arithmetic, which zf12 shares
	tc          tensorConsts
	wg          uint32
	segs        []sz4Seg
	table, side view
	sideLen     uint32 // decode: bytes of side section, or layout.SideLenRuntime
	work        loc    // encode: block sums, prefixes, side total
	nb          uint64 // 64-chunk blocks
	status      loc
	statusBase  uint32
}

// codeRange, lowRange and valueRange are a segment's byte ranges of the code and low streams (whole chunk pieces,
// the last one to the padded end of the stream) and its range of values.
func codeRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	lo = first << g.Shift / 2
	if first+count == g.Chunks() {
		return lo, g.CodeBytes()
	}
	return lo, (first + count) << g.Shift / 2
}

func lowRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	lo = first << g.Shift
	if first+count == g.Chunks() {
		return lo, g.LowBytes()
	}
	return lo, (first + count) << g.Shift
}

func valueRange(g layout.SZ4, first, count uint64) (lo, hi uint64) {
	return first << g.Shift, min((first+count)<<g.Shift, g.N)
}

// segments calls seg for each run of chunks of g that fits one binding per stream piece.
func (b *Backend) segments(g layout.SZ4, seg func(first, count uint64)) {
	C, per := g.Chunks(), b.segChunks(g.Shift)
	for first := uint64(0); first < C; first += per {
		seg(first, min(per, C-first))
	}
}

// segChunks is how many chunks of 2^shift values one segment holds: every per-segment region (the largest is the
// 2n-byte values of a chunk) must fit one binding.
func (b *Backend) segChunks(shift uint) uint64 {
	return max(b.slabMax/(2<<shift), 1)
}

// planChunked lays out a SplitZip-4 or zf12 tensor whose table and side section start at tableOff and sideOff of
// the body (heads: the header stream's piece of chunks, at headOff; 0 for SplitZip-4).
func (b *Backend) planChunked(t *tensor, r *regions, tableOff, sideOff, headOff, head uint64) *chunkedPlan {
	g := layout.SZ4{N: t.n, Shift: t.shift}
	p := &chunkedPlan{t: t, g: g, tc: newTensorConsts(t.n, t.shift), wg: b.wgFor(t.shift, g.Chunks()*t.together),
		nb: (g.Chunks() + 63) / 64, work: r.work.dev, status: r.status, statusBase: r.statusBase}
	b.segments(g, func(first, count uint64) {
		sg := sz4Seg{first: first, count: count}
		cl, ch := codeRange(g, first, count)
		ll, lh := lowRange(g, first, count)
		vl, vh := valueRange(g, first, count)
		sg.vals = r.valsAt(2*vl, layout.Align4(2*(vh-vl)))
		sg.codes = r.bodyAt(cl, ch-cl)
		sg.lows = r.bodyAt(g.CodeBytes()+ll, lh-ll)
		if head != 0 {
			sg.heads = r.bodyAt(headOff+first*head, count*head)
		}
		if r.encode {
			sg.scratch = r.scratch(count << t.shift / 2)
		}
		p.segs = append(p.segs, sg)
	})
	p.table = r.bodyAt(tableOff, layout.ChunkEntrySize*g.Chunks())
	side := t.bodyLen - sideOff
	p.sideLen = uint32(side)
	if t.runtimeSide {
		p.sideLen = layout.SideLenRuntime
	}
	if r.encode {
		side = maxBodyOf(t) - sideOff
	}
	p.side = r.bodyAt(sideOff, side)
	return p
}

func maxBodyOf(t *tensor) uint64 {
	f, _ := codec.LookupFormat(t.format)
	return f.MaxBodyOf(t.n, t.dt, t.shift)
}

// checkBF16 refuses a dtype other than BF16 for a BF16-only format, and a tensor past the device's bindings.
func (b *Backend) checkBF16(t *tensor, sideMax, tableBytes uint64) error {
	if t.dt != layout.DTypeBF16 {
		return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1,
			Detail: fmt.Sprintf("vulkan backend: no %s over %v", codec.FormatName(t.format), t.dt)}
	}
	if sideMax > b.slabMax {
		return errTooBig(sideMax, b.slabMax)
	}
	if tableBytes > b.slabMax {
		return errTooBig(tableBytes, b.slabMax)
	}
	return nil
}

func (sz4Codec) check(b *Backend, t *tensor) error {
	g := layout.SZ4{N: t.n, Shift: t.shift}
	if t.cb == nil {
		return invalid("splitzip4 needs a codebook")
	}
	return b.checkBF16(t, g.MaxBodySize()-g.SideOffset(), layout.ChunkEntrySize*g.Chunks())
}

// sideShape is the shape of a body whose side section, after the chunk table, is sized by sz4_scan's total.
func sideShape(minBody, maxBody, sideOff, chunks uint64) shape {
	nb := (chunks + 63) / 64
	return shape{minBody: minBody, maxBody: maxBody, sideOff: sideOff, totalWord: 2 * nb, workBytes: 4 * (2*nb + 1)}
}

func (sz4Codec) shape(t *tensor) shape {
	g := layout.SZ4{N: t.n, Shift: t.shift}
	return sideShape(g.MinBodySize(), g.MaxBodySize(), g.SideOffset(), g.Chunks())
}

func (sz4Codec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	return planBytes(layout.SZ4{N: t.n, Shift: t.shift}, b.segChunks(t.shift), encode)
}

// planBytes is the device memory a SplitZip-4 plan takes for one tensor, in segments of per chunks (staging on
// discrete devices comes on top, in host memory). It bounds zf12's and TBE-3's too, whose streams are no larger.
func planBytes(g layout.SZ4, per uint64, encode bool) uint64 {
	a := func(n uint64) uint64 { return alignRegion(max((n+15)&^15, 16)) }
	var total uint64
	C := g.Chunks()
	for first := uint64(0); first < C; first += per {
		count := min(per, C-first)
		cl, ch := codeRange(g, first, count)
		ll, lh := lowRange(g, first, count)
		vl, vh := valueRange(g, first, count)
		total += a(ch-cl) + a(lh-ll) + a(2*(vh-vl))
		if encode {
			total += a(count << g.Shift / 2)
		}
	}
	total += a(layout.ChunkEntrySize*C) + a(max(g.MaxBodySize()-g.SideOffset(), 4))
	if encode {
		total += a(4 * (2*((C+63)/64) + 1))
	} else {
		total += a(32)
	}
	return total
}

func (sz4Codec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := layout.SZ4{N: t.n, Shift: t.shift}
	p := b.planChunked(t, r, g.TableOffset(), g.SideOffset(), 0, 0)
	return &plan{passes: []func(*recorder) error{p.recordSZ4Encode, p.recordSZ4Place}}, nil
}

func (sz4Codec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := layout.SZ4{N: t.n, Shift: t.shift}
	p := b.planChunked(t, r, g.TableOffset(), g.SideOffset(), 0, 0)
	return &plan{passes: []func(*recorder) error{p.recordSZ4Decode}}, nil
}

// codebookWords is a codebook as the kernels' uvec4 push member.
func codebookWords(cb *codec.Codebook) (w [4]uint32) {
	if cb == nil {
		return w
	}
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(cb[4*i:])
	}
	return w
}

// chunkKernel is the key of a chunk kernel for plan p and the CRC constants it binds.
func (p *chunkedPlan) chunkKernel(rec *recorder, k *shaders.Kernel, wg uint32) (kernelKey, loc, error) {
	kk := rec.b.chunkKey(k, wg, p.g.Shift)
	cs, err := rec.consts(kk, p.g.Shift)
	return kk, cs, err
}

func (p *chunkedPlan) recordSZ4Encode(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kSZ4Encode, p.wg)
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		pc := shaders.SZ4EncodePush{CB: codebookWords(p.t.cb), ChunkCRC: chunkCRC(p.tc, sg.first, sg.count),
			Checksums: b2u(p.t.checksums),
			SrcBase:   uint32(sg.vals.base / 16), CodeBase: sg.codes.words(), LowBase: sg.lows.words(),
			TableBase: p.table.words()}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), sg.vals.l, sg.codes.l, sg.lows.l,
			p.table.l, sg.scratch, cs, p.work); err != nil {
			return err
		}
	}
	return nil
}

// recordSZ4Place records SplitZip-4's placement pass (offsets from pass 1's side sums, side pieces, CRCs), one
// workgroup of placeWG invocations per chunk.
func (p *chunkedPlan) recordSZ4Place(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kSZ4Place, rec.b.placeWG())
	if err != nil {
		return err
	}
	for _, sg := range p.segs {
		pc := shaders.SZ4PlacePush{Chunks: p.tc.chunks, SegFirst: uint32(sg.first), SegChunks: uint32(sg.count),
			LastLen: p.tc.lastLen, NB: uint32(p.nb), KdFull: p.tc.kdFull, KdLast: p.tc.kdLast,
			Checksums: b2u(p.t.checksums), TableBase: p.table.words(), SideBase: p.side.words()}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), p.table.l, sg.scratch, p.side.l, cs,
			p.work); err != nil {
			return err
		}
	}
	return nil
}

func (p *chunkedPlan) recordSZ4Decode(rec *recorder) error {
	kk, cs, err := p.chunkKernel(rec, kSZ4Decode, p.wg)
	if err != nil {
		return err
	}
	kk = kk.with("ESC_CAP", uint32(rec.b.t.EscCap)).with("DEBUG_BOUNDS", b2u(rec.b.t.DebugBounds))
	for _, sg := range p.segs {
		pc := shaders.SZ4DecodePush{CB: codebookWords(p.t.cb), ChunkSeg: chunkSeg(p.tc, sg.first, sg.count, p.t.checksums),
			SideLen: p.sideLen, StatusBase: p.statusBase,
			CodeBase: sg.codes.words(), LowBase: sg.lows.words(), TableBase: p.table.words(),
			SideBase: p.side.words(), DstBase: uint32(sg.vals.base / 16)}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), rec.b.gridOf(sg.count), sg.codes.l, sg.lows.l, p.table.l,
			p.side.l, sg.vals.l, cs, p.status); err != nil {
			return err
		}
	}
	return nil
}

// scanPass is sz4_scan's prefix sum of the side sizes over the work words of nb 64-chunk blocks: the middle pass of
// the encoders that do not sum them in their placement (zf12, TBE-3, xw, huff, auto).
func scanPass(work loc, nb uint64) func(*recorder) error {
	return func(rec *recorder) error {
		pc := shaders.SZ4ScanPush{NB: uint32(nb)}
		return rec.dispatch(keyOf(kSZ4Scan, min(uint32(rec.b.t.WorkGroup), 1<<layout.MaxChunkShift/8)),
			shaders.PushBytes(&pc), 1, work)
	}
}

// placeWG is the placement pass's workgroup: 32 invocations (a chunk's side piece is a few words; 64 and 128 were
// no faster on the H200), or the device's widest subgroup where that is more (vktune.Params.SZ4PlaceWG).
func (b *Backend) placeWG() uint32 {
	return max(floorPow2(min(vktune.Or(b.t.SZ4PlaceWG, 32), 1024)), b.minWorkGroup())
}

// words is a view's offset from its binding's start, in 32-bit words (views start at multiples of 4 bytes).
func (v view) words() uint32 { return uint32(v.base / 4) }

// Warm makes sure callers sessions exist, each with memory for encoding and decoding a tensor of values values at
// the default chunk size, so that concurrent callers find their staging and device buffers allocated (allocating
// pinned host memory costs tens of milliseconds per session on NVIDIA). It implements codec.Warmer.
func (b *Backend) Warm(ctx context.Context, callers int, values uint64) error {
	if callers <= 0 || values == 0 {
		return nil
	}
	values = min(values, layout.MaxCodedValues)
	shift := uint(layout.DefaultChunkShift)
	// One real round trip first: it builds the pipelines and constant buffers of this tensor size, which are
	// shared by all sessions.
	g := layout.SZ4{N: values, Shift: shift}
	var cb codec.Codebook
	for i := range cb {
		cb[i] = uint8(i)
	}
	enc := []codec.EncodeJob{{Format: layout.FormatSplitZip4, Src: make([]byte, 2*values), N: values, Shift: shift,
		Codebook: &cb, Checksums: true, Dst: make([]byte, g.MaxBodySize())}}
	if err := b.Encode(ctx, enc); err != nil {
		return err
	}
	dec := []codec.DecodeJob{{Name: "warm-up", Format: layout.FormatSplitZip4, Body: enc[0].Out, N: values, Shift: shift,
		Codebook: &cb, Checksums: true, Dst: make([]byte, 2*values)}}
	if err := b.Decode(ctx, dec); err != nil {
		return err
	}
	if dec[0].Err != nil {
		return dec[0].Err
	}
	ss := make([]*session, 0, callers)
	defer func() {
		for _, s := range ss {
			b.putSession(s)
		}
	}()
	t := tensor{format: layout.FormatSplitZip4, dt: layout.DTypeBF16, n: values, shift: shift, cb: &cb,
		bodyLen: g.MaxBodySize(), together: 1}
	for range callers {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, err := b.getSession()
		if err != nil {
			return err
		}
		ss = append(ss, s)
		// Encode and decode plans share the session's arenas in turn: reserve the larger of the two per arena by
		// planning each after a reset.
		for _, enc := range []bool{true, false} {
			s.reset()
			if _, err := b.planHost(sz4Codec{}, s, &t, enc, nil); err != nil {
				return err
			}
		}
		s.reset()
	}
	return nil
}

// sz4CandLayout is a SplitZip-4 candidate's scratch body: the format's whole body.
func sz4CandLayout(n uint64, shift uint) candLayout {
	g := layout.SZ4{N: n, Shift: shift}
	c, cv := g.Chunks(), g.ChunkValues()
	return candLayout{id: layout.FormatSplitZip4, streams: [3]uint64{0, g.CodeBytes(), ^uint64(0)},
		full: [3]uint64{cv / 2, cv, 0}, last: [3]uint64{g.CodeBytes() - (c-1)*cv/2, g.LowBytes() - (c-1)*cv, 0},
		table: g.TableOffset(), side: g.SideOffset(), max: g.MaxBodySize()}
}

func (sz4Codec) candLayout(t *tensor) candLayout { return sz4CandLayout(t.n, t.shift) }

func (f sz4Codec) candEncode(b *Backend, t *tensor, r *regions, _ candLayout) *plan {
	p, _ := f.encode(b, t, r)
	return p
}

func (sz4Codec) candDecode(rec *recorder, t *tensor, a *autoPieces) error {
	return chunkPieces(rec, t, a, kSZ4Pieces, 4)
}

// zf12_decode_pieces takes sz4_decode_pieces' push block member by member (the conversion compiles only while
// they agree), so chunkPieces writes one for both.
var _ = shaders.ZF12DecodePiecesPush(shaders.SZ4DecodePiecesPush{})

// chunkPieces records a SplitZip-4 or zf12 pieces decoder (k, whose streams are its first streams bindings, all
// of them the auto body) per segment.
func chunkPieces(rec *recorder, t *tensor, a *autoPieces, k *shaders.Kernel, streams int) error {
	b := rec.b
	g := layout.SZ4{N: t.n, Shift: t.shift}
	C, tc := g.Chunks(), newTensorConsts(t.n, t.shift)
	kk := b.chunkKey(k, b.wgFor(t.shift, C), t.shift).withIf("ESC_CAP", uint32(b.t.EscCap)).
		with("DEBUG_BOUNDS", b2u(b.t.DebugBounds))
	cs, err := rec.consts(kk, t.shift)
	if err != nil {
		return err
	}
	for _, sg := range a.segs {
		binds := make([]loc, 0, streams+3)
		for range streams {
			binds = append(binds, a.body.l)
		}
		binds = append(binds, sg.dst.l, cs, a.status)
		pc := shaders.SZ4DecodePiecesPush{CB: codebookWords(a.cb), ChunkSeg: chunkSeg(tc, sg.first, sg.count, a.checksums),
			PiecesLen: a.piecesLen(C), AutoBase: a.autoBase(), PieceBase: a.pieceBase(C), Cands: a.mask,
			Validate: b2u(a.validate), DstBase: uint32(sg.dst.base / 16)}
		if err := rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(sg.count), binds...); err != nil {
			return err
		}
	}
	return nil
}

// chunkCRC is the push-constant head of the chunk coders for the segment of count chunks from first.
func chunkCRC(tc tensorConsts, first, count uint64) shaders.ChunkCRC {
	return shaders.ChunkCRC{Chunks: tc.chunks, SegFirst: uint32(first), SegChunks: uint32(count), LastLen: tc.lastLen,
		InvC: tc.invC, InvL: tc.invL, ShLowFull: tc.shLowFull, ShLowLast: tc.shLowLast}
}

// chunkSeg is the push-constant head of the chunk decoders for the segment of count chunks from first.
func chunkSeg(tc tensorConsts, first, count uint64, checksums bool) shaders.ChunkSeg {
	return shaders.ChunkSeg{ChunkCRC: chunkCRC(tc, first, count), KdFull: tc.kdFull, KdLast: tc.kdLast,
		Checksums: b2u(checksums)}
}
