package vkcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/vk"
)

// The host-memory batch driver, one for every format: jobs are checked, split into batches that fit the memory
// budget, and each batch runs in one queue submission — inputs staged and uploaded, the formats' passes recorded
// side by side with one barrier between passes, outputs and status words downloaded, bodies and verdicts
// assembled.

// Encode encodes bodies from host memory: one queue submission per format present in jobs (and per memory budget).
func (b *Backend) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	return codec.EncodeByFormat(jobs, func(id uint8, jobs []codec.EncodeJob) error {
		f, err := lookupCodec(id)
		if err != nil {
			return err
		}
		return b.encodeWith(ctx, f, jobs)
	})
}

// Decode decodes bodies into host memory; invalid bodies get the reference's error class in their job's Err.
func (b *Backend) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	for i := range jobs {
		jobs[i].Err = nil
	}
	return codec.DecodeByFormat(jobs, func(id uint8, jobs []codec.DecodeJob) error {
		f, err := lookupCodec(id)
		if err != nil {
			return err
		}
		return b.decodeWith(ctx, f, jobs)
	})
}

func encodeTensor(j *codec.EncodeJob) tensor {
	return tensor{format: j.Format, dt: jobDType(j.DType), n: j.N, shift: j.Shift, cb: j.Codebook,
		checksums: j.Checksums, together: 1}
}

func decodeTensor(j *codec.DecodeJob) tensor {
	return tensor{format: j.Format, dt: jobDType(j.DType), n: j.N, shift: j.Shift, cb: j.Codebook,
		checksums: j.Checksums, bodyLen: uint64(len(j.Body)), together: 1, name: j.Name}
}

// encodeWith encodes jobs of format f.
func (b *Backend) encodeWith(ctx context.Context, f gpuCodec, jobs []codec.EncodeJob) error {
	ts := make([]tensor, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		ts[i] = encodeTensor(j)
		if err := f.check(b, &ts[i]); err != nil {
			return err
		}
		if uint64(len(j.Src)) < ts[i].valueBytes() || uint64(cap(j.Dst)) < f.shape(&ts[i]).maxBody {
			return invalid("%s encode: source of %d bytes for %d values, or destination capacity %d below the "+
				"largest body", codec.FormatName(j.Format), len(j.Src), j.N, cap(j.Dst))
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return ts[i].n, f.deviceBytes(b, &ts[i], true)
	}, func(from, to int) error { return b.encodeBatch(ctx, f, jobs[from:to], ts[from:to]) })
}

// decodeWith decodes jobs of format f; a body that fails checkBody gets its verdict without a run.
func (b *Backend) decodeWith(ctx context.Context, f gpuCodec, jobs []codec.DecodeJob) error {
	ts := make([]tensor, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		ts[i] = decodeTensor(j)
		if err := f.check(b, &ts[i]); err != nil {
			return err
		}
		if uint64(len(j.Dst)) != ts[i].valueBytes() {
			return invalid("%s decode: destination of %d bytes for %d values", codec.FormatName(j.Format),
				len(j.Dst), j.N)
		}
		if err := checkBody(j.Body, &ts[i]); err != nil {
			j.Err = tensorErr(err, j.Name)
		}
	}
	return b.inBatches(ctx, len(jobs), func(i int) (uint64, uint64) {
		return ts[i].n, f.deviceBytes(b, &ts[i], false)
	}, func(from, to int) error { return b.decodeBatch(ctx, f, jobs[from:to], ts[from:to]) })
}

// inBatches splits jobs into consecutive runs whose device memory fits the budget, one submission each, and
// stops between runs when ctx is done; job(i) gives job i's value count and the device memory its plan takes. A
// single job over the budget is refused.
func (b *Backend) inBatches(ctx context.Context, n int, job func(i int) (values, bytes uint64),
	run func(from, to int) error) error {
	budget := b.o.MemoryBudget
	for from := 0; from < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		to, used := from, uint64(0)
		for to < n {
			v, need := job(to)
			if budget > 0 && need > budget {
				return &codec.Error{Class: codec.ErrTooLarge, Chunk: -1, Detail: fmt.Sprintf(
					"a tensor of %d values needs %d bytes of device memory, over the %d-byte budget", v, need, budget)}
			}
			if budget > 0 && to > from && used+need > budget {
				break
			}
			used += need
			to++
		}
		if err := run(from, to); err != nil {
			return err
		}
		from = to
	}
	return nil
}

