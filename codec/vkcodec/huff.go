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

// huff on Vulkan (format 5, docs/FORMAT.md §14), producing and accepting exactly the reference codec's bytes: encode
// in three passes (huff_encode: low bytes, code, piece to a scratch slot; sz4_scan: prefix sum of piece sizes;
// huff_place: pieces to their offsets, CRCs), decode in one (huff_decode, with huff_check beside it for the
// checksums). Each stream of a tensor is one binding, so a tensor whose streams exceed the device's binding range
// is refused (ErrTooLarge).

func init() { register(layout.FormatHuff, huffCodec{}) }

// huffCodec runs huff with tuning k (nil: the backend's).
type huffCodec struct{ k *huffTuning }

// huffTuning is the tuning of the huff kernels on a Backend (each Backend has its own, made at Open); Encode and
// Decode run huff with a tuning of one's own, for comparing variants.
type huffTuning struct {
	b *Backend
	// EncodeWG is the encoder's workgroup size, 32 × segments per lane; PlaceWG its third pass's; DecodeWG the
	// decoder's, 32 invocations per chunk in flight (one lane each), clamped to the device's shared memory;
	// DecodeGroups caps the decoder's workgroups (0: the backend's grid); CheckWG and CheckGroups are the decoder's
	// checksum pass's; Batch the loads each invocation of the kernels issues together (source, low, piece and CRC
	// words). Defaults 256, 128, 128, 0, 128, 0, 8 (the fastest on an H200,
	// bench/RESULTS.md); vktune.Huff sets them, for comparing variants on one device.
	EncodeWG, PlaceWG, DecodeWG, DecodeGroups, CheckWG, CheckGroups, Batch uint32
	// CheckFirst records the checksum pass before the decoder instead of after it.
	CheckFirst bool
	// CacheShift: the encoder keeps the exponents of chunks of up to 2^CacheShift values in shared memory (default
	// 14; vktune.Huff.CacheShift).
	CacheShift uint32
	// TeamSync runs the decoder with each chunk's team of 32 invocations as one subgroup, synced by subgroup
	// barriers (shaders/huff_decode.glsl: TEAM_SYNC). Default: whether the device's subgroups are 32 invocations
	// (one size) and can be required full; vktune.Huff.NoTeamSync turns it off.
	TeamSync bool
	// Int64 selects the decoder built with 64-bit and 16-bit integers (huff_decode_i64: the lane window's shift is
	// one funnel shift, and the decode tables are 16-bit entries read without shifts). Default: whether the device
	// enabled shaderInt64 and shaderInt16; vktune.Huff.NoInt64 turns it off.
	Int64 bool
	// L1Bits is the fewest index bits of the first level of the decoder's tables (clamped to 5–9, default 6; each
	// chunk takes more when its longer codes do not fit the second level; shaders/huff_decode.glsl: dtab).
	L1Bits uint32
	// TwoReads reads both levels of the decoder's tables for every code, the first choosing, instead of one level
	// chosen by the code's index (shaders/huff_decode.glsl: ONE_READ).
	TwoReads bool
	// TableEntries is the 16-bit entries of a chunk's decode tables in the decoder's shared memory (256, 512, 1024;
	// default defaultHuffTableEntries; shaders/huff_decode.glsl: TABN).
	TableEntries uint32
	// RingFill is the words each lane loads into its ring per block (clamped to 1–4, default 2; RFILL), LowAhead
	// how many blocks ahead the low words are loaded (clamped to 1–3, default 1: fewer registers; LOWPF), both
	// clamped at the pipeline.
	RingFill, LowAhead uint32
}

// fitHuffDecodeWG halves a decode workgroup size until the shared memory of the decoder kernel (4 chunks' at 128)
// fits the device.
func (b *Backend) fitHuffDecodeWG(dwg uint32, kernel string, table uint32) uint32 {
	for dwg > layout.HuffLanes && huffDecodeShared(dwg, kernel, table) > b.info.Limits.MaxComputeSharedMemorySize {
		dwg = max(layout.HuffLanes, dwg/2/layout.HuffLanes*layout.HuffLanes)
	}
	return dwg
}

