package calib

import (
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// FromFile counts the exponents of the BF16 data in a tensor file: every BF16 tensor of a safetensors file
// (tensors of other dtypes are skipped), or the array of an npy or raw file. Unless opts.DType says otherwise,
// npy and raw files are read as BF16 (see tensorfile.OpenOptions.DType for which npy arrays can be). The file
// is memory-mapped and counted on all CPUs.
func FromFile(path string, opts tensorfile.OpenOptions) (Histogram, error) {
	if opts.DType == layout.DTypeOpaque {
		opts.DType = layout.DTypeBF16
	}
	f, err := tensorfile.Open(path, opts)
	if err != nil {
		return Histogram{}, err
	}
	defer f.Close()
	h, err := FromTensors(f)
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// FromTensors counts the exponents of the BF16 tensors of f, which may come from tensorfile.Parse. It fails with
// ErrNoBF16 when f has no BF16 tensor.
func FromTensors(f *tensorfile.File) (Histogram, error) {
	var h Histogram
	n := 0
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.DType != layout.DTypeBF16 {
			continue
		}
		h.AddParallel(t.Data, 0)
		n++
	}
	if n == 0 {
		if len(f.Tensors) == 1 && f.Kind != tensorfile.Safetensors {
			t := &f.Tensors[0]
			return h, fmt.Errorf("calib: %w: the %s array is %s (%q); force BF16 to read it as BF16", ErrNoBF16, f.Kind, t.DType, t.DTypeName)
		}
		return h, fmt.Errorf("calib: %w: none of the %d tensors is BF16", ErrNoBF16, len(f.Tensors))
	}
	return h, nil
}
