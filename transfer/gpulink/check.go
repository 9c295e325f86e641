package gpulink

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
)

// CheckResult is what Check saw.
type CheckResult struct {
	NCCLVersion string            `json:"nccl_version"`
	NCCLLibrary string            `json:"nccl_library"`
	CUDADriver  string            `json:"cuda_driver"`
	Devices     [2]string         `json:"devices"`
	Env         map[string]string `json:"env"`
	Bytes       int64             `json:"bytes"`
	// FirstSeconds includes NCCL's connection set-up; SecondSeconds is the same transfer again.
	FirstSeconds  float64 `json:"first_seconds"`
	SecondSeconds float64 `json:"second_seconds"`
	BitExact      bool    `json:"bit_exact"`
}

// Check is a small NCCL sanity step without Vulkan: n bytes of a pattern in ordinary CUDA memory on GPU 0 are sent
// to GPU 1 twice and compared there.
func Check(ctx context.Context, o LinkOptions, n int) (*CheckResult, error) {
	if n <= 0 {
		n = 1 << 20
	}
	l, err := openLink(&o, false)
	if err != nil {
		return nil, err
	}
	defer l.close()
	r := &CheckResult{NCCLVersion: l.lib.VersionString(), NCCLLibrary: l.lib.Path(), CUDADriver: l.drv.VersionString(),
		Devices: [2]string{l.g[0].info.String(), l.g[1].info.String()}, Env: nccl.Env(), Bytes: int64(n)}
	src, err := l.g[0].cu.Alloc(uint64(n))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := l.g[1].cu.Alloc(uint64(n))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	if err := l.g[0].cu.CopyFromHost(src.Ptr(), data); err != nil {
		return nil, err
	}
	got := make([]byte, n)
	for i, secs := range []*float64{&r.FirstSeconds, &r.SecondSeconds} {
		if err := l.g[1].cu.MemsetAsync(l.g[1].st, dst.Ptr(), 0xA5, uint64(n)); err != nil {
			return nil, err
		}
		if err := syncStream(ctx, l.g[1].st); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := sendRecv(ctx, l, src.Ptr(), dst.Ptr(), uint64(n)); err != nil {
			return nil, fmt.Errorf("transfer %d: %w", i+1, err)
		}
		*secs = time.Since(t0).Seconds()
		if err := l.g[1].cu.CopyToHost(got, dst.Ptr()); err != nil {
			return nil, err
		}
		if !bytes.Equal(got, data) {
			return r, fmt.Errorf("%w: transfer %d of %d bytes", ErrMismatch, i+1, n)
		}
	}
	r.BitExact = true
	return r, l.asyncErrors()
}

// sendRecv moves n bytes from GPU 0 to GPU 1 in one NCCL group and waits for both streams.
func sendRecv(ctx context.Context, l *link, src, dst cudabridge.DevicePtr, n uint64) error {
	err := l.lib.Group(
		nccl.Send(l.comms[0], src, n, nccl.Uint8, 1, l.g[0].st),
		nccl.Recv(l.comms[1], dst, n, nccl.Uint8, 0, l.g[1].st))
	if err != nil {
		return err
	}
	if err := syncStream(ctx, l.g[1].st); err != nil {
		return err
	}
	return syncStream(ctx, l.g[0].st)
}
