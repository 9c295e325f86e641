package vkcodec

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// The Vulkan backend's format dispatch: every registered format runs here, through Backend.Encode/Decode and
// through a Codec, with the CPU backend's bytes and verdicts.

// mixedRecords are tensors of every float dtype (and a few no format codes) in sizes around chunk boundaries.
func mixedRecords(r *rand.Rand) []codec.Record {
	var recs []codec.Record
	for i, n := range []int{1, 1000, 1024, 5000} {
		recs = append(recs, codec.Record{Name: fmt.Sprintf("bf%d", i), DType: layout.DTypeBF16, Data: kvLike(r, n, 0.02)})
		for _, dt := range []layout.DType{layout.DTypeF8E5M2, layout.DTypeF8E4M3, layout.DTypeF16, layout.DTypeF32} {
			recs = append(recs, codec.Record{Name: fmt.Sprintf("%v-%d", dt, i), DType: dt, Data: xwValues(r, dt, n, 1.6)})
		}
	}
	return append(recs, codec.Record{Name: "i32", DType: layout.DTypeI32, Data: make([]byte, 12)},
		codec.Record{Name: "empty", DType: layout.DTypeF16, Data: nil},
		codec.Record{Name: "hdr", Blob: true, Data: []byte("{}")})
}

func TestBackendSupportsEveryFormat(t *testing.T) {
	vb := openTest(t, Options{})
	for _, f := range codec.Formats() {
		require.True(t, codec.SupportsFormat(vb, f.ID), "%s has no Vulkan kernels", f.Name)
	}
}

// TestCodecFormatsMatchCPU encodes mixed-dtype records with several format lists on both backends: the payloads
// are identical, and each backend decodes the other's.
func TestCodecFormatsMatchCPU(t *testing.T) {
	vb := openTest(t, Options{})
	r := rand.New(rand.NewPCG(41, 42))
	recs := mixedRecords(r)
	var all []byte
	for _, rc := range recs {
		all = append(all, rc.Data...)
	}
	ctx := context.Background()
	for _, spec := range []string{"", "tbe3,xw3", "tbe3,xw2", "xw4,xw2,splitzip4"} {
		for _, cs := range []bool{true, false} {
			for _, chunk := range []int{1024, 4096} {
				what := fmt.Sprintf("formats %q checksums %v chunk %d", spec, cs, chunk)
				opts := []codec.Option{codec.WithFormat(spec), codec.WithChecksums(cs), codec.WithChunkSize(chunk)}
				cc, err := codec.New(append(opts, codec.WithBackend(codec.NewCPUBackend(2)))...)
				require.NoError(t, err)
				gc, err := codec.New(append(opts, codec.WithBackend(vb))...)
				require.NoError(t, err)
				want, err := cc.Encode(ctx, nil, recs, true)
				require.NoError(t, err, what)
				got, err := gc.Encode(ctx, nil, recs, true)
				require.NoError(t, err, what)
				require.True(t, string(want) == string(got), "%s: payloads differ at byte %d", what, firstDiff(want, got))
				out, err := gc.DecodeAll(want, nil)
				require.NoError(t, err, what)
				require.True(t, string(all) == string(out), what)
				out, err = cc.DecodeAll(got, nil)
				require.NoError(t, err, what)
				require.True(t, string(all) == string(out), what)
			}
		}
	}
}