// defaultHuffDecodeWG is the decoder's default workgroup: 4 chunks in flight in 19 KiB of shared memory. At the
// decoder's 86 registers an H200 SM holds five such workgroups (20 warps, so 20 chunks) where workgroups of 256 (8
// chunks in 38 KiB) fit only twice: 16 (measured on an H200).
const defaultHuffDecodeWG = 128

// huffWide: the device enabled 64-bit and 16-bit integers in shaders, so huff_decode_i64 can run there.
func (b *Backend) huffWide() bool {
	return b.dev.Features().ShaderInt64 && b.dev.Features().ShaderInt16
}

// teamSyncable: the device's subgroups are exactly one huff decode team (32 invocations, one size) and can be
// required full, so a team can be a subgroup.
func (b *Backend) teamSyncable() bool {
	in := b.dev.Info()
	return in.SubgroupSize == layout.HuffLanes && in.MinSubgroupSize == in.MaxSubgroupSize &&
		b.dev.Features().ComputeFullSubgroups
}

// newHuffTuning is the huff kernels' tuning on b's device: the backend's Options.Tune.Huff with the defaults
// filled in and fitted to the device.
func newHuffTuning(b *Backend) *huffTuning {
	h := b.t.Huff
	lim := uint32(b.t.WorkGroup)
	wg := func(v uint32) uint32 { return max(layout.HuffLanes, min(v, lim)) / layout.HuffLanes * layout.HuffLanes }
	team := b.teamSyncable() && !h.NoTeamSync
	wide := b.huffWide() && !h.NoInt64
	tab := huffTableEntries(h.TableEntries)
	dwg := b.fitHuffDecodeWG(wg(vktune.Or(h.DecodeWG, defaultHuffDecodeWG)), huffDecodeKernel(wide), tab)
	return &huffTuning{b: b, EncodeWG: wg(vktune.Or(h.EncodeWG, 256)),
		PlaceWG: wg(vktune.Or(h.PlaceWG, 128)), DecodeWG: dwg, CheckWG: wg(vktune.Or(h.CheckWG, 128)),
		CheckGroups: h.CheckGroups, CheckFirst: h.CheckFirst,
		DecodeGroups: h.DecodeGroups, Batch: min(vktune.Or(h.Batch, 8), 32),
		CacheShift: vktune.Or(h.CacheShift, 14),
		Int64:      wide, TeamSync: team, L1Bits: vktune.Or(h.L1Bits, 6),
		TwoReads: h.TwoReads, TableEntries: tab,
		RingFill: vktune.Or(h.RingFill, 2), LowAhead: vktune.Or(h.LowAhead, 1)}
}

// huffDecodeTeam is the decoder's invocations per chunk (shaders/huff_decode.glsl: TEAM, one lane each).
const huffDecodeTeam = layout.HuffLanes

// huffDecodeShared is the shared memory in bytes of a huff decoder kernel for workgroups of wg invocations and
// decode tables of the given entries: per chunk in flight the staging of one block's exponents (4 rows of 36 words)
// and 7 flags; an arena holding every chunk's decode tables (table/2 words; a separate array in huff_decode_i64) and
// its lanes' rings (32 × 17 words, the header's arrays until the ring is filled), at least the 7 × 256 words the raw
// chunks' code construction borrows; per workgroup the code construction's codes (256, unused by the decoder: an
// upper bound) and scalars (4), a flag and 32 lane sizes.
func huffDecodeShared(wg uint32, kernel string, table uint32) uint32 {
	k := wg / huffDecodeTeam
	arena := max(k*(table/2+32*17), 7*256)
	if kernel == "huff_decode_i64" {
		arena = k*table/2 + max(k*32*17, 7*256)
	}
	return 4 * (k*(144+7) + arena + 256 + 4 + 1 + 32)
}

// defaultHuffTableEntries is the decoder's table entries per chunk unless set (huffTuning.TableEntries).
const defaultHuffTableEntries = 1024

// huffTableEntries is v if it is a table size the decoder takes (256, 512 or 1024), else the default.
func huffTableEntries(v uint32) uint32 {
	if v == 256 || v == 512 || v == 1024 {
		return v
	}
	return defaultHuffTableEntries
}

// huffDecodeKernel names the decoder variant: huff_decode_i64 where the device has 64- and 16-bit integers in
// shaders (wide), huff_decode elsewhere.
func huffDecodeKernel(wide bool) string {
	if wide {
		return "huff_decode_i64"
	}
	return "huff_decode"
}

