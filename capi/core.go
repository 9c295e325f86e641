package main

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include "vkzip.h"
*/
import "C"

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// The Go side of every entry point, in Go types; exports.go converts the C arguments and calls these.

// parseDType maps a dtype name ("bf16", "F8_E4M3", any case) to its dtype, as `vkzip encode --dtype` does.
func parseDType(name string) (layout.DType, error) {
	dt, ok := layout.ParseDType(strings.ToUpper(strings.TrimSpace(name)))
	if !ok || dt == layout.DTypeOpaque {
		return 0, invalidf("unknown dtype %q (want bf16, f16, f32, f8_e4m3, f8_e5m2 or another safetensors dtype)", name)
	}
	return dt, nil
}

// dtypeName is the lower-case name of d ("bf16"; "opaque" for bytes of an unknown dtype).
func dtypeName(d layout.DType) string {
	if d == layout.DTypeOpaque {
		return "opaque"
	}
	return strings.ToLower(d.String())
}

// tensorShape checks a tensor's shape argument: nil for flat (ndim -1), else ndim dimensions.
func tensorShape(shape []uint64, ndim int) ([]uint64, error) {
	switch {
	case ndim == -1:
		return nil, nil
	case ndim < -1:
		return nil, invalidf("ndim %d (want -1 for flat, or 0 and up)", ndim)
	case ndim > 0 && shape == nil:
		return nil, invalidf("shape is NULL with ndim %d", ndim)
	}
	return append([]uint64{}, shape[:ndim]...), nil // a copy: shape is the caller's memory
}

// tensorRecords is the content of a buffer's payload: one tensor with an empty name, as `vkzip encode --kind raw
// --dtype D -` reads stdin (tensorfile names a raw stdin tensor ""). A flat shape is [elements], as there.
func tensorRecords(d layout.DType, data []byte, shape []uint64) ([]codec.Record, error) {
	size := uint64(d.Size())
	if uint64(len(data))%size != 0 {
		return nil, invalidf("%d bytes is not a whole number of %s values (%d bytes each)", len(data), dtypeName(d), size)
	}
	if shape == nil {
		shape = []uint64{uint64(len(data)) / size}
	}
	return []codec.Record{{DType: d, Shape: shape, Data: data}}, nil
}

// dirOverhead bounds a container's bytes around its one tensor body: preamble (20), the deflated directory
// (sequence, one codebook, one record of ndim dimensions; deflate's stored blocks cost 5 bytes per 64 KiB plus a
// few of framing, bounded here by an eighth plus 64), padding (3), metadata CRC (4) and the body's seal (4).
func dirOverhead(ndim int) uint64 {
	dir := uint64(8 + 4 + 1 + layout.CodebookSize + 4 + 1 + 2 + 4 + 4 + 1 + 8*ndim + 8 + 8)
	return layout.PreambleSize + dir + dir/8 + 64 + 3 + layout.MetaCRCSize + layout.SealSize
}

// maxTensorValues is the codec's limit on a tensor's element count (2^48): the bound's arithmetic stays far from
// overflow below it, and the codec refuses larger tensors anyway.
const maxTensorValues = 1 << 48

// encodeBound is the largest payload of one tensor of nbytes of d with ndim dimensions (-1: flat) in any format
// at any chunk size: the largest body any registered format may produce for it, plus the container around it,
// plus maxAlignOffset.
func encodeBound(d layout.DType, nbytes uint64, ndim int) (uint64, error) {
	size := uint64(d.Size())
	if nbytes%size != 0 {
		return 0, invalidf("%d bytes is not a whole number of %s values", nbytes, dtypeName(d))
	}
	if ndim < -1 || ndim > 255 {
		return 0, invalidf("ndim %d (want -1 for flat, or 0 to 255)", ndim)
	}
	n := nbytes / size
	if n > maxTensorValues {
		return 0, statusf(C.VKZIP_E_TOO_LARGE, "%d values of %s: a tensor holds at most %d", n, dtypeName(d), uint64(maxTensorValues))
	}
	var body uint64
	for _, f := range codec.Formats() {
		if !f.Accepts(d, n) {
			continue
		}
		for s := uint(f.MinShift); s <= uint(f.MaxShift); s++ {
			body = max(body, f.MaxBodyOf(n, d, s))
		}
	}
	return body + dirOverhead(max(ndim, 1)) + maxAlignOffset, nil
}

