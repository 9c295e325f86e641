//go:build unix

package cudavk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/vk"
)

// The self-test server: the Go side of examples/cuda_client.py (and of the
// in-repo Go client test). It exports Vulkan buffers src/body/dst and
// timeline semaphores ready/done to a client process over a Unix socket,
// then encodes src and decodes into dst on request, ordered by the
// semaphores the client's CUDA stream signals. docs/CUDA.md describes the
// messages.

// SelfTestOptions configure ServeSelfTest.
type SelfTestOptions struct {
	Values    uint64        // capacity of src and dst in BF16 values (default 1<<24)
	Shift     uint          // chunk shift (default layout.DefaultChunkShift)
	Checksums bool          // chunk checksums
	Timeout   time.Duration // bound on one request, semaphore waits included (default 2 min)
	// Probe writes a random marker at the start of src, body and dst before
	// the handshake and sends it in the config message, so a client without
	// CUDA (tests on lavapipe, whose exported fds are mmappable memfds with
	// a header) can find the data in its mapping.
	Probe bool
	Log   io.Writer // progress lines (nil: none)
}

// RoundReport is one encode/decode request as the server saw it.
type RoundReport struct {
	Round       string              `json:"round"`
	Source      string              `json:"source"` // "shared" (zero copy / copy path) or "host"
	Values      uint64              `json:"values"`
	BodyLen     uint64              `json:"body_len"`
	Ordering    cudabridge.Ordering `json:"ordering"`
	ReadyAtSub  uint64              `json:"ready_value_at_submit"` // "ready" when the encode was queued (< wait value: queued before CUDA signalled)
	EncodeMs    float64             `json:"encode_ms"`             // queueing → encode complete (includes the semaphore wait)
	DecodeMs    float64             `json:"decode_ms"`
	Counters    cudabridge.Counters `json:"counters"`            // this round's delta
	VKUploaded  uint64              `json:"vk_bytes_uploaded"`   // vk.Device Stats delta
	VKDownload  uint64              `json:"vk_bytes_downloaded"` // vk.Device Stats delta
	Error       string              `json:"error,omitempty"`
	ClientError string              `json:"-"`
}

// SelfTestReport is what ServeSelfTest observed.
type SelfTestReport struct {
	Rounds   []RoundReport       `json:"rounds"`
	Counters cudabridge.Counters `json:"counters"`
	ClientOK bool                `json:"client_ok"`
	Client   cudabridge.Control  `json:"client_summary,omitempty"`
}

func (o *SelfTestOptions) defaults() {
	if o.Values == 0 {
		o.Values = 1 << 24
	}
	if o.Shift == 0 {
		o.Shift = layout.DefaultChunkShift
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
}

func (o *SelfTestOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "cuda-selftest: "+format+"\n", args...)
	}
}

// ListenSelfTest listens on a Unix socket path (removed first if it is a
// stale socket), accepts one client and serves it.
func ListenSelfTest(ctx context.Context, b *vkcodec.Backend, path string, o SelfTestOptions) (*SelfTestReport, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	o.logf("listening on %s", path)
	if dl, ok := ctx.Deadline(); ok {
		l.SetDeadline(dl)
	}
	type accepted struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan accepted, 1)
	go func() { c, err := l.AcceptUnix(); ch <- accepted{c, err} }()
	var a accepted
	select {
	case a = <-ch:
	case <-ctx.Done():
		l.Close()
		return nil, ctx.Err()
	}
	if a.err != nil {
		return nil, a.err
	}
	defer a.c.Close()
	return ServeSelfTest(ctx, b, a.c, o)
}

type selfTest struct {
	o        SelfTestOptions
	b        *vkcodec.Backend
	dev      *vk.Device
	conn     *net.UnixConn
	src      *vk.Buffer
	body     *vk.Buffer
	dst      *vk.Buffer
	ready    *vk.Semaphore
	done     *vk.Semaphore
	exported bool // semaphores went to the client
	encs     map[uint64]*vkcodec.EncodeOp
	hsrc     *vk.Buffer // host path: plain device buffers
	hbody    *vk.Buffer
	hdst     *vk.Buffer
}

