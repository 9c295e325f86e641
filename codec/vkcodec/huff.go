package vkcodec

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/shaders"
	"github.com/vkzip/vkzip/vk"
)

// HuffKernels runs huff (format 5, docs/FORMAT.md §14) on a Backend's device, producing and accepting exactly the
// reference codec's bytes: encode in three passes (huff_encode: low bytes, code, piece to a scratch slot;
// sz4_scan: prefix sum of piece sizes; huff_place: pieces to their offsets, CRCs), decode in one (huff_decode, with
// huff_check beside it for the checksums).
// One queue submission per tensor; each stream of a tensor is one binding, so a tensor whose streams exceed the
// device's binding range is refused (ErrTooLarge).
type HuffKernels struct {
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
	// default DefaultHuffTableEntries; shaders/huff_decode.glsl: TABN).
	TableEntries uint32
	// RingFill is the words each lane loads into its ring per block (clamped to 1–4, default 2; RFILL), LowAhead
	// how many blocks ahead the low words are loaded (clamped to 1–3, default 1: fewer registers; LOWPF), both
	// clamped at the pipeline.
	RingFill, LowAhead uint32

	mu    sync.Mutex
	pipes map[huffPipeKey]*vk.Pipeline
}

type huffPipeKey struct {
	name                        string
	wg, shift, batch, cache, l1 uint32
	table, rfill, lowAhead      uint32
	teamSync, twoReads          bool
}

// push-constant sizes of the huff kernels, in bytes
const (
	pushHuffEncode = 4 * 7
	pushHuffPlace  = 4 * 8
	pushHuffDecode = 4 * 10
	pushHuffCheck  = 4 * 7
)

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