// maxAlignOffset is the most vkzip_encode_cuda_to_cuda_aligned may start a payload into its buffer (it aligns the
// body to 16 bytes); the bound leaves room for it.
const maxAlignOffset = 15

// encodeTensor encodes one tensor and appends its payload to dst.
func encodeTensor(c *codec.Codec, d layout.DType, data []byte, shape []uint64, dst []byte) ([]byte, error) {
	recs, err := tensorRecords(d, data, shape)
	if err != nil {
		return dst, err
	}
	return c.Encode(context.Background(), dst, recs, true)
}

// walkContainers parses the headers of the containers of a payload of total bytes, read through read, calling fn on
// each: every container lies within the payload, and the last one is final.
func walkContainers(total uint64, read codec.ReadAt, fn func(*codec.Container)) error {
	if total == 0 {
		return statusf(C.VKZIP_E_TRUNCATED, "empty payload")
	}
	for off := uint64(0); off < total; {
		rest := total - off
		ct, err := codec.ParseHeadAt(read, off, total)
		if err != nil {
			return err
		}
		if ct.Size == 0 || ct.Size > rest {
			return statusf(C.VKZIP_E_CORRUPT, "container size %d of a %d-byte payload", ct.Size, rest)
		}
		fn(ct)
		off += ct.Size
		if ct.Flags&layout.FlagFinal != 0 {
			if off != total {
				return statusf(C.VKZIP_E_CORRUPT, "%d bytes after the final container", total-off)
			}
			return nil
		}
	}
	return statusf(C.VKZIP_E_TRUNCATED, "stream ends without a final container")
}

// hostRead reads a payload in host memory.
func hostRead(src []byte) codec.ReadAt {
	return func(off, n uint64) ([]byte, error) { return src[off : off+n], nil }
}

// payloadInfo is vkzip_info in Go.
type payloadInfo struct {
	containers, tensors, blobs uint32
	decoded                    uint64
	checksums                  bool
	dtype, format              string
	shape                      []uint64
}

func readInfo(src []byte) (payloadInfo, error) { return readInfoAt(uint64(len(src)), hostRead(src)) }

// readInfoAt is readInfo of a payload of total bytes read through read (headers only).
func readInfoAt(total uint64, read codec.ReadAt) (payloadInfo, error) {
	pi := payloadInfo{checksums: true}
	first := true
	err := walkContainers(total, read, func(ct *codec.Container) {
		pi.containers++
		pi.checksums = pi.checksums && ct.Checksums()
		for i := range ct.Recs {
			r := &ct.Recs[i]
			pi.decoded += r.RawSize()
			if r.Blob {
				pi.blobs++
				continue
			}
			pi.tensors++
			if first {
				first = false
				pi.dtype, pi.format, pi.shape = dtypeName(r.DType), codec.FormatName(r.Format), r.Shape
			}
		}
	})
	return pi, err
}

// decodeInto decodes a whole payload into dst (its capacity is the room there is): the decoded bytes, or
// VKZIP_E_BUFFER_TOO_SMALL with the size needed.
func decodeInto(c *codec.Codec, src, dst []byte) ([]byte, uint64, error) {
	pi, err := readInfo(src)
	if err != nil {
		return nil, 0, err
	}
	if pi.decoded > uint64(cap(dst)) {
		return nil, pi.decoded, statusf(C.VKZIP_E_BUFFER_TOO_SMALL, "output buffer of %d bytes: the payload decodes to %d", cap(dst), pi.decoded)
	}
	out, err := c.DecodeAll(src, dst[:0])
	if err != nil {
		return nil, 0, err
	}
	return out, uint64(len(out)), nil
}