// ServeSelfTest runs the self-test protocol on an accepted connection.
func ServeSelfTest(ctx context.Context, b *vkcodec.Backend, conn *net.UnixConn, o SelfTestOptions) (*SelfTestReport, error) {
	o.defaults()
	st := &selfTest{o: o, b: b, dev: b.VK(), conn: conn, encs: map[uint64]*vkcodec.EncodeOp{}}
	defer st.close()
	if err := st.setup(ctx); err != nil {
		cudabridge.SendControl(conn, cudabridge.Control{"op": "error", "error": err.Error()})
		return nil, err
	}
	rep := &SelfTestReport{}
	start := cudabridge.ReadCounters()
	for {
		msg, err := cudabridge.RecvControl(conn)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return rep, fmt.Errorf("client closed the connection before saying bye")
			}
			return rep, err
		}
		switch msg.Op() {
		case "imported":
			o.logf("client imported the buffers: %v", msg)
		case "error":
			return rep, fmt.Errorf("client error: %s", msg.Str("error"))
		case "encode":
			r := st.roundShared(ctx, msg)
			rep.Rounds = append(rep.Rounds, r)
			if err := cudabridge.SendControl(conn, resultMsg(r)); err != nil {
				return rep, err
			}
		case "host_encode":
			r, out := st.roundHost(ctx, msg)
			rep.Rounds = append(rep.Rounds, r)
			if err := cudabridge.SendControl(conn, resultMsg(r)); err != nil {
				return rep, err
			}
			if r.Error == "" {
				if err := cudabridge.SendFrame(conn, cudabridge.KindData, out, nil); err != nil {
					return rep, err
				}
			}
		case "bye":
			rep.Counters = cudabridge.ReadCounters().Sub(start)
			rep.ClientOK = msg.Bool("ok")
			rep.Client = msg
			err := cudabridge.SendControl(conn, cudabridge.Control{"op": "bye", "counters": rep.Counters})
			o.logf("client says ok=%v; server counters %+v", rep.ClientOK, rep.Counters)
			if err == nil && !rep.ClientOK {
				err = fmt.Errorf("client reported failure: %s", msg.Str("error"))
			}
			return rep, err
		default:
			return rep, protocolf("unknown op %q", msg.Op())
		}
	}
}

func resultMsg(r RoundReport) cudabridge.Control {
	return cudabridge.Control{"op": "result", "round": r.Round, "ok": r.Error == "", "error": r.Error, "values": r.Values,
		"body_len": r.BodyLen, "ordering": r.Ordering, "ready_value_at_submit": r.ReadyAtSub,
		"encode_ms": r.EncodeMs, "decode_ms": r.DecodeMs, "counters": r.Counters,
		"vk_bytes_uploaded": r.VKUploaded, "vk_bytes_downloaded": r.VKDownload}
}

