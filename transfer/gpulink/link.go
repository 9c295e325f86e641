package gpulink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
	"github.com/vkzip/vkzip/cudabridge/nccl"
)

// LinkOptions choose the two GPUs and the libraries.
type LinkOptions struct {
	// Devices are the CUDA ordinals of the sending and the receiving GPU (nil: 0 and 1).
	Devices []int
	// CUDALib and NCCLLib are library paths ("": $VKZIP_CUDA_LIB or libcuda.so.1, $VKZIP_NCCL_LIB or
	// libnccl.so.2).
	CUDALib, NCCLLib string
	// Log receives progress lines (may be nil).
	Log func(format string, args ...any)
}

func (o *LinkOptions) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// gpu is one end: its CUDA context and stream, and its Vulkan codec (nil where not needed).
type gpu struct {
	ordinal int
	info    cudabridge.DeviceInfo
	cu      *cudabridge.Context
	st      *cudabridge.Stream
	vk      *vkcodec.Backend
}

// link is both GPUs and the NCCL communicators between them (rank 0 on GPU 0, rank 1 on GPU 1).
type link struct {
	drv   *cudabridge.Driver
	lib   *nccl.Lib
	g     [2]*gpu
	comms []*nccl.Comm
}

// loadLibraries loads NCCL and the CUDA driver. When both are missing the error wraps both ErrNoNCCL and ErrNoCUDA.
func loadLibraries(o *LinkOptions) (*cudabridge.Driver, *nccl.Lib, error) {
	// NCCL first: loading it puts the safety environment in place, before any CUDA or Vulkan initialisation.
	path := o.NCCLLib
	if path == "" {
		path = nccl.LibraryPath()
	}
	lib, errN := nccl.LoadLibrary(path)
	cpath := o.CUDALib
	if cpath == "" {
		cpath = cudabridge.LibraryPath()
	}
	drv, errC := cudabridge.LoadLibrary(cpath)
	switch {
	case errC != nil && errN != nil:
		return nil, nil, fmt.Errorf("%w; %w", errC, errN)
	case errC != nil:
		return nil, nil, errC
	case errN != nil:
		return nil, nil, errN
	}
	return drv, lib, nil
}

// Probe checks, without opening any device, that the CUDA driver and NCCL load and that there are two CUDA
// devices: what Bench and Check need before anything costly is prepared.
func Probe(o LinkOptions) error {
	drv, _, err := loadLibraries(&o)
	if err != nil {
		return err
	}
	devs, err := drv.Devices()
	if err != nil {
		return err
	}
	if len(devs) < 2 {
		return fmt.Errorf("%w, found %d: %s", ErrNeedTwoGPUs, len(devs), listCUDA(devs))
	}
	return nil
}

// openLink loads the libraries, opens both GPUs (with a Vulkan codec on each when withVulkan) and makes the
// communicators. On failure everything opened is closed again.
func openLink(o *LinkOptions, withVulkan bool) (l *link, err error) {
	if err := nccl.ApplyEnv(); err != nil {
		return nil, err
	}
	drv, lib, err := loadLibraries(o)
	if err != nil {
		return nil, err
	}
	l = &link{drv: drv, lib: lib}
	defer func() {
		if err != nil {
			l.close()
			l = nil
		}
	}()
	devs, err := drv.Devices()
	if err != nil {
		return nil, err
	}
	ords := o.Devices
	if ords == nil {
		ords = []int{0, 1}
	}
	if len(devs) < 2 {
		return nil, fmt.Errorf("%w, found %d: %s", ErrNeedTwoGPUs, len(devs), listCUDA(devs))
	}
	if len(ords) != 2 || ords[0] == ords[1] || ords[0] < 0 || ords[1] < 0 || ords[0] >= len(devs) || ords[1] >= len(devs) {
		return nil, fmt.Errorf("%w: devices %v of %s", ErrNeedTwoGPUs, ords, listCUDA(devs))
	}
	for i, ord := range ords {
		g := &gpu{ordinal: ord, info: devs[ord]}
		l.g[i] = g
		if g.cu, err = drv.Open(ord); err != nil {
			return nil, err
		}
		if g.st, err = g.cu.NewStream(); err != nil {
			return nil, err
		}
		if withVulkan {
			if g.vk, err = openVulkan(g.info); err != nil {
				return nil, err
			}
		}
	}
	o.logf("CUDA %s: %s → %s; NCCL %s (%s)", drv.VersionString(), l.g[0].info, l.g[1].info, lib.VersionString(), lib.Path())
	if l.comms, err = lib.InitAll(ords); err != nil {
		return nil, err
	}
	return l, nil
}

func listCUDA(devs []cudabridge.DeviceInfo) string {
	if len(devs) == 0 {
		return "no CUDA devices"
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// openVulkan opens the codec on the Vulkan device that is the CUDA device (same UUID): memory and semaphores are
// shared within one GPU only.
func openVulkan(info cudabridge.DeviceInfo) (*vkcodec.Backend, error) {
	devs, err := vkcodec.Devices()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range devs {
		if d.UUID == info.UUID {
			return vkcodec.Open(vkcodec.Options{Device: strconv.Itoa(d.Index)})
		}
		names = append(names, fmt.Sprintf("%d: %s (%s)", d.Index, d.Name, cudabridge.FormatUUID(d.UUID)))
	}
	return nil, fmt.Errorf("%w %s; Vulkan devices: [%s]", ErrNoVulkanDevice, info, strings.Join(names, "; "))
}

// close releases everything (the streams are synchronised first; callers close their buffers before).
func (l *link) close() {
	if l == nil {
		return
	}
	for _, g := range l.g {
		if g != nil && g.st != nil {
			g.st.Synchronize()
		}
	}
	for _, c := range l.comms {
		c.Destroy()
	}
	for _, g := range l.g {
		if g == nil {
			continue
		}
		if g.st != nil {
			g.st.Close()
		}
		if g.vk != nil {
			g.vk.Close()
		}
		if g.cu != nil {
			g.cu.Close()
		}
	}
}

// syncStream waits for st on the host, at most until ctx ends (a CUDA wait that never completes must not hang the
// caller; the waiting goroutine is then left behind).
func syncStream(ctx context.Context, st *cudabridge.Stream) error {
	done := make(chan error, 1)
	go func() { done <- st.Synchronize() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for a CUDA stream: %w", ctx.Err())
	}
}

// asyncErrors reports the communicators' asynchronous errors.
func (l *link) asyncErrors() error {
	var errs []error
	for _, c := range l.comms {
		errs = append(errs, c.AsyncError())
	}
	return errors.Join(errs...)
}