// encodeTensorFile encodes a safetensors or npy file held in memory and appends the payload to dst, as a stream
// of frames exactly as `vkzip encode` writes it (codec.Codec.EncodeFile).
func encodeTensorFile(c *codec.Codec, data, dst []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if _, err := c.EncodeFile(context.Background(), buf, bytes.NewReader(data), codec.FileOptions{}); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// encodeFile encodes the tensor file at in into out, streaming in bounded memory (codec.Codec.EncodeFile), so that
// the payload is the one `vkzip encode in` writes.
func encodeFile(c *codec.Codec, in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeAtomic(out, func(w *bufio.Writer) error {
		_, err := c.EncodeFile(context.Background(), w, f, codec.FileOptions{Name: in})
		return err
	})
}

// decodeFile decodes the payload at in into out in bounded memory (codec.Codec.DecodeFile); out appears only if the
// whole payload verified.
func decodeFile(c *codec.Codec, in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeAtomic(out, func(w *bufio.Writer) error {
		_, err := c.DecodeFile(context.Background(), w, f)
		return err
	})
}

// writeAtomic writes path through a hidden temporary file beside it, renamed into place once fill succeeded and
// the data is flushed; on any failure the temporary file is removed and path is untouched.
func writeAtomic(path string, fill func(*bufio.Writer) error) (err error) {
	if path == "" {
		return invalidf("empty output path")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".vkzip-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err = fill(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// calibrate picks the codebook for BF16 data, as `vkzip calibrate` does.
func calibrate(d layout.DType, data []byte) (codec.Codebook, error) {
	if d != layout.DTypeBF16 {
		return codec.Codebook{}, statusf(C.VKZIP_E_UNSUPPORTED, "codebooks exist for bf16 only, not %s", dtypeName(d))
	}
	if len(data)%2 != 0 {
		return codec.Codebook{}, invalidf("%d bytes is not a whole number of bf16 values", len(data))
	}
	var h calib.Histogram
	h.Add(data)
	cb, _ := calib.Calibrate(h)
	return cb, nil
}

// devicesJSON describes the backends and Vulkan devices, as `vkzip devices --json` does in fewer fields.
func devicesJSON() ([]byte, error) {
	type vkDev struct {
		Index     int    `json:"index"`
		Name      string `json:"name"`
		Type      string `json:"type"`
		Vendor    string `json:"vendor"`
		Driver    string `json:"driver"`
		Usable    bool   `json:"usable"`
		Reason    string `json:"reason,omitempty"`
		AutoPicks bool   `json:"auto_picks"`
	}
	out := struct {
		Backends []string `json:"backends"`
		CPU      string   `json:"cpu"`
		Vulkan   []vkDev  `json:"vulkan_devices"`
		VkErr    string   `json:"vulkan_error,omitempty"`
	}{Backends: codec.Backends(), CPU: codec.NewCPUBackend(0).Device(), Vulkan: []vkDev{}}
	devs, err := vkcodec.Devices()
	if err != nil {
		out.VkErr = err.Error()
	}
	best := -1
	if sel, err := vk.SelectDevice(devs, ""); err == nil && sel.Type != vk.DeviceTypeCPU {
		best = sel.Index
	}
	for _, d := range devs {
		out.Vulkan = append(out.Vulkan, vkDev{Index: d.Index, Name: d.Name, Type: d.Type.String(), Vendor: d.VendorName,
			Driver: d.DriverName, Usable: d.Usable, Reason: d.Reason, AutoPicks: d.Index == best})
	}
	return json.Marshal(out)
}

// codecJSON describes an open codec.
func codecJSON(h *handle) ([]byte, error) {
	b := h.c.Backend()
	formats := h.cf.formats
	if formats == "" {
		formats = strings.Join(codec.DefaultFormatNames(), ",")
	}
	return json.Marshal(map[string]any{"backend": b.Name(), "device": b.Device(), "note": h.c.Note(),
		"formats": formats, "checksums": !h.cf.noChecksums, "abi_version": abiVersion, "version": libVersion()})
}

// libVersion is the module version from the build information, with the VCS revision when recorded.
func libVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " rev " + s.Value[:12]
		}
	}
	return fmt.Sprintf("%s (%s)", v, bi.GoVersion)
}