// NewHuffKernels prepares the huff kernels on b's device (pipelines are built on first use), tuned by the
// backend's Options.Tune.Huff.
func NewHuffKernels(b *Backend) *HuffKernels {
	h := b.t.Huff
	lim := uint32(b.t.WorkGroup)
	wg := func(v uint32) uint32 { return max(layout.HuffLanes, min(v, lim)) / layout.HuffLanes * layout.HuffLanes }
	team := b.teamSyncable() && !h.NoTeamSync
	wide := b.huffWide() && !h.NoInt64
	tab := huffTableEntries(h.TableEntries)
	dwg := b.fitHuffDecodeWG(wg(vktune.Or(h.DecodeWG, defaultHuffDecodeWG)), huffDecodeKernel(wide), tab)
	return &HuffKernels{b: b, EncodeWG: wg(vktune.Or(h.EncodeWG, 256)),
		PlaceWG: wg(vktune.Or(h.PlaceWG, 128)), DecodeWG: dwg, CheckWG: wg(vktune.Or(h.CheckWG, 128)),
		CheckGroups: h.CheckGroups, CheckFirst: h.CheckFirst,
		DecodeGroups: h.DecodeGroups, Batch: min(vktune.Or(h.Batch, 8), 32),
		CacheShift: vktune.Or(h.CacheShift, 14),
		Int64:      wide, TeamSync: team, L1Bits: vktune.Or(h.L1Bits, 6),
		TwoReads: h.TwoReads, TableEntries: tab,
		RingFill: vktune.Or(h.RingFill, 2), LowAhead: vktune.Or(h.LowAhead, 1),
		pipes: map[huffPipeKey]*vk.Pipeline{}}
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

// DefaultHuffTableEntries is the decoder's table entries per chunk unless set (HuffKernels.TableEntries).
const DefaultHuffTableEntries = 1024

// huffTableEntries is v if it is a table size the decoder takes (256, 512 or 1024), else the default.
func huffTableEntries(v uint32) uint32 {
	if v == 256 || v == 512 || v == 1024 {
		return v
	}
	return DefaultHuffTableEntries
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
func (k *HuffKernels) decodeKernel() string { return huffDecodeKernel(k.Int64) }

// decodeGroups is the decoder's grid for C chunks.
func (k *HuffKernels) decodeGroups(C uint64) uint32 {
	g := uint64(k.b.groups)
	if k.DecodeGroups != 0 {
		g = min(g, uint64(k.DecodeGroups))
	}
	return uint32(min((C+uint64(k.DecodeWG/huffDecodeTeam)-1)/uint64(k.DecodeWG/huffDecodeTeam), g))
}

// Close releases the pipelines.
func (k *HuffKernels) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pipes {
		p.Close()
	}
	k.pipes = map[huffPipeKey]*vk.Pipeline{}
	return nil
}

func (k *HuffKernels) pipeline(name string, wg uint32, shift uint) (*vk.Pipeline, error) {
	key := huffPipeKey{name: name, wg: wg, shift: uint32(shift), batch: k.Batch, cache: k.CacheShift, l1: k.L1Bits,
		twoReads: k.TwoReads, teamSync: k.TeamSync && k.b.teamSyncable(), table: huffTableEntries(k.TableEntries),
		rfill: min(max(k.RingFill, 1), 4), lowAhead: min(max(k.LowAhead, 1), 3)}
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pipes[key]; p != nil {
		return p, nil
	}
	code, err := shaders.SPIRV(name)
	if err != nil {
		return nil, err
	}
	desc := vk.PipelineDesc{Name: name, SPIRV: code, CaptureStatistics: true,
		Spec: []vk.SpecConst{{ID: 0, Value: wg}, {ID: 1, Value: key.shift}, {ID: crcBitsSpecID, Value: uint32(k.b.crcBits(name))}}}
	switch name {
	case "huff_encode":
		desc.Bindings, desc.PushConstantSize = 5, pushHuffEncode
		desc.Spec = append(desc.Spec, vk.SpecConst{ID: 2, Value: key.batch}, vk.SpecConst{ID: 4, Value: key.cache})
	case "huff_place":
		desc.Bindings, desc.PushConstantSize = 6, pushHuffPlace
		desc.Spec = append(desc.Spec, vk.SpecConst{ID: 2, Value: key.batch})
	case "huff_check":
		desc.Bindings, desc.PushConstantSize = 5, pushHuffCheck
		desc.Spec = append(desc.Spec, vk.SpecConst{ID: 2, Value: key.batch})
	case "huff_decode", "huff_decode_i64":
		desc.Bindings, desc.PushConstantSize = 5, pushHuffDecode
		desc.Spec = append(desc.Spec, vk.SpecConst{ID: 4, Value: b2u(key.teamSync)}, vk.SpecConst{ID: 5, Value: min(max(key.l1, 5), 9)},
			vk.SpecConst{ID: 6, Value: b2u(!key.twoReads)}, vk.SpecConst{ID: 7, Value: key.table},
			vk.SpecConst{ID: 10, Value: key.rfill}, vk.SpecConst{ID: 11, Value: key.lowAhead})
		if key.teamSync {
			desc.RequiredSubgroupSize, desc.RequireFullSubgroups = layout.HuffLanes, true
		}
	default:
		return nil, fmt.Errorf("vkcodec: no huff kernel %q", name)
	}
	p, err := k.b.dev.NewPipeline(desc)
	if err != nil {
		return nil, err
	}
	k.pipes[key] = p
	return p, nil
}

// geometry validates the arguments and the device's binding range.
func (k *HuffKernels) geometry(n uint64, shift uint) (layout.Huff, error) {
	g := layout.Huff{N: n, Shift: shift}
	switch {
	case shift < layout.HuffMinShift || shift > layout.HuffMaxShift:
		return g, invalid("huff chunk shift %d outside [%d, %d]", shift, layout.HuffMinShift, layout.HuffMaxShift)
	case n > layout.MaxCodedValues:
		return g, &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf("%d values", n)}
	}
	for _, sz := range []uint64{layout.Align4(2 * n), g.LowBytes(), g.MaxBodySize() - g.PieceOffset(),
		layout.ChunkEntrySize * g.Chunks(), g.Chunks() << shift} {
		if sz > k.b.slabMax {
			return g, errTooBig(sz, k.b.slabMax)
		}
	}
	return g, nil
}