// TestBackendMixedJobsVerdicts runs one Encode and one Decode call holding tensors of every coded format, then
// damaged copies of their bodies: the Vulkan verdicts (class, chunk, tensor) are the CPU backend's.
func TestBackendMixedJobsVerdicts(t *testing.T) {
	vb := openTest(t, Options{})
	cpu := codec.NewCPUBackend(2)
	r := rand.New(rand.NewPCG(43, 44))
	ctx := context.Background()
	const shift = 10
	type tensor struct {
		f   uint8
		dt  layout.DType
		src []byte
	}
	var ts []tensor
	for _, n := range []int{3*1024 + 7, 2048} {
		ts = append(ts, tensor{layout.FormatSplitZip4, layout.DTypeBF16, kvLike(r, n, 0.01)},
			tensor{layout.FormatTBE3, layout.DTypeBF16, kvLike(r, n, 0.05)})
		for _, p := range xwTestPairs() {
			ts = append(ts, tensor{p.f, p.dt, xwValues(r, p.dt, n, 1.6)})
		}
	}
	encJobs := func() []codec.EncodeJob {
		jobs := make([]codec.EncodeJob, len(ts))
		for i, x := range ts {
			f, _ := codec.LookupFormat(x.f)
			n := uint64(len(x.src) / x.dt.Size())
			jobs[i] = codec.EncodeJob{Format: x.f, DType: x.dt, Src: x.src, N: n, Shift: shift, Checksums: true,
				Dst: make([]byte, f.MaxBodyOf(n, x.dt, shift))}
			if f.Codebook {
				jobs[i].Codebook = &testCB
			}
		}
		return jobs
	}
	want, got := encJobs(), encJobs()
	require.NoError(t, cpu.Encode(ctx, want))
	require.NoError(t, vb.Encode(ctx, got))
	for i := range ts {
		require.True(t, string(want[i].Out) == string(got[i].Out), "tensor %d (%s/%v): bodies differ at %d", i,
			codec.FormatName(ts[i].f), ts[i].dt, firstDiff(want[i].Out, got[i].Out))
	}
	for round := 0; round < 12; round++ {
		decJobs := func() []codec.DecodeJob {
			jobs := make([]codec.DecodeJob, len(ts))
			for i, x := range ts {
				body := append([]byte{}, want[i].Out...)
				if round > 0 {
					rr := rand.New(rand.NewPCG(uint64(round), uint64(i)))
					for k := 0; k <= round%3; k++ {
						bit := rr.IntN(8 * len(body))
						body[bit/8] ^= 1 << (bit % 8)
					}
				}
				jobs[i] = codec.DecodeJob{Name: fmt.Sprintf("t%d", i), Format: x.f, DType: x.dt, Body: body,
					N: want[i].N, Shift: shift, Codebook: want[i].Codebook, Checksums: round%2 == 0,
					Dst: make([]byte, len(x.src))}
			}
			return jobs
		}
		cj, gj := decJobs(), decJobs()
		require.NoError(t, cpu.Decode(ctx, cj))
		require.NoError(t, vb.Decode(ctx, gj))
		for i := range ts {
			what := fmt.Sprintf("round %d tensor %d (%s/%v)", round, i, codec.FormatName(ts[i].f), ts[i].dt)
			if cj[i].Err == nil {
				require.NoError(t, gj[i].Err, what)
				require.True(t, string(cj[i].Dst) == string(gj[i].Dst), what)
				if round == 0 {
					require.True(t, string(ts[i].src) == string(gj[i].Dst), what)
				}
				continue
			}
			var ce, ge *codec.Error
			require.True(t, errors.As(cj[i].Err, &ce), what)
			require.True(t, errors.As(gj[i].Err, &ge), "%s: cpu %v, vulkan %v", what, cj[i].Err, gj[i].Err)
			require.Equal(t, ce.Class, ge.Class, "%s: cpu %v, vulkan %v", what, cj[i].Err, gj[i].Err)
			require.Equal(t, ce.Chunk, ge.Chunk, "%s: cpu %v, vulkan %v", what, cj[i].Err, gj[i].Err)
			require.Equal(t, cj[i].Name, ge.Tensor, what)
		}
	}
}

// TestXWConcurrentCallers encodes and decodes exponent-window tensors from several goroutines at once through the
// backend (its kernel set is made on first use, by whichever caller comes first).
func TestXWConcurrentCallers(t *testing.T) {
	vb := openTest(t, Options{})
	pairs := xwTestPairs()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 45))
			for k := 0; k < 6; k++ {
				p := pairs[r.IntN(len(pairs))]
				n := uint64(1 + r.IntN(9000))
				src := xwValues(r, p.dt, int(n), 1.6)
				maxBody, _ := xwMaxBody(p.f, p.dt, n, 12)
				jobs := []codec.EncodeJob{{Format: p.f, DType: p.dt, Src: src, N: n, Shift: 12, Checksums: true,
					Dst: make([]byte, maxBody)}}
				if err := vb.Encode(context.Background(), jobs); err != nil {
					errs <- err
					return
				}
				dj := []codec.DecodeJob{{Format: p.f, DType: p.dt, Body: jobs[0].Out, N: n, Shift: 12, Checksums: true,
					Dst: make([]byte, len(src))}}
				if err := vb.Decode(context.Background(), dj); err != nil || dj[0].Err != nil {
					errs <- errors.Join(err, dj[0].Err)
					return
				}
				if string(dj[0].Dst) != string(src) {
					errs <- fmt.Errorf("%v: round trip differs", p)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
