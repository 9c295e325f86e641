// Command fpderive derives FP8 (E5M2, E4M3), FP16 and FP32 versions of a BF16 safetensors file, for measuring the
// exponent-coding formats of those dtypes: the shared corpus has BF16 KV caches only. Every BF16 tensor is
// converted as docs/formats/fp8-derivation.md specifies (package synth); other tensors and the metadata are kept,
// and the metadata gains a "vkzip_derivation" entry saying what was done.
//
//	fpderive -to F8_E5M2 -o kv-e5m2.safetensors stories260k-kv-test.safetensors
//	fpderive -stats kv-e5m2.safetensors    # exponent histogram and entropy of every float dtype in a file
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/synth"
	"github.com/vkzip/vkzip/tensorfile"
)

func main() {
	to := flag.String("to", "", "target dtype: F8_E5M2, F8_E4M3, F16 or F32")
	out := flag.String("o", "", "output safetensors file")
	stats := flag.Bool("stats", false, "print exponent statistics and exponent-window ratios of the input files instead of converting")
	shift := flag.Uint("chunk-shift", layout.DefaultChunkShift, "chunk size of the ratios printed by -stats, as a power of two")
	flag.Parse()
	var err error
	switch {
	case *stats && flag.NArg() > 0:
		for _, p := range flag.Args() {
			if err = printStats(os.Stdout, p, *shift); err != nil {
				break
			}
		}
	case !*stats && flag.NArg() == 1 && *to != "" && *out != "":
		err = derive(flag.Arg(0), *out, *to)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fpderive:", err)
		os.Exit(1)
	}
}

func derive(in, out, toName string) error {
	to, ok := layout.ParseDType(toName)
	if !ok || to == layout.DTypeBF16 {
		return fmt.Errorf("unknown target dtype %q", toName)
	}
	f, err := tensorfile.Open(in, tensorfile.OpenOptions{Kind: tensorfile.Safetensors})
	if err != nil {
		return err
	}
	defer f.Close()
	meta := map[string]string{}
	for k, v := range f.Metadata {
		meta[k] = v
	}
	meta["vkzip_derivation"] = fmt.Sprintf("BF16 tensors converted to %v by vkzip cmd/fpderive "+
		"(docs/formats/fp8-derivation.md: FP8 round-to-nearest-even with saturation, F16 round-to-nearest-even "+
		"with overflow to infinity, F32 exact)", to)
	var data []byte
	var hdr bytes.Buffer
	hdr.WriteString(`{"__metadata__":`)
	mj, err := json.Marshal(meta) // sorted keys
	if err != nil {
		return err
	}
	hdr.Write(mj)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		dt := t.DTypeName
		begin := len(data)
		if t.DType == layout.DTypeBF16 {
			if data, err = synth.ConvertBF16(data, t.Data, to); err != nil {
				return err
			}
			dt = to.String()
		} else {
			data = append(data, t.Data...)
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		fmt.Fprintf(&hdr, `,%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, name, dt, shape, begin, len(data))
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(hdr.Len()))
	b = append(b, hdr.Bytes()...)
	b = append(b, data...)
	if _, err := tensorfile.Parse(b, tensorfile.OpenOptions{Kind: tensorfile.Safetensors}); err != nil {
		return fmt.Errorf("derived file does not parse: %w", err)
	}
	return os.WriteFile(out, b, 0o644)
}

// floatFields gives the exponent width and mantissa width of a float dtype (ok false for others).
func floatFields(d layout.DType) (exp, man uint, ok bool) {
	if d == layout.DTypeBF16 {
		return 8, 7, true
	}
	return layout.FloatFields(d)
}

// printStats prints, per float dtype in the file, the histogram of the exponent field and its entropy.
func printStats(w *os.File, path string, shift uint) error {
	f, err := tensorfile.Open(path, tensorfile.OpenOptions{})
	if err != nil {
		return err
	}
	defer f.Close()
	hists := map[layout.DType]*[256]uint64{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		eb, mb, ok := floatFields(t.DType)
		if !ok {
			continue
		}
		h := hists[t.DType]
		if h == nil {
			h = new([256]uint64)
			hists[t.DType] = h
		}
		sz := t.DType.Size()
		for j := 0; j+sz <= len(t.Data); j += sz {
			var v uint64
			for k := sz - 1; k >= 0; k-- {
				v = v<<8 | uint64(t.Data[j+k])
			}
			h[v>>mb&(1<<eb-1)]++
		}
	}
	var dts []layout.DType
	for d := range hists {
		dts = append(dts, d)
	}
	sort.Slice(dts, func(i, j int) bool { return dts[i] < dts[j] })
	for _, d := range dts {
		h := hists[d]
		fmt.Fprintf(w, "%s: %v\n", path, d)
		fmt.Fprintf(w, "  exponent field: count\n")
		var n uint64
		for _, c := range h {
			n += c
		}
		for e, c := range h {
			if c != 0 {
				fmt.Fprintf(w, "  %3d: %d\n", e, c)
			}
		}
		fmt.Fprintf(w, "  values %d, exponent entropy %.4f bits\n", n, entropy(h[:], n))
	}
	fmt.Fprintf(w, "%s: body sizes at chunk shift %d\n", path, shift)
	return printRatios(w, f, shift)
}