// decodeKernel names the decoder's variant (Int64).
func (k *huffTuning) decodeKernel() string { return huffDecodeKernel(k.Int64) }

// decodeGroups is the decoder's grid for C chunks.
func (k *huffTuning) decodeGroups(C uint64) uint32 {
	g := uint64(k.b.groups)
	if k.DecodeGroups != 0 {
		g = min(g, uint64(k.DecodeGroups))
	}
	return uint32(min((C+uint64(k.DecodeWG/huffDecodeTeam)-1)/uint64(k.DecodeWG/huffDecodeTeam), g))
}

// huffStatusErr maps huff_decode's status words to the reference's verdict: structure, then checksums, then the
// lowest chunk whose lane streams are corrupt or whose encoding is not canonical (corrupt first within a chunk).
func huffStatusErr(st []byte, name string) error {
	w := func(i int) uint32 { return binary.LittleEndian.Uint32(st[4*i:]) }
	switch {
	case w(0)&layout.StatusCorrupt != 0:
		c := int64(w(1))
		if w(1) == 0xFFFFFFFF { // only the piece section's length disagrees with the table (status[4])
			c = -1
		}
		return &codec.Error{Class: codec.ErrCorrupt, Tensor: name, Chunk: c, Detail: "chunk table or piece header inconsistent (GPU check)"}
	case w(0)&layout.StatusChecksum != 0:
		return &codec.Error{Class: codec.ErrChecksum, Tensor: name, Chunk: int64(w(2)), Detail: "CRC-32C mismatch (GPU check)"}
	case w(0)&layout.StatusNonCanonical != 0:
		if key := w(3); key&1 == 0 {
			return &codec.Error{Class: codec.ErrCorrupt, Tensor: name, Chunk: int64(key >> 1), Detail: "lane stream does not decode (GPU check)"}
		}
		return &codec.Error{Class: codec.ErrNonCanonical, Tensor: name, Chunk: int64(w(3) >> 1), Detail: "stream not canonical (GPU check)"}
	}
	return nil
}

// kernelDefaults: 5-bit CRC tables for huff's CRC passes (huff_place 179 → 164 µs on an H200, huff_check).
func (huffCodec) kernelDefaults(kernel string) (crcBits, unroll int) {
	if kernel == kHuffPlace.Name || kernel == kHuffCheck.Name {
		return 5, 0
	}
	return 0, 0
}

// tune is the tuning the kernels run with.
func (c huffCodec) tune(b *Backend) *huffTuning {
	if c.k != nil {
		return c.k
	}
	return b.huff
}

func (huffCodec) check(b *Backend, t *tensor) error {
	g := layout.Huff{N: t.n, Shift: t.shift}
	switch {
	case t.dt != layout.DTypeBF16:
		return &codec.Error{Class: codec.ErrUnsupported, Chunk: -1, Detail: fmt.Sprintf("vulkan backend: no huff over %v", t.dt)}
	case t.shift < layout.HuffMinShift || t.shift > layout.HuffMaxShift:
		return invalid("huff chunk shift %d outside [%d, %d]", t.shift, layout.HuffMinShift, layout.HuffMaxShift)
	case t.n > layout.MaxCodedValues:
		return &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf("%d values", t.n)}
	case t.n == 0:
		return invalid("huff: empty tensor")
	}
	for _, sz := range []uint64{layout.Align4(2 * t.n), g.LowBytes(), g.MaxBodySize() - g.PieceOffset(),
		layout.ChunkEntrySize * g.Chunks(), g.Chunks() << t.shift} {
		if sz > b.slabMax {
			return errTooBig(sz, b.slabMax)
		}
	}
	return nil
}

func (huffCodec) shape(t *tensor) shape {
	g := layout.Huff{N: t.n, Shift: t.shift}
	return sideShape(g.MinBodySize(), g.MaxBodySize(), g.PieceOffset(), g.Chunks())
}

func (huffCodec) deviceBytes(b *Backend, t *tensor, encode bool) uint64 {
	g := layout.Huff{N: t.n, Shift: t.shift}
	total := alignRegion(layout.Align4(2*t.n)) + alignRegion(g.LowBytes()) + alignRegion(g.MaxBodySize()) +
		4*regionAlign
	if encode {
		total += alignRegion(g.Chunks() << t.shift)
	}
	return total
}

