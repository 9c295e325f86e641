// Command mksample cuts the first N tensors (in data order) out of a safetensors file into a new, valid
// safetensors file: the JSON header lists only those tensors, with data_offsets rebased to the new data section,
// and keeps __metadata__ as it is. It builds the samples that the vkzip binary embeds for its demo; see
// ../README.md.
//
//	go run ./cmd/vkzip/testdata/mksample -n 8 IN.safetensors OUT.safetensors
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/vkzip/vkzip/tensorfile"
)

type entry struct {
	DType       string   `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

func main() {
	n := flag.Int("n", 8, "number of tensors to keep, from the start of the data section")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: mksample [-n 8] IN.safetensors OUT.safetensors")
		os.Exit(2)
	}
	if err := cut(flag.Arg(0), flag.Arg(1), *n); err != nil {
		fmt.Fprintln(os.Stderr, "mksample:", err)
		os.Exit(1)
	}
}

func cut(in, out string, n int) error {
	f, err := tensorfile.Open(in, tensorfile.OpenOptions{Kind: tensorfile.Safetensors})
	if err != nil {
		return err
	}
	defer f.Close()
	if n > len(f.Tensors) {
		return fmt.Errorf("%s has only %d tensors", in, len(f.Tensors))
	}
	// A map gives the layout the source files use: keys sorted ("__metadata__" sorts before tensor names),
	// compact JSON.
	hdr := map[string]any{}
	if f.Metadata != nil {
		hdr["__metadata__"] = f.Metadata
	}
	var data []byte
	for _, t := range f.Tensors[:n] {
		hdr[t.Name] = entry{DType: t.DTypeName, Shape: t.Shape,
			DataOffsets: [2]int64{int64(len(data)), int64(len(data)) + t.Size}}
		data = append(data, t.Data...)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(hdr); err != nil {
		return err
	}
	h := bytes.TrimSuffix(js.Bytes(), []byte("\n"))
	// Pad with spaces to a multiple of 8, as the safetensors writer does, so the data section stays aligned.
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(append(b, h...), data...)
	if _, err := tensorfile.Parse(b, tensorfile.OpenOptions{Kind: tensorfile.Safetensors}); err != nil {
		return fmt.Errorf("result does not parse: %w", err)
	}
	return os.WriteFile(out, b, 0o644)
}