// Encode encodes n BF16 values (src, little-endian) as a huff body with chunks of 2^shift values and returns it.
func (k *HuffKernels) Encode(ctx context.Context, src []byte, n uint64, shift uint, checksums bool) ([]byte, error) {
	g, err := k.geometry(n, shift)
	if err != nil {
		return nil, err
	}
	if uint64(len(src)) < 2*n || n == 0 {
		return nil, invalid("huff encode: empty tensor, or source of %d bytes for %d values", len(src), n)
	}
	b := k.b
	s, err := b.getSession()
	if err != nil {
		return nil, err
	}
	defer b.putSession(s)
	s.reset()
	C := g.Chunks()
	nb := (C + 63) / 64
	srcBytes := layout.Align4(2 * n)
	pieceMax := g.MaxBodySize() - g.PieceOffset()
	ins, _, err := stagedViews(b, s, true, srcBytes)
	if err != nil {
		return nil, err
	}
	outs, _, err := stagedViews(b, s, false, g.LowBytes(), layout.ChunkEntrySize*C, pieceMax, 4*(2*nb+1))
	if err != nil {
		return nil, err
	}
	in, lows, table, pieces, work := ins[0], outs[0], outs[1], outs[2], outs[3]
	scratch, err := s.dev.alloc(C << shift) // a raw piece's worth (N/4 words) per chunk
	if err != nil {
		return nil, err
	}
	h := in.host.bytes()
	copy(h, src[:2*n])
	clear(h[2*n:])
	enc, err := k.pipeline("huff_encode", k.EncodeWG, shift)
	if err != nil {
		return nil, err
	}
	place, err := k.pipeline("huff_place", k.PlaceWG, shift)
	if err != nil {
		return nil, err
	}
	scan, err := b.pipeline("sz4_scan", min(uint32(b.t.WorkGroup), 1<<layout.MaxChunkShift/8), 0)
	if err != nil {
		return nil, err
	}
	bdEnc, err := s.bind(b, enc, in.dev, lows.dev, table.dev, scratch, work.dev)
	if err != nil {
		return nil, err
	}
	bdScan, err := s.bind(b, scan, work.dev)
	if err != nil {
		return nil, err
	}
	placeConsts, err := b.constsFor(ctx, "huff_place", k.PlaceWG, shift)
	if err != nil {
		return nil, err
	}
	bdPlace, err := s.bind(b, place, table.dev, scratch, pieces.dev, lows.dev, work.dev, placeConsts)
	if err != nil {
		return nil, err
	}
	groups := uint32(min(C, uint64(b.groups)))
	last := uint32(g.ChunkLen(C - 1))
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0)
	b.copyUp(cmd, in)
	cmd.Barrier()
	var pw pushWriter
	cmd.Dispatch(enc, bdEnc, pw.u32(uint32(C), last, uint32(srcBytes/4), uint32(g.LowBytes()/4), 0, 0, 0).b, groups, 1, 1)
	cmd.Barrier()
	var ps pushWriter
	cmd.Dispatch(scan, bdScan, ps.u32(uint32(nb)).b, 1, 1, 1)
	cmd.Barrier()
	var pp pushWriter
	cmd.Dispatch(place, bdPlace, pp.u32(uint32(C), last, uint32(nb), b2u(checksums), uint32(g.LowBytes()/4), 0, 0, 0).b,
		groups, 1, 1)
	cmd.Barrier()
	for _, o := range []staged{lows, table, pieces, work} {
		b.copyDown(cmd, o)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	total, err := sideTotal(work, nb, pieceMax, "vulkan huff encode")
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, g.PieceOffset()+total)
	out = append(out, lows.host.bytes()[:g.LowBytes()]...)
	out = append(out, table.host.bytes()[:layout.ChunkEntrySize*C]...)
	out = append(out, pieces.host.bytes()[:total]...)
	return out, nil
}