// hostPlan is one job's plan in a host-memory batch.
type hostPlan struct {
	p     *plan
	r     *regions
	sh    shape
	words staged // the work words (encode) or status words (decode) read back
}

// planHost plans one job of a batch in s (nil for an empty tensor, which needs no run), and stages its inputs
// from src (the job's values or body).
func (b *Backend) planHost(f gpuCodec, s *session, t *tensor, encode bool, src []byte) (hostPlan, error) {
	if t.n == 0 {
		return hostPlan{}, nil
	}
	h := hostPlan{r: &regions{b: b, s: s, host: true, encode: encode}, sh: f.shape(t)}
	var err error
	if encode {
		h.words, err = s.allocOut(b, h.sh.workBytes)
		h.r.work = h.words
		if err == nil {
			h.p, err = f.encode(b, t, h.r)
		}
	} else {
		h.words, err = s.allocOut(b, 4*layout.StatusWords)
		h.r.status = h.words.dev
		if err == nil {
			h.p, err = f.decode(b, t, h.r)
		}
	}
	if err == nil {
		err = h.r.err
	}
	if err != nil {
		return hostPlan{}, err
	}
	for _, c := range h.r.ins {
		stageIn(c.st.host.bytes(), src, c.off, c.size)
	}
	return h, nil
}

// stageIn copies size bytes at off of src (as far as src goes) into staging bytes h and zeroes the rest of h: the
// padding the kernels may read.
func stageIn(h, src []byte, off, size uint64) {
	n := 0
	if off < uint64(len(src)) {
		n = copy(h, src[off:min(off+size, uint64(len(src)))])
	}
	clear(h[n:])
}

// recordPlans records the passes of every plan, pass by pass, each pass after a barrier and a barrier after the
// last; between passes, between(k) runs (timestamps), when given.
func recordPlans(rec *recorder, plans []*plan, between func(k int)) error {
	for k := 0; ; k++ {
		started := false
		for _, p := range plans {
			if p == nil || k >= len(p.passes) {
				continue
			}
			if !started {
				rec.s.cmd.Barrier()
				if between != nil && k > 0 {
					between(k)
				}
				started = true
			}
			if err := p.passes[k](rec); err != nil {
				return err
			}
		}
		if !started {
			break
		}
	}
	rec.s.cmd.Barrier()
	return nil
}

func plansOf(hs []hostPlan) []*plan {
	ps := make([]*plan, len(hs))
	for i := range hs {
		ps[i] = hs[i].p
	}
	return ps
}

// encodeBatch encodes jobs (checked) in one submission.
func (b *Backend) encodeBatch(ctx context.Context, f gpuCodec, jobs []codec.EncodeJob, ts []tensor) error {
	return b.runBatch(ctx, f, ts, true, func(i int) []byte { return jobs[i].Src[:ts[i].valueBytes()] },
		func(i int, h hostPlan) error {
			j := &jobs[i]
			if h.p == nil {
				j.Out = j.Dst[:0]
				return nil
			}
			end, err := bodyEnd(h.words.host.bytes(), h.sh, codec.FormatName(j.Format))
			if err != nil {
				return err
			}
			out := j.Dst[:cap(j.Dst)]
			for _, c := range h.r.outs {
				if c.off < end {
					copy(out[c.off:min(c.off+c.size, end)], c.st.host.bytes())
				}
			}
			j.Out = out[:end]
			return nil
		})
}