// huffPlan is where the kernels of one tensor read and write.
type huffPlan struct {
	t                             *tensor
	k                             *huffTuning
	g                             layout.Huff
	src, lows, table, pieces, dst view
	pieceLen                      uint64 // decode: bytes of the piece section
	scratch, work, status         loc
}

func (c huffCodec) plan(b *Backend, t *tensor, r *regions, pieces uint64) *huffPlan {
	g := layout.Huff{N: t.n, Shift: t.shift}
	p := &huffPlan{t: t, k: c.tune(b), g: g, pieceLen: pieces, work: r.work.dev, status: r.status,
		lows: r.bodyAt(0, g.LowBytes()), table: r.bodyAt(g.TableOffset(), layout.ChunkEntrySize*g.Chunks()),
		pieces: r.bodyAt(g.PieceOffset(), pieces)}
	if r.encode {
		p.src = r.valsAt(0, layout.Align4(2*t.n))
		p.scratch = r.scratch(g.Chunks() << t.shift) // a raw piece's worth (N/4 words) per chunk
	} else {
		p.dst = r.valsAt(0, layout.Align4(2*t.n))
	}
	return p
}

func (c huffCodec) encode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := layout.Huff{N: t.n, Shift: t.shift}
	p := c.plan(b, t, r, g.MaxBodySize()-g.PieceOffset())
	return &plan{passes: []func(*recorder) error{p.recordEncode, scanPass(p.work, (g.Chunks()+63)/64),
		p.recordPlace}}, nil
}

func (c huffCodec) decode(b *Backend, t *tensor, r *regions) (*plan, error) {
	g := layout.Huff{N: t.n, Shift: t.shift}
	p := c.plan(b, t, r, t.bodyLen-g.PieceOffset())
	return &plan{passes: []func(*recorder) error{p.recordDecode}, statusFn: huffStatusErr}, nil
}

// key is the key of a huff kernel for workgroups of wg invocations.
func (p *huffPlan) key(b *Backend, k *shaders.Kernel, wg uint32) kernelKey {
	return keyOf(k, wg).with("SHIFT", uint32(p.g.Shift)).withIf("CRC_BITS", uint32(b.crcBits(k.Name))).
		withIf("BATCH", p.k.Batch)
}

func (p *huffPlan) lastLen() uint32 { return uint32(p.g.ChunkLen(p.g.Chunks() - 1)) }

func (p *huffPlan) recordEncode(rec *recorder) error {
	b, C := rec.b, p.g.Chunks()
	kk := p.key(b, kHuffEncode, p.k.EncodeWG).with("CACHE_SHIFT", p.k.CacheShift)
	pc := shaders.HuffEncodePush{Chunks: uint32(C), LastLen: p.lastLen(), SrcWords: uint32(layout.Align4(2*p.g.N) / 4),
		LowWords: uint32(p.g.LowBytes() / 4), SrcBase: p.src.words(), LowBase: p.lows.words(),
		TableBase: p.table.words()}
	return rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(C), p.src.l, p.lows.l, p.table.l, p.scratch, p.work)
}

func (p *huffPlan) recordPlace(rec *recorder) error {
	b, C := rec.b, p.g.Chunks()
	kk := p.key(b, kHuffPlace, p.k.PlaceWG)
	cs, err := rec.consts(kk, p.g.Shift)
	if err != nil {
		return err
	}
	pc := shaders.HuffPlacePush{Chunks: uint32(C), LastLen: p.lastLen(), NB: uint32((C + 63) / 64),
		Checksums: b2u(p.t.checksums), LowWords: uint32(p.g.LowBytes() / 4), TableBase: p.table.words(),
		PieceBase: p.pieces.words(), LowBase: p.lows.words()}
	return rec.dispatch(kk, shaders.PushBytes(&pc), b.gridOf(C), p.table.l, p.scratch, p.pieces.l, p.lows.l, p.work, cs)
}

