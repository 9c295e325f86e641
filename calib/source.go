package calib

import (
	"fmt"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// FromFile counts the exponents of the BF16 data in a tensor file: every BF16 tensor of a safetensors file
// (tensors of other dtypes are skipped), or the array of an npy or raw file. Unless opts.DType says otherwise,
// npy and raw files are read as BF16 (see tensorfile.OpenOptions.DType for which npy arrays can be). The file is
// mapped with golang.org/x/exp/mmap and streamed in blocks, counted on all CPUs: memory stays bounded whatever
// the file's size.
func FromFile(path string, opts tensorfile.OpenOptions) (Histogram, error) {
	if opts.DType == layout.DTypeOpaque {
		opts.DType = layout.DTypeBF16
	}
	m, err := tensorfile.OpenMapped(path, opts)
	if err != nil {
		return Histogram{}, err
	}
	defer m.Close()
	var h Histogram
	buf := make([]byte, streamBlock)
	n := 0
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.DType != layout.DTypeBF16 {
			continue
		}
		n++
		for off := int64(0); off < t.Size; {
			k := min(int64(len(buf)), t.Size-off)
			if _, err := m.R.ReadAt(buf[:k], t.Offset+off); err != nil {
				return h, fmt.Errorf("%s: %w", path, err)
			}
			h.AddParallel(buf[:k], 0)
			off += k
		}
	}
	if n == 0 {
		return h, fmt.Errorf("%s: %w", path, noBF16(m.File))
	}
	return h, nil
}

// streamBlock is the bytes FromFile reads at a time (even, so no value straddles two blocks).
const streamBlock = 16 << 20

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
		return h, noBF16(f)
	}
	return h, nil
}

func noBF16(f *tensorfile.File) error {
	if len(f.Tensors) == 1 && f.Kind != tensorfile.Safetensors {
		t := &f.Tensors[0]
		return fmt.Errorf("calib: %w: the %s array is %s (%q); force BF16 to read it as BF16", ErrNoBF16, f.Kind, t.DType, t.DTypeName)
	}
	return fmt.Errorf("calib: %w: none of the %d tensors is BF16", ErrNoBF16, len(f.Tensors))
}