func (st *selfTest) setup(ctx context.Context) error {
	o, dev := st.o, st.dev
	g := layout.SZ4{N: o.Values, Shift: o.Shift}
	var err error
	alloc := func(size uint64) (*vk.Buffer, error) {
		return dev.NewBuffer(size, vk.DeviceLocal, vk.BufferOptions{ExportableFD: true})
	}
	if st.src, err = alloc(pad256(2 * o.Values)); err != nil {
		return err
	}
	if st.body, err = alloc(pad256(g.MaxBodySize())); err != nil {
		return err
	}
	if st.dst, err = alloc(pad256(2 * o.Values)); err != nil {
		return err
	}
	st.exported = dev.Features().ExternalSemaphoreFD
	semOpts := vk.SemaphoreOptions{ExportableFD: st.exported}
	if st.ready, err = dev.NewTimelineSemaphore(0, semOpts); err != nil {
		return err
	}
	if st.done, err = dev.NewTimelineSemaphore(0, semOpts); err != nil {
		return err
	}
	info := dev.Info()
	h := &cudabridge.Handshake{DeviceUUID: hex.EncodeToString(info.UUID[:]), DriverUUID: hex.EncodeToString(info.DriverUUID[:]),
		Device: info.Name}
	var fds []int
	defer func() { cudabridge.CloseFDs(fds) }()
	addBuf := func(name string, b *vk.Buffer, dtype string, shape uint64) error {
		fd, err := b.ExportFD()
		if err != nil {
			return err
		}
		h.Buffers = append(h.Buffers, cudabridge.BufferDesc{Name: name, FD: len(fds), Handle: cudabridge.HandleVulkanFD, Dedicated: true,
			AllocSize: b.AllocationSize(), Offset: 0, Size: shape * cudabridge.DTypeSize[dtype], DType: dtype, Shape: []uint64{shape}})
		fds = append(fds, fd)
		return nil
	}
	if err := addBuf("src", st.src, "bf16", o.Values); err != nil {
		return err
	}
	if err := addBuf("body", st.body, "u8", st.body.Size()); err != nil {
		return err
	}
	if err := addBuf("dst", st.dst, "bf16", o.Values); err != nil {
		return err
	}
	if st.exported {
		for _, s := range []struct {
			name string
			sem  *vk.Semaphore
		}{{"ready", st.ready}, {"done", st.done}} {
			fd, err := s.sem.ExportFD()
			if err != nil {
				return err
			}
			h.Semaphores = append(h.Semaphores, cudabridge.SemaphoreDesc{Name: s.name, FD: len(fds), Type: cudabridge.SemaphoreTimeline})
			fds = append(fds, fd)
		}
	}
	cfg := cudabridge.Control{"op": "config", "protocol": cudabridge.ProtocolVersion, "values": o.Values, "chunk_shift": o.Shift,
		"checksums": o.Checksums, "gpu_ordering": GPUOrdering(), "semaphores_exported": st.exported,
		"vulkan_device": st.b.Device()}
	if o.Probe {
		probe := map[string]string{}
		for _, x := range []struct {
			name string
			b    *vk.Buffer
		}{{"src", st.src}, {"body", st.body}, {"dst", st.dst}} {
			var m [32]byte
			rand.Read(m[:])
			if err := dev.Upload(ctx, x.b, 0, m[:]); err != nil {
				return err
			}
			probe[x.name] = hex.EncodeToString(m[:])
		}
		cfg["probe"] = probe
	}
	cfg["server_cuda"] = serverCUDA(info)
	// Compile the pipelines now, not while the first round's CUDA op runs.
	if _, err := st.encOp(ctx, o.Values); err != nil {
		return err
	}
	if err := cudabridge.SendHandshake(st.conn, h, fds); err != nil {
		return err
	}
	st.o.logf("sent handshake: %d buffers, %d semaphores, device %s", len(h.Buffers), len(h.Semaphores), info.Name)
	return cudabridge.SendControl(st.conn, cfg)
}

// serverCUDA describes the CUDA device of this process that matches the
// Vulkan device, or why there is none (informative only: the client does
// the CUDA work).
func serverCUDA(info vk.DeviceInfo) string {
	d, err := cudabridge.Load()
	if err != nil {
		return err.Error()
	}
	devs, err := d.Devices()
	if err != nil {
		return err.Error()
	}
	m, err := cudabridge.MatchUUID(devs, info.UUID)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("CUDA %s, device %s", d.VersionString(), m)
}

func (st *selfTest) encOp(ctx context.Context, n uint64) (*vkcodec.EncodeOp, error) {
	if op := st.encs[n]; op != nil {
		return op, nil
	}
	op, err := st.b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: layout.FormatSplitZip4, Src: vk.BufferRange{Buf: st.src}, N: n, Shift: st.o.Shift,
		Codebook: kvCodebook(), Checksums: st.o.Checksums, Dst: vk.BufferRange{Buf: st.body},
	})
	if err != nil {
		return nil, err
	}
	st.encs[n] = op
	return op, nil
}