// Decode validates and decodes a huff body of n values into dst (2n bytes). An invalid body is reported as
// bodyErr, with the reference's class and chunk for structural errors (checked on the host first) and the lowest
// chunk of the deciding class otherwise; err is for failures of the call.
func (k *HuffKernels) Decode(ctx context.Context, body []byte, n uint64, shift uint, checksums bool,
	dst []byte) (bodyErr, err error) {
	g, err := k.geometry(n, shift)
	if err != nil {
		return nil, err
	}
	if uint64(len(dst)) != 2*n {
		return nil, invalid("destination holds %d bytes for %d values", len(dst), n)
	}
	if e := codec.CheckHuffBody(body, n, shift); e != nil {
		return e, nil
	}
	b := k.b
	s, err := b.getSession()
	if err != nil {
		return nil, err
	}
	defer b.putSession(s)
	s.reset()
	C := g.Chunks()
	pieceLen := uint64(len(body)) - g.PieceOffset()
	ins, _, err := stagedViews(b, s, true, g.LowBytes(), layout.ChunkEntrySize*C, max(pieceLen, 4))
	if err != nil {
		return nil, err
	}
	outs, _, err := stagedViews(b, s, false, layout.Align4(2*n), 4*layout.StatusWords)
	if err != nil {
		return nil, err
	}
	lows, table, pieces, out, status := ins[0], ins[1], ins[2], outs[0], outs[1]
	copy(lows.host.bytes(), body[:g.LowBytes()])
	copy(table.host.bytes(), body[g.TableOffset():g.PieceOffset()])
	copy(pieces.host.bytes(), body[g.PieceOffset():])
	dec, err := k.pipeline(k.decodeKernel(), k.DecodeWG, shift)
	if err != nil {
		return nil, err
	}
	bd, err := s.bind(b, dec, lows.dev, table.dev, pieces.dev, out.dev, status.dev)
	if err != nil {
		return nil, err
	}
	chk, err := k.checkPass(ctx, s, shift, checksums, lows.dev, table.dev, pieces.dev, status.dev)
	if err != nil {
		return nil, err
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return nil, err
	}
	resetStatus(cmd, status.dev)
	for _, i := range []staged{lows, table, pieces} {
		b.copyUp(cmd, i)
	}
	cmd.Barrier()
	var pw pushWriter
	pw.u32(uint32(C), uint32(g.ChunkLen(C-1)), b2u(checksums), uint32(pieceLen), uint32(g.LowBytes()/4),
		uint32(layout.Align4(2*n)/4), 0, 0, 0, 0)
	chk.record(cmd, true, C, g, pieceLen, 0, 0, 0)
	cmd.Dispatch(dec, bd, pw.b, k.decodeGroups(C), 1, 1)
	chk.record(cmd, false, C, g, pieceLen, 0, 0, 0)
	cmd.Barrier()
	b.copyDown(cmd, out)
	b.copyDown(cmd, status)
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return nil, mapVK(err)
	}
	copy(dst, out.host.bytes()[:2*n])
	return huffStatusErr(status.host.bytes(), ""), nil
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

// huffKernels is the backend's huff kernel set, made on first use and closed with the backend.
func (b *Backend) huffKernels() *HuffKernels {
	b.huffOnce.Do(func() { b.huff = NewHuffKernels(b) })
	return b.huff
}

// encodeHuff encodes huff bodies, one queue submission per tensor, into the jobs' Dst buffers.
func (b *Backend) encodeHuff(ctx context.Context, jobs []codec.EncodeJob) error {
	k := b.huffKernels()
	for i := range jobs {
		j := &jobs[i]
		g := layout.Huff{N: j.N, Shift: j.Shift}
		if uint64(cap(j.Dst)) < g.MaxBodySize() {
			return invalid("destination capacity %d below the %d-byte worst case", cap(j.Dst), g.MaxBodySize())
		}
		body, err := k.Encode(ctx, j.Src, j.N, j.Shift, j.Checksums)
		if err != nil {
			return err
		}
		j.Out = j.Dst[:copy(j.Dst[:len(body)], body)]
	}
	return nil
}

// decodeHuff decodes huff bodies, one queue submission per tensor; invalid bodies get the reference's error class
// in their job's Err.
func (b *Backend) decodeHuff(ctx context.Context, jobs []codec.DecodeJob) error {
	k := b.huffKernels()
	for i := range jobs {
		j := &jobs[i]
		bodyErr, err := k.Decode(ctx, j.Body, j.N, j.Shift, j.Checksums, j.Dst)
		if err != nil {
			return err
		}
		if bodyErr != nil {
			j.Err = tensorErr(bodyErr, j.Name)
		}
	}
	return nil
}

// words is a view's offset from its binding's start, in 32-bit words (views of caller buffers start at multiples of
// 4 bytes).
func (v view) words() uint32 { return uint32(v.base / 4) }