// runBatch runs one batch in one submission: it plans each tensor (input(i): the bytes its inputs are staged
// from; nil: a job that needs no run), stages and uploads the inputs, zeroes the work words (encode) or resets the
// status words (decode), records every plan's passes side by side, downloads the outputs and the work or status
// words, and lets done(i, plan) assemble job i's result.
func (b *Backend) runBatch(ctx context.Context, f gpuCodec, ts []tensor, encode bool, input func(i int) []byte,
	done func(i int, h hostPlan) error) error {
	s, err := b.getSession()
	if err != nil {
		return err
	}
	defer b.putSession(s)
	s.reset()
	hs := make([]hostPlan, len(ts))
	for i := range ts {
		if in := input(i); in != nil || encode {
			if hs[i], err = b.planHost(f, s, &ts[i], encode, in); err != nil {
				return err
			}
		}
	}
	cmd := s.cmd
	if err := cmd.Begin(); err != nil {
		return err
	}
	for _, h := range hs {
		if h.p == nil {
			continue
		}
		if encode {
			zeroRegions(cmd, h.words.dev, h.r.zero)
		} else {
			resetStatus(cmd, h.r.status)
		}
		for _, c := range h.r.ins {
			b.copyUp(cmd, c.st)
		}
	}
	if err := recordPlans(&recorder{ctx: ctx, b: b, s: s}, plansOf(hs), nil); err != nil {
		return err
	}
	for _, h := range hs {
		if h.p == nil {
			continue
		}
		for _, c := range h.r.outs {
			b.copyDown(cmd, c.st)
		}
		b.copyDown(cmd, h.words)
	}
	cmd.BarrierToHost()
	if err := b.run(ctx, cmd); err != nil {
		return err
	}
	for i, h := range hs {
		if err := done(i, h); err != nil {
			return err
		}
	}
	return nil
}

// zeroRegions records the zeroing of an encode's work words and its format's zeroed regions.
func zeroRegions(cmd *vk.Commands, work loc, zero []loc) {
	cmd.FillBuffer(work.buf, work.off, work.size, 0)
	for _, z := range zero {
		cmd.FillBuffer(z.buf, z.off, z.size, 0)
	}
}

// bodyEnd is an encoded body's length: sh.sideOff plus the total the passes left in work. It comes from the
// device, so a total past the largest body is refused rather than trusted.
func bodyEnd(work []byte, sh shape, what string) (uint64, error) {
	total := uint64(binary.LittleEndian.Uint32(work[4*sh.totalWord:]))
	if total > sh.maxBody-sh.sideOff {
		return 0, &codec.Error{Class: codec.ErrCorrupt, Chunk: -1, Detail: "vulkan " + what + " encode: side total out of range"}
	}
	return sh.sideOff + total, nil
}

// decodeBatch decodes jobs (checked; those with a verdict already are skipped) in one submission.
func (b *Backend) decodeBatch(ctx context.Context, f gpuCodec, jobs []codec.DecodeJob, ts []tensor) error {
	return b.runBatch(ctx, f, ts, false, func(i int) []byte {
		if jobs[i].Err != nil {
			return nil
		}
		return jobs[i].Body
	}, func(i int, h hostPlan) error {
		j := &jobs[i]
		if h.p == nil {
			return nil
		}
		for _, c := range h.r.outs {
			if c.off < uint64(len(j.Dst)) {
				copy(j.Dst[c.off:min(c.off+c.size, uint64(len(j.Dst)))], c.st.host.bytes())
			}
		}
		j.Err = verdict(h.p.statusFn, h.words.host.bytes(), j.Name)
		return nil
	})
}

// verdict maps a decode's status words to the reference's error class (nil: valid) with the format's mapping fn
// (nil: statusErr).
func verdict(fn func(st []byte, name string) error, st []byte, name string) error {
	if fn != nil {
		return fn(st, name)
	}
	return statusErr(st, name)
}

