package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// benchCodec is one prepared tensor's operations as the bench's timing loop runs them, each over buffers of its own:
// the input, the body, the decoder's output and the copy's destination (never the body or the output). The loop
// owns the order of every iteration: Poison, Encode, Copy, Decode, then Body and Output are read back and compared.
type benchCodec interface {
	// Poison fills the whole body and output buffers with benchPoison bytes.
	Poison(ctx context.Context) error
	// KeepBusy keeps the device working (an untimed copy over buffers the checks do not read) until the returned
	// stop is called, and Settle runs that copy until its time is back at the best it has shown: a GPU left idle
	// by the loop's host-side checks lowers its clocks, and a timed operation shorter than their ramp would be
	// measured at idle clocks. Both are no-ops where nothing idles.
	KeepBusy(ctx context.Context) (stop func() error)
	Settle(ctx context.Context) error
	// Encode encodes the input into the body buffer; it returns the body's length and the operation's own time
	// (GPU timestamps; 0: only the loop's wall clock measures it).
	Encode(ctx context.Context) (bodyLen uint64, t time.Duration, err error)
	// Copy copies the input into the copy buffer: the bandwidth roofline, and between Encode and Decode it evicts
	// the body from a last-level cache smaller than the input and the copy together.
	Copy(ctx context.Context) (time.Duration, error)
	// Decode decodes the body Encode wrote last into the output buffer.
	Decode(ctx context.Context) (time.Duration, error)
	// Body reads back the first n bytes of the body buffer, Output the whole output; the slices are valid until
	// the next call.
	Body(ctx context.Context, n uint64) ([]byte, error)
	Output(ctx context.Context) ([]byte, error)
}

// benchPoison is the byte the body and output buffers are filled with before every checked run: 0xFF… is a NaN in
// every float dtype the codecs take, and a body is never all 0xFF (its chunk table holds offsets below its length),
// so a run that leaves a buffer untouched, or any part of it whose right value differs, fails the check.
const benchPoison = 0xFF

// benchWrap, where set, wraps the operations the timing loop runs (tests inject broken codecs with it).
type benchWrap func(benchCodec) benchCodec

// loopOut is what benchLoop measured and checked.
type loopOut struct {
	encG, encW, decG, decW, cpy []float64 // GB/s of the timed iterations (G: the operation's own time)
	bodyLen                     uint64    // of the last iteration
	bodyOK, outOK               bool      // every iteration's body equalled want, every output the input
	failure                     string    // the first check that failed
}

// isCodecError reports whether err is the codec's verdict on data (a wrong body), which the loop counts as a failed
// check rather than a reason to stop.
func isCodecError(err error) bool {
	var ce *codec.Error
	return errors.As(err, &ce)
}

// firstDiff is the index of the first byte where a and b differ (the shorter length if one is a prefix).
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func allBytes(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return len(b) > 0
}