// prepareEncodeHuff records the device-resident encode of n values at src into a huff body at dst: the three passes
// with timestamps around each, the caller's buffers bound in place.
func (b *Backend) prepareEncodeHuff(ctx context.Context, src vk.BufferRange, n uint64, shift uint, checksums bool,
	dst vk.BufferRange) (*EncodeOp, error) {
	k := b.huffKernels()
	g, err := k.geometry(n, shift)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if src.Offset%16 != 0 || dst.Offset%4 != 0 {
		return nil, invalid("source offset must be a multiple of 16 and destination offset of 4")
	}
	if err := within(src, 0, layout.Align4(2*n), "source"); err != nil {
		return nil, err
	}
	if err := within(dst, 0, g.MaxBodySize(), "destination"); err != nil {
		return nil, err
	}
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &EncodeOp{recorded: recorded{b: b, s: s}}
	if err := op.prepareHuff(ctx, k, src, g, checksums, dst); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

func (op *EncodeOp) prepareHuff(ctx context.Context, k *HuffKernels, src vk.BufferRange, g layout.Huff, checksums bool,
	dst vk.BufferRange) error {
	b, s := op.b, op.s
	C := g.Chunks()
	nb := (C + 63) / 64
	vSrc := bufView(src, 0, layout.Align4(2*g.N))
	vLows := bufView(dst, 0, g.LowBytes())
	vTable := bufView(dst, g.TableOffset(), layout.ChunkEntrySize*C)
	vPieces := bufView(dst, g.PieceOffset(), max(g.MaxBodySize()-g.PieceOffset(), 4))
	scratch, err := s.dev.alloc(C << g.Shift)
	if err != nil {
		return err
	}
	work, err := s.allocOut(b, 4*(2*nb+1))
	if err != nil {
		return err
	}
	op.total, op.nb, op.sideOff = work.host, nb, g.PieceOffset()
	enc, err := k.pipeline("huff_encode", k.EncodeWG, g.Shift)
	if err != nil {
		return err
	}
	place, err := k.pipeline("huff_place", k.PlaceWG, g.Shift)
	if err != nil {
		return err
	}
	scan, err := b.pipeline("sz4_scan", min(uint32(b.t.WorkGroup), 1<<layout.MaxChunkShift/8), 0)
	if err != nil {
		return err
	}
	bdEnc, err := s.bind(b, enc, vSrc.l, vLows.l, vTable.l, scratch, work.dev)
	if err != nil {
		return err
	}
	bdScan, err := s.bind(b, scan, work.dev)
	if err != nil {
		return err
	}
	placeConsts, err := b.constsFor(ctx, "huff_place", k.PlaceWG, g.Shift)
	if err != nil {
		return err
	}
	bdPlace, err := s.bind(b, place, vTable.l, scratch, vPieces.l, vLows.l, work.dev, placeConsts)
	if err != nil {
		return err
	}
	if err := op.beginTimed(4); err != nil {
		return err
	}
	groups := uint32(min(C, uint64(b.groups)))
	last := uint32(g.ChunkLen(C - 1))
	cmd := s.cmd
	cmd.FillBuffer(work.dev.buf, work.dev.off, work.dev.size, 0)
	cmd.Barrier()
	var pw pushWriter
	cmd.Dispatch(enc, bdEnc, pw.u32(uint32(C), last, uint32(layout.Align4(2*g.N)/4), uint32(g.LowBytes()/4),
		vSrc.words(), vLows.words(), vTable.words()).b, groups, 1, 1)
	cmd.Barrier()
	cmd.Timestamp(op.qp, 1)
	var ps pushWriter
	cmd.Dispatch(scan, bdScan, ps.u32(uint32(nb)).b, 1, 1, 1)
	cmd.Barrier()
	cmd.Timestamp(op.qp, 2)
	var pp pushWriter
	cmd.Dispatch(place, bdPlace, pp.u32(uint32(C), last, uint32(nb), b2u(checksums), uint32(g.LowBytes()/4),
		vTable.words(), vPieces.words(), vLows.words()).b, groups, 1, 1)
	cmd.Barrier()
	cmd.Timestamp(op.qp, 3)
	b.copyDown(cmd, work)
	cmd.BarrierToHost()
	return cmd.End()
}

// prepareDecodeHuff records the device-resident decode of a huff body of bodyLen bytes at body into n values at
// dst. The host never reads the body: the kernel checks the structure too (§14.4), in the reference's order.
func (b *Backend) prepareDecodeHuff(ctx context.Context, body vk.BufferRange, bodyLen, n uint64, shift uint,
	checksums bool, dst vk.BufferRange) (*DecodeOp, error) {
	k := b.huffKernels()
	g, err := k.geometry(n, shift)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("empty tensor")
	}
	if err := checkDecodeRanges(body, bodyLen, g.MinBodySize(), g.MaxBodySize(), dst, n); err != nil {
		return nil, err
	}
	s, err := b.opSession()
	if err != nil {
		return nil, err
	}
	op := &DecodeOp{recorded: recorded{b: b, s: s}, statusFn: huffStatusErr}
	if err := op.prepareHuff(ctx, k, body, bodyLen, g, checksums, dst); err != nil {
		op.Close()
		return nil, err
	}
	return op, nil
}

