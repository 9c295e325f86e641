//go:build cgo

package main

import (
	"context"
	_ "embed"
	"encoding/binary"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/vk"
)

// The exponent histogram of BF16 values in a Vulkan buffer, computed on the device: what a per-encode codebook is
// calibrated from (codec.CodebookFromHistogram), so a tensor in device memory gets the codebook the host encoder
// would pick without its values crossing to the host. Only the 256 counts come back.

//go:generate glslc --target-env=vulkan1.1 -O -o shaders/exphist.spv shaders/exphist.comp

//go:embed shaders/exphist.spv
var expHistSPIRV []byte

// maxHistValues bounds one run: the kernel's counts are 32-bit.
const maxHistValues = 1<<32 - 1

// expHist runs the histogram kernel on one device. Not safe for concurrent use (its owner serialises calls).
type expHist struct {
	dev   *vk.Device
	pipe  *vk.Pipeline
	bins  *vk.Buffer // 256 counts, host-visible
	cmd   *vk.Commands
	binds *vk.Bindings
	src   *vk.Buffer // the buffer binds was made for
}

func newExpHist(dev *vk.Device) (*expHist, error) {
	h := &expHist{dev: dev}
	var err error
	if h.pipe, err = dev.NewPipeline(vk.PipelineDesc{Name: "exphist", SPIRV: expHistSPIRV, Bindings: 2,
		PushConstantSize: 4}); err != nil {
		return nil, err
	}
	if h.bins, err = dev.NewBuffer(4*256, vk.HostVisible); err != nil {
		h.close()
		return nil, err
	}
	if h.cmd, err = dev.NewCommands(); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// run counts the exponents of the n BF16 values at the start of src, after waits.
func (h *expHist) run(ctx context.Context, src *vk.Buffer, n uint64, waits []vk.SemaphoreValue) (codec.ExpHistogram, error) {
	var out codec.ExpHistogram
	if n == 0 || n > maxHistValues || 2*n > src.Size() {
		return out, invalidf("histogram of %d values in a buffer of %d bytes", n, src.Size())
	}
	if h.src != src {
		if h.binds != nil {
			h.binds.Close()
			h.binds, h.src = nil, nil
		}
		b, err := h.dev.NewBindings(h.pipe, []vk.BufferRange{{Buf: src}, {Buf: h.bins}})
		if err != nil {
			return out, err
		}
		h.binds, h.src = b, src
	}
	words := n / 2
	groups := uint32(min(max((words+255)/256, 1), 2048))
	push := binary.LittleEndian.AppendUint32(nil, uint32(n))
	cmd := h.cmd
	if err := cmd.Begin(); err != nil {
		return out, err
	}
	cmd.FillBuffer(h.bins, 0, 4*256, 0)
	cmd.Barrier()
	cmd.Dispatch(h.pipe, h.binds, push, groups, 1, 1)
	cmd.BarrierToHost()
	if err := cmd.End(); err != nil {
		return out, err
	}
	sub, err := h.dev.SubmitWith(cmd, waits, nil)
	if err != nil {
		return out, err
	}
	if err := sub.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			sub.Wait(context.Background()) // the kernel reads src: never leave it running
		}
		return out, err
	}
	b, err := h.bins.Bytes()
	if err != nil {
		return out, err
	}
	for i := range out {
		out[i] = uint64(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func (h *expHist) close() {
	if h == nil {
		return
	}
	if h.binds != nil {
		h.binds.Close()
	}
	if h.cmd != nil {
		h.cmd.Close()
	}
	if h.bins != nil {
		h.bins.Close()
	}
	if h.pipe != nil {
		h.pipe.Close()
	}
}