// resetStatus records the reset of a decode status block: flags zero, and the lowest failing chunk of each class
// (words 1-3, see statusErr) all ones, so that the kernels' minimum finds the first.
func resetStatus(cmd *vk.Commands, st loc) {
	cmd.FillBuffer(st.buf, st.off, st.size, 0)
	cmd.FillBuffer(st.buf, st.off+4, 12, 0xFFFFFFFF)
}

func (b *Backend) run(ctx context.Context, cmd *vk.Commands) error {
	if err := cmd.End(); err != nil {
		return err
	}
	return b.submit(ctx, cmd)
}

// submit runs a recorded command buffer and waits for it.
func (b *Backend) submit(ctx context.Context, cmd *vk.Commands) error {
	sub, err := b.dev.Submit(cmd)
	if err != nil {
		return mapVK(err)
	}
	return b.wait(ctx, sub)
}

// wait waits for a submission (after a cancelled ctx, still until it completed, so its buffers can be reused).
func (b *Backend) wait(ctx context.Context, sub *vk.Submission) error {
	if err := sub.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			_ = sub.Wait(context.Background())
			return ctx.Err()
		}
		return mapVK(err)
	}
	return nil
}

// mapVK turns device loss into the codec's typed error.
func mapVK(err error) error {
	if err == nil {
		return nil
	}
	if isDeviceLost(err) {
		return &codec.Error{Class: codec.ErrDeviceLost, Chunk: -1, Detail: err.Error()}
	}
	return err
}

// statusErr maps a decode status block (flags, lowest chunk per class) to the reference's error class.
func statusErr(st []byte, name string) error {
	flags := binary.LittleEndian.Uint32(st)
	chunk := func(i int) int64 { return int64(binary.LittleEndian.Uint32(st[4*i:])) }
	switch {
	case flags&layout.StatusCorrupt != 0:
		return &codec.Error{Class: codec.ErrCorrupt, Tensor: name, Chunk: chunk(1), Detail: "chunk table inconsistent (GPU check)"}
	case flags&layout.StatusChecksum != 0:
		return &codec.Error{Class: codec.ErrChecksum, Tensor: name, Chunk: chunk(2), Detail: "CRC-32C mismatch (GPU check)"}
	case flags&layout.StatusNonCanonical != 0:
		return &codec.Error{Class: codec.ErrNonCanonical, Tensor: name, Chunk: chunk(3), Detail: "stream not canonical (GPU check)"}
	}
	return nil
}

func tensorErr(err error, name string) error {
	if e, ok := err.(*codec.Error); ok && e.Tensor == "" {
		c := *e
		c.Tensor = name
		return &c
	}
	return err
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func isDeviceLost(err error) bool { return errors.Is(err, vk.ErrDeviceLost) }

func invalid(f string, a ...any) error {
	return &codec.Error{Class: codec.ErrInvalidInput, Chunk: -1, Detail: fmt.Sprintf(f, a...)}
}

func errTooBig(size, limit uint64) error {
	return &codec.Error{Class: codec.ErrTooLarge, Chunk: -1,
		Detail: fmt.Sprintf("a %d-byte region exceeds this device's %d-byte binding limit; use smaller tensors or the cpu backend", size, limit)}
}

// checkBody checks on the host, with the reference's verdict, what of a body needs no chunk data: its format's
// CheckBody in package codec (sizes, the chunk table, piece headers), or for a format without one (stored) that
// its length is within the format's bounds. The kernels check everything again.
func checkBody(body []byte, t *tensor) error {
	f, ok := codec.LookupFormat(t.format)
	if !ok {
		return unsupportedFormat(t.format)
	}
	if f.CheckBody != nil {
		return f.CheckBody(body, t.dt, t.n, t.shift)
	}
	if lo, hi := f.BodyBounds(t.n, t.dt, t.shift); uint64(len(body)) < lo || uint64(len(body)) > hi {
		return &codec.Error{Class: codec.ErrCorrupt, Chunk: -1,
			Detail: fmt.Sprintf("%s body of %d bytes, expected %d to %d", f.Name, len(body), lo, hi)}
	}
	return nil
}