func (op *DecodeOp) prepareHuff(ctx context.Context, k *HuffKernels, body vk.BufferRange, bodyLen uint64, g layout.Huff,
	checksums bool, dst vk.BufferRange) error {
	b, s := op.b, op.s
	C := g.Chunks()
	pieceLen := bodyLen - g.PieceOffset()
	vLows := bufView(body, 0, g.LowBytes())
	vTable := bufView(body, g.TableOffset(), layout.ChunkEntrySize*C)
	vPieces := bufView(body, g.PieceOffset(), max(pieceLen, 4))
	vDst := bufView(dst, 0, layout.Align4(2*g.N))
	status, err := s.allocOut(b, 32)
	if err != nil {
		return err
	}
	op.status = status.host
	dec, err := k.pipeline(k.decodeKernel(), k.DecodeWG, g.Shift)
	if err != nil {
		return err
	}
	bd, err := s.bind(b, dec, vLows.l, vTable.l, vPieces.l, vDst.l, status.dev)
	if err != nil {
		return err
	}
	chk, err := k.checkPass(ctx, s, g.Shift, checksums, vLows.l, vTable.l, vPieces.l, status.dev)
	if err != nil {
		return err
	}
	if err := op.beginTimed(2); err != nil {
		return err
	}
	cmd := s.cmd
	resetStatus(cmd, status.dev)
	cmd.Barrier()
	var pw pushWriter
	pw.u32(uint32(C), uint32(g.ChunkLen(C-1)), b2u(checksums), uint32(pieceLen), uint32(g.LowBytes()/4),
		uint32(layout.Align4(2*g.N)/4), vLows.words(), vTable.words(), vPieces.words(), vDst.words())
	chk.record(cmd, true, C, g, pieceLen, vLows.words(), vTable.words(), vPieces.words())
	cmd.Dispatch(dec, bd, pw.b, k.decodeGroups(C), 1, 1)
	chk.record(cmd, false, C, g, pieceLen, vLows.words(), vTable.words(), vPieces.words())
	cmd.Barrier()
	cmd.Timestamp(op.qp, 1)
	b.copyDown(cmd, status)
	cmd.BarrierToHost()
	return cmd.End()
}

// huffCheck is a decode's checksum pass (shaders/huff_check.comp), recorded beside huff_decode with no barrier
// between them: the decoder is bound by the latency of its decode chains and by shared memory, so the CRCs run in a
// kernel of their own with many more words in flight per SM. Both only read the body, and meet in the status words
// through atomics. The zero value records nothing (checksums off).
type huffCheck struct {
	pipe   *vk.Pipeline
	bd     *vk.Bindings
	groups uint32 // the grid's cap
	first  bool   // recorded before the decoder
}

// checkPass prepares the checksum pass of a decode over lows, table and pieces into status.
func (k *HuffKernels) checkPass(ctx context.Context, s *session, shift uint, checksums bool, lows, table, pieces,
	status loc) (huffCheck, error) {
	if !checksums {
		return huffCheck{}, nil
	}
	b := k.b
	pipe, err := k.pipeline("huff_check", k.CheckWG, shift)
	if err != nil {
		return huffCheck{}, err
	}
	consts, err := b.constsFor(ctx, "huff_check", k.CheckWG, shift)
	if err != nil {
		return huffCheck{}, err
	}
	bd, err := s.bind(b, pipe, lows, table, pieces, status, consts)
	if err != nil {
		return huffCheck{}, err
	}
	g := b.groups
	if k.CheckGroups != 0 {
		g = min(g, k.CheckGroups)
	}
	return huffCheck{pipe: pipe, bd: bd, groups: g, first: k.CheckFirst}, nil
}

// record dispatches the pass over C chunks (bases: words from each binding's start to its data) if it goes
// before the decoder (before) or after it (!before).
func (h huffCheck) record(cmd *vk.Commands, before bool, C uint64, g layout.Huff, pieceLen uint64, lowBase, tableBase,
	pieceBase uint32) {
	if h.pipe == nil || before != h.first {
		return
	}
	var pw pushWriter
	pw.u32(uint32(C), uint32(g.ChunkLen(C-1)), uint32(pieceLen), uint32(g.LowBytes()/4), lowBase, tableBase, pieceBase)
	cmd.Dispatch(h.pipe, h.bd, pw.b, uint32(min(C, uint64(h.groups))), 1, 1)
}