// benchLoop runs warm+iters iterations of ops and checks every one of them, warm-up included: the body and the
// output are poisoned before the encode, and after the decode the body must equal want and the output src. A codec
// right only in warm-up, wrong in a single iteration, or writing nothing at all fails the check. Poisoning and
// checking are outside the timed operations. size is the bytes of values each operation's rate counts, copyTraffic
// the bytes the copy reads and writes.
func benchLoop(ctx context.Context, ops benchCodec, src, want []byte, warm, iters int, size, copyTraffic int64) (*loopOut, error) {
	if allBytes(src, benchPoison) || allBytes(want, benchPoison) {
		return nil, fmt.Errorf("the data equals the poison pattern: its check could not fail")
	}
	r := &loopOut{bodyOK: true, outOK: true}
	fail := func(i int, f string, a ...any) {
		if r.failure != "" {
			return
		}
		phase := "timed"
		if i < warm {
			phase = "warm-up"
		}
		r.failure = fmt.Sprintf("iteration %d of %d (%s): %s", i+1, warm+iters, phase, fmt.Sprintf(f, a...))
	}
	pick := func(own, wall time.Duration) time.Duration {
		if own > 0 {
			return own
		}
		return wall
	}
	for i := 0; i < warm+iters; i++ {
		if err := ops.Poison(ctx); err != nil {
			return nil, fmt.Errorf("poisoning the buffers: %w", err)
		}
		if err := ops.Settle(ctx); err != nil {
			return nil, err
		}
		t0 := time.Now()
		bodyLen, ge, err := ops.Encode(ctx)
		te := time.Since(t0)
		if isCodecError(err) {
			r.bodyOK, r.outOK = false, false
			fail(i, "encode: %v", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		t0 = time.Now()
		gc, err := ops.Copy(ctx)
		tc := time.Since(t0)
		if err != nil {
			return nil, err
		}
		t0 = time.Now()
		gd, err := ops.Decode(ctx)
		td := time.Since(t0)
		if isCodecError(err) {
			r.outOK = false
			fail(i, "decode: %v", err)
		} else if err != nil {
			return nil, err
		}
		stop := ops.KeepBusy(ctx)
		err = r.check(ops, i, bodyLen, src, want, fail, ctx)
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return nil, err
		}
		if i == warm+iters-1 {
			r.bodyLen = bodyLen
		}
		if i >= warm {
			r.encG = append(r.encG, gbps(size, pick(ge, te)))
			r.encW = append(r.encW, gbps(size, te))
			r.decG = append(r.decG, gbps(size, pick(gd, td)))
			r.decW = append(r.decW, gbps(size, td))
			r.cpy = append(r.cpy, gbps(copyTraffic, pick(gc, tc)))
		}
	}
	return r, nil
}

// check reads iteration i's body and output back and compares them with want and src, recording a mismatch
// through fail; its error is a failure to read back.
func (r *loopOut) check(ops benchCodec, i int, bodyLen uint64, src, want []byte, fail func(int, string, ...any),
	ctx context.Context) error {
	{
		if bodyLen != uint64(len(want)) {
			r.bodyOK = false
			fail(i, "the body is %d bytes, the reference's %d", bodyLen, len(want))
		} else {
			body, err := ops.Body(ctx, bodyLen)
			if err != nil {
				return fmt.Errorf("reading the body back: %w", err)
			}
			if !bytes.Equal(body, want) {
				r.bodyOK = false
				fail(i, "the body differs from the reference at byte %d", firstDiff(body, want))
			}
		}
	}
	got, err := ops.Output(ctx)
	if err != nil {
		return fmt.Errorf("reading the output back: %w", err)
	}
	if !bytes.Equal(got, src) {
		r.outOK = false
		fail(i, "the decoded output differs from the input at byte %d", firstDiff(got, src))
	}
	return nil
}

// setChecks copies the loop's verdicts into out: bit_exact needs every body and every output right, matches_cpu
// every body.
func (r *loopOut) setChecks(out *benchOut) {
	out.BitExact, out.MatchesCPU = r.bodyOK && r.outOK, r.bodyOK
	out.CheckFailure = r.failure
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// cpuBenchOps runs a backend's host-memory calls (Encode and Decode of codec.Backend): the Go reference codec, or
// the Vulkan backend's host path (values staged up, bodies staged down). The copy roofline runs on the CPU's
// goroutines either way.
type cpuBenchOps struct {
	be      codec.Backend
	cpu     *codec.CPUBackend
	job     codec.EncodeJob // Src: the input; Dst: the loop's body buffer (not the reference body's)
	body    []byte          // what the last Encode wrote
	out, cp []byte
}

func newCPUBenchOps(be codec.Backend, cpu *codec.CPUBackend, ref codec.EncodeJob) *cpuBenchOps {
	job := ref
	job.Dst, job.Out = make([]byte, cap(ref.Dst)), nil
	return &cpuBenchOps{be: be, cpu: cpu, job: job, out: make([]byte, len(ref.Src)), cp: make([]byte, len(ref.Src))}
}

func (o *cpuBenchOps) Poison(context.Context) error {
	fill(o.job.Dst, benchPoison)
	fill(o.out, benchPoison)
	return nil
}

func (o *cpuBenchOps) Settle(context.Context) error { return nil }

func (o *cpuBenchOps) KeepBusy(context.Context) func() error { return func() error { return nil } }

func (o *cpuBenchOps) Encode(ctx context.Context) (uint64, time.Duration, error) {
	jobs := []codec.EncodeJob{o.job}
	if err := o.be.Encode(ctx, jobs); err != nil {
		return 0, 0, err
	}
	o.body = jobs[0].Out
	return uint64(len(o.body)), 0, nil
}

func (o *cpuBenchOps) Copy(context.Context) (time.Duration, error) {
	return copyParallel(o.cp, o.job.Src, o.cpu.Workers()), nil
}

func (o *cpuBenchOps) Decode(ctx context.Context) (time.Duration, error) {
	jobs := []codec.DecodeJob{{Format: o.job.Format, DType: o.job.DType, Body: o.body, N: o.job.N, Shift: o.job.Shift,
		Codebook: o.job.Codebook, Checksums: o.job.Checksums, Dst: o.out}}
	if err := o.be.Decode(ctx, jobs); err != nil {
		return 0, err
	}
	return 0, jobs[0].Err
}

func (o *cpuBenchOps) Body(_ context.Context, n uint64) ([]byte, error) {
	if n > uint64(len(o.body)) {
		return nil, fmt.Errorf("body of %d bytes asked, %d written", n, len(o.body))
	}
	return o.body[:n], nil
}

func (o *cpuBenchOps) Output(context.Context) ([]byte, error) { return o.out, nil }

// vkBenchOps runs the device-resident operations on device buffers.
type vkBenchOps struct {
	dev             *vk.Device
	body, out       *vk.Buffer
	n               uint64 // bytes of values
	enc             *vkcodec.EncodeOp
	dec             *vkcodec.DecodeOp
	cp              *vkcodec.CopyOp
	poison          *vk.Commands // fills body and out
	bestCopy        time.Duration
	bodyBuf, outBuf []byte
}

// newVKBenchOps records the poisoning fill of body and out (sizes multiples of 4).
func newVKBenchOps(dev *vk.Device, body, out *vk.Buffer, n uint64, enc *vkcodec.EncodeOp, dec *vkcodec.DecodeOp,
	cp *vkcodec.CopyOp) (*vkBenchOps, error) {
	cmd, err := dev.NewCommands()
	if err != nil {
		return nil, err
	}
	p := uint32(benchPoison) * 0x01010101
	if err := cmd.Begin(); err != nil {
		cmd.Close()
		return nil, err
	}
	cmd.FillBuffer(body, 0, body.Size()&^3, p)
	cmd.FillBuffer(out, 0, out.Size()&^3, p)
	cmd.Barrier()
	if err := cmd.End(); err != nil {
		cmd.Close()
		return nil, err
	}
	return &vkBenchOps{dev: dev, body: body, out: out, n: n, enc: enc, dec: dec, cp: cp, poison: cmd,
		outBuf: make([]byte, n)}, nil
}

func (o *vkBenchOps) Close() { o.poison.Close() }

func (o *vkBenchOps) Poison(ctx context.Context) error {
	sub, err := o.dev.Submit(o.poison)
	if err != nil {
		return err
	}
	return sub.Wait(ctx)
}

func (o *vkBenchOps) Settle(ctx context.Context) error { return settleGPU(ctx, o.cp, &o.bestCopy) }

func (o *vkBenchOps) KeepBusy(ctx context.Context) func() error { return keepBusy(ctx, o.cp) }

// Settling: the first settle learns the copy's best time over settleLearn; every settle ends once a copy is
// within 10 % of the best (after at least settleMin and three copies), or after settleMax whatever the times.
const (
	settleLearn = 300 * time.Millisecond
	settleMin   = 10 * time.Millisecond
	settleMax   = 2 * time.Second
)

// settleGPU runs cp back to back until its GPU time is back within 10 % of *best, the best it has shown.
func settleGPU(ctx context.Context, cp *vkcodec.CopyOp, best *time.Duration) error {
	learn := *best == 0
	t0 := time.Now()
	for i := 0; ; i++ {
		if err := cp.Run(ctx); err != nil {
			return fmt.Errorf("settling the device: %w", err)
		}
		d := cp.GPUTime()
		if d > 0 && (*best == 0 || d < *best) {
			*best = d
		}
		el := time.Since(t0)
		switch {
		case el >= settleMax:
			return nil
		case learn && el < settleLearn, i < 2, el < settleMin:
		case d <= *best+*best/10:
			return nil
		}
	}
}

// keepBusy runs cp back to back on a goroutine until the returned stop is called; stop returns the first error.
func keepBusy(ctx context.Context, cp *vkcodec.CopyOp) func() error {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			select {
			case <-done:
				errc <- nil
				return
			default:
			}
			err = cp.Run(ctx)
		}
		errc <- fmt.Errorf("keeping the device busy: %w", err)
	}()
	return func() error {
		close(done)
		return <-errc
	}
}

func (o *vkBenchOps) Encode(ctx context.Context) (uint64, time.Duration, error) {
	n, err := o.enc.Run(ctx)
	return n, o.enc.GPUTime(), err
}

func (o *vkBenchOps) Copy(ctx context.Context) (time.Duration, error) {
	err := o.cp.Run(ctx)
	return o.cp.GPUTime(), err
}

func (o *vkBenchOps) Decode(ctx context.Context) (time.Duration, error) {
	err := o.dec.Run(ctx)
	return o.dec.GPUTime(), err
}

func (o *vkBenchOps) Body(ctx context.Context, n uint64) ([]byte, error) {
	if uint64(cap(o.bodyBuf)) < n {
		o.bodyBuf = make([]byte, n)
	}
	b := o.bodyBuf[:n]
	return b, o.dev.Download(ctx, b, o.body, 0)
}

func (o *vkBenchOps) Output(ctx context.Context) ([]byte, error) {
	return o.outBuf, o.dev.Download(ctx, o.outBuf, o.out, 0)
}