// recordDecode records the decoder and, with checksums, the checksum pass beside it (shaders/huff_check.comp) with
// no barrier between them: the decoder is bound by the latency of its decode chains and by shared memory, so the
// CRCs run in a kernel of their own with many more words in flight per SM. Both only read the body, and meet in the
// status words through atomics.
func (p *huffPlan) recordDecode(rec *recorder) error {
	b, k, C := rec.b, p.k, p.g.Chunks()
	dk := kHuffDecode
	if k.Int64 {
		dk = kHuffDecodeI64
	}
	kk := p.key(b, dk, k.DecodeWG).with("TEAM_SYNC", b2u(k.TeamSync && b.teamSyncable())).
		with("L1MIN", min(max(k.L1Bits, 5), 9)).with("ONE_READ", b2u(!k.TwoReads)).
		with("TABN", huffTableEntries(k.TableEntries)).with("RFILL", min(max(k.RingFill, 1), 4)).
		with("LOWPF", min(max(k.LowAhead, 1), 3))
	if k.TeamSync && b.teamSyncable() {
		kk.subgroup = layout.HuffLanes
	}
	if p.t.checksums && k.CheckFirst {
		if err := p.recordCheck(rec); err != nil {
			return err
		}
	}
	pc := shaders.HuffDecodePush{Chunks: uint32(C), LastLen: p.lastLen(), Checksums: b2u(p.t.checksums),
		PieceLen: uint32(p.pieceLen), LowWords: uint32(p.g.LowBytes() / 4),
		DstWords: uint32(layout.Align4(2*p.g.N) / 4), LowBase: p.lows.words(), TableBase: p.table.words(),
		PieceBase: p.pieces.words(), DstBase: p.dst.words()}
	if err := rec.dispatch(kk, shaders.PushBytes(&pc), k.decodeGroups(C), p.lows.l, p.table.l, p.pieces.l, p.dst.l,
		p.status); err != nil {
		return err
	}
	if p.t.checksums && !k.CheckFirst {
		return p.recordCheck(rec)
	}
	return nil
}

// recordCheck records the decode's checksum pass.
func (p *huffPlan) recordCheck(rec *recorder) error {
	b, C := rec.b, p.g.Chunks()
	kk := p.key(b, kHuffCheck, p.k.CheckWG)
	cs, err := rec.consts(kk, p.g.Shift)
	if err != nil {
		return err
	}
	groups := b.groups
	if p.k.CheckGroups != 0 {
		groups = min(groups, p.k.CheckGroups)
	}
	pc := shaders.HuffCheckPush{Chunks: uint32(C), LastLen: p.lastLen(), PieceLen: uint32(p.pieceLen),
		LowWords: uint32(p.g.LowBytes() / 4), LowBase: p.lows.words(), TableBase: p.table.words(),
		PieceBase: p.pieces.words()}
	return rec.dispatch(kk, shaders.PushBytes(&pc), uint32(min(C, uint64(groups))), p.lows.l, p.table.l, p.pieces.l,
		p.status, cs)
}

// Encode encodes n BF16 values (src, little-endian) as a huff body with chunks of 2^shift values, with this
// tuning, and returns it.
func (k *huffTuning) Encode(ctx context.Context, src []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	j := []codec.EncodeJob{{Format: layout.FormatHuff, Src: src, N: n, Shift: shift, Checksums: checksums}}
	if shift >= layout.HuffMinShift && shift <= layout.HuffMaxShift && n <= layout.MaxCodedValues {
		j[0].Dst = make([]byte, layout.Huff{N: n, Shift: shift}.MaxBodySize())
	}
	if err := k.b.encodeWith(ctx, huffCodec{k}, j); err != nil {
		return nil, err
	}
	return j[0].Out, nil
}

// Decode validates and decodes a huff body of n values into dst (2n bytes) with this tuning. An invalid body is
// reported as bodyErr, with the reference's class and chunk; err is for failures of the call.
func (k *huffTuning) Decode(ctx context.Context, body []byte, n uint64, shift uint, checksums bool,
	dst []byte) (bodyErr, err error) {
	j := []codec.DecodeJob{{Format: layout.FormatHuff, Body: body, N: n, Shift: shift, Checksums: checksums, Dst: dst}}
	if err := k.b.decodeWith(ctx, huffCodec{k}, j); err != nil {
		return nil, err
	}
	return j[0].Err, nil
}