// roundShared encodes src (written by the client's CUDA stream) after
// "ready" reaches the requested value, signals "done" = encoded when the
// body is complete, decodes into dst and signals "done" = done.
func (st *selfTest) roundShared(ctx context.Context, msg cudabridge.Control) RoundReport {
	r := RoundReport{Round: msg.Str("round"), Source: "shared"}
	fail := func(err error) RoundReport { r.Error = err.Error(); return r }
	n, ok1 := msg.Uint("values")
	ready, ok2 := msg.Uint("ready")
	encoded, ok3 := msg.Uint("encoded")
	done, ok4 := msg.Uint("done")
	if !ok1 || !ok2 || !ok3 || !ok4 || n == 0 || n > st.o.Values || !(encoded < done) {
		return fail(protocolf("encode needs values in [1, %d] and integers ready, encoded < done", st.o.Values))
	}
	r.Values = n
	// On failure, still release the client's CUDA stream, which waits for "done".
	fail = func(err error) RoundReport {
		r.Error = err.Error()
		if v, verr := st.done.Value(); verr == nil && v < done {
			st.done.Signal(done)
		}
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
	defer cancel()
	c0, s0 := cudabridge.ReadCounters(), st.dev.Stats()
	enc, err := st.encOp(ctx, n)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	run, err := cudabridge.StartEncode(ctx, enc, []vk.SemaphoreValue{{Sem: st.ready, Value: ready}},
		[]vk.SemaphoreValue{{Sem: st.done, Value: encoded}})
	if err != nil {
		return fail(err)
	}
	r.Ordering = run.Ordering()
	r.ReadyAtSub, _ = st.ready.Value()
	if msg.Bool("host_signal") {
		// A client without CUDA (local tests) cannot signal: do it here,
		// after the encode was queued.
		go func() { time.Sleep(20 * time.Millisecond); st.ready.Signal(ready) }()
	}
	bodyLen, err := run.Wait(ctx)
	if err != nil {
		return fail(fmt.Errorf("encode: %w", err))
	}
	r.EncodeMs = float64(time.Since(t0).Microseconds()) / 1e3
	r.BodyLen = bodyLen
	dec, err := st.b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: st.body}, BodyLen: bodyLen, N: n,
		Shift: st.o.Shift, Codebook: kvCodebook(), Checksums: st.o.Checksums, Dst: vk.BufferRange{Buf: st.dst},
	})
	if err != nil {
		return fail(err)
	}
	defer dec.Close()
	t1 := time.Now()
	drun, err := cudabridge.StartDecode(ctx, dec, nil, []vk.SemaphoreValue{{Sem: st.done, Value: done}})
	if err != nil {
		return fail(err)
	}
	if _, err := drun.Wait(ctx); err != nil {
		return fail(fmt.Errorf("decode: %w", err))
	}
	r.DecodeMs = float64(time.Since(t1).Microseconds()) / 1e3
	cudabridge.CountZeroCopy(4 * n) // src read, dst written in place
	s1 := st.dev.Stats()
	r.Counters = cudabridge.ReadCounters().Sub(c0)
	r.VKUploaded, r.VKDownload = s1.BytesUploaded-s0.BytesUploaded, s1.BytesDownloaded-s0.BytesDownloaded
	st.o.logf("round %s: %d values, body %d bytes, ordering %s, ready=%d at submit, encode %.2f ms, decode %.2f ms",
		r.Round, n, bodyLen, r.Ordering, r.ReadyAtSub, r.EncodeMs, r.DecodeMs)
	return r
}

// roundHost is the host-staged path: the client sends the tensor's bytes
// (it copied them device→host), the server uploads them to an ordinary
// device buffer, encodes, decodes, downloads and sends them back. Every
// hop through host memory is counted.
func (st *selfTest) roundHost(ctx context.Context, msg cudabridge.Control) (RoundReport, []byte) {
	r := RoundReport{Round: msg.Str("round"), Source: "host", Ordering: cudabridge.OrderingHost}
	fail := func(err error) (RoundReport, []byte) { r.Error = err.Error(); return r, nil }
	n, ok := msg.Uint("values")
	if !ok || n == 0 || n > st.o.Values {
		return fail(protocolf("host_encode needs values in [1, %d]", st.o.Values))
	}
	r.Values = n
	kind, data, _, err := cudabridge.RecvFrame(st.conn, uint32(2*st.o.Values))
	if err != nil {
		return fail(err)
	}
	if kind != cudabridge.KindData || uint64(len(data)) != 2*n {
		return fail(protocolf("host_encode: want a data frame of %d bytes, got a %s frame of %d", 2*n, kind, len(data)))
	}
	ctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
	defer cancel()
	c0, s0 := cudabridge.ReadCounters(), st.dev.Stats()
	g := layout.SZ4{N: st.o.Values, Shift: st.o.Shift}
	if st.hsrc == nil {
		var err error
		if st.hsrc, err = st.dev.NewBuffer(pad256(2*st.o.Values), vk.DeviceLocal); err != nil {
			return fail(err)
		}
		if st.hbody, err = st.dev.NewBuffer(pad256(g.MaxBodySize()), vk.DeviceLocal); err != nil {
			return fail(err)
		}
		if st.hdst, err = st.dev.NewBuffer(pad256(2*st.o.Values), vk.DeviceLocal); err != nil {
			return fail(err)
		}
	}
	t0 := time.Now()
	if err := st.dev.Upload(ctx, st.hsrc, 0, data); err != nil {
		return fail(err)
	}
	cudabridge.CountHostStaged(uint64(len(data)))
	enc, err := st.b.PrepareEncode(ctx, vkcodec.EncodeSpec{
		Format: layout.FormatSplitZip4, Src: vk.BufferRange{Buf: st.hsrc}, N: n, Shift: st.o.Shift,
		Codebook: kvCodebook(), Checksums: st.o.Checksums, Dst: vk.BufferRange{Buf: st.hbody},
	})
	if err != nil {
		return fail(err)
	}
	defer enc.Close()
	bodyLen, err := enc.Run(ctx)
	if err != nil {
		return fail(err)
	}
	r.EncodeMs = float64(time.Since(t0).Microseconds()) / 1e3
	r.BodyLen = bodyLen
	t1 := time.Now()
	dec, err := st.b.PrepareDecode(ctx, vkcodec.DecodeSpec{
		Format: layout.FormatSplitZip4, Body: vk.BufferRange{Buf: st.hbody}, BodyLen: bodyLen, N: n,
		Shift: st.o.Shift, Codebook: kvCodebook(), Checksums: st.o.Checksums, Dst: vk.BufferRange{Buf: st.hdst},
	})
	if err != nil {
		return fail(err)
	}
	defer dec.Close()
	if err := dec.Run(ctx); err != nil {
		return fail(err)
	}
	out := make([]byte, 2*n)
	if err := st.dev.Download(ctx, out, st.hdst, 0); err != nil {
		return fail(err)
	}
	cudabridge.CountHostStaged(uint64(len(out)))
	r.DecodeMs = float64(time.Since(t1).Microseconds()) / 1e3
	s1 := st.dev.Stats()
	r.Counters = cudabridge.ReadCounters().Sub(c0)
	r.VKUploaded, r.VKDownload = s1.BytesUploaded-s0.BytesUploaded, s1.BytesDownloaded-s0.BytesDownloaded
	st.o.logf("round %s (host-staged): %d values, body %d bytes, encode %.2f ms, decode %.2f ms",
		r.Round, n, bodyLen, r.EncodeMs, r.DecodeMs)
	return r, out
}

func (st *selfTest) close() {
	for _, op := range st.encs {
		op.Close()
	}
	// Outstanding submissions may still reference the buffers: release any
	// submission still waiting for a client that went away, then wait.
	if st.ready != nil {
		st.ready.Signal(1 << 62)
	}
	st.dev.WaitIdle()
	for _, b := range []*vk.Buffer{st.src, st.body, st.dst, st.hsrc, st.hbody, st.hdst} {
		if b != nil {
			b.Close()
		}
	}
	for _, s := range []*vk.Semaphore{st.ready, st.done} {
		if s != nil {
			s.Close()
		}
	}
}

// kvCodebook is the synthetic KV data's codebook, for the SplitZip-4 operations of the self-test.
func kvCodebook() *codec.Codebook {
	cb := synth.KVCodebook()
	return &cb
}
