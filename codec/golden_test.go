package codec

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/layout"
)

// Golden vectors pin the format: any change to the bytes an input encodes to must be deliberate, made with
//
//	go test ./codec -run TestGolden -update
//
// and reviewed in the diff of codec/testdata/golden/.
var update = flag.Bool("update", false, "rewrite golden vectors")

type goldenCase struct {
	Name      string `json:"name"`
	Chunk     int    `json:"chunk"`
	Checksums bool   `json:"checksums"`
	Calibrate bool   `json:"calibrate"` // no codebook option: calibrate on the input
	Stream    int    `json:"stream_frame,omitempty"`
	InSHA     string `json:"input_sha256"`
	OutSHA    string `json:"payload_sha256"`
	OutBytes  int    `json:"payload_bytes"`
}

var goldenCodebook = Codebook{126, 127, 125, 128, 124, 123, 122, 129, 121, 120, 119, 118, 117, 116, 115, 130}

// goldenInputs are the committed inputs (testdata/golden/*.bf16) plus every BF16 bit pattern in order. With
// -update, missing input files are drawn once from a seeded generator and written.
func goldenInputs(t *testing.T) map[string][]byte {
	all := make([]byte, 2*65536)
	for v := 0; v < 65536; v++ {
		binary.LittleEndian.PutUint16(all[2*v:], uint16(v))
	}
	r := rand.New(rand.NewPCG(2026, 12))
	gen := map[string]func() []byte{
		"kv5000":     func() []byte { return kvLike(r, 5000, 0.001) },
		"kv-escapes": func() []byte { return kvLike(r, 3001, 0.2) },
		"odd":        func() []byte { return kvLike(r, 1500, 0.01)[:2999] },
	}
	in := map[string][]byte{"allpatterns": all}
	for _, name := range []string{"kv5000", "kv-escapes", "odd"} {
		path := filepath.Join("testdata", "golden", name+".bf16")
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) && *update {
			b = gen[name]()
			require.NoError(t, os.WriteFile(path, b, 0o644))
			err = nil
		}
		require.NoError(t, err)
		in[name] = b
	}
	return in
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{Name: "kv5000", Chunk: 16384, Checksums: true},
		{Name: "kv5000", Chunk: 1024, Checksums: false},
		{Name: "kv5000", Chunk: 1024, Checksums: true, Calibrate: true},
		{Name: "kv-escapes", Chunk: 1024, Checksums: true},
		{Name: "allpatterns", Chunk: 4096, Checksums: true},
		{Name: "odd", Chunk: 1024, Checksums: true, Stream: 1000},
	}
}

func (g goldenCase) file() string {
	cs := "crc"
	if !g.Checksums {
		cs = "nocrc"
	}
	cal := ""
	if g.Calibrate {
		cal = "-cal"
	}
	st := ""
	if g.Stream > 0 {
		st = "-stream"
	}
	return filepath.Join("testdata", "golden", g.Name+"-"+itoa(g.Chunk)+"-"+cs+cal+st+".vkz")
}

func encodeGolden(t *testing.T, g goldenCase, in []byte) []byte {
	opts := []Option{WithChunkSize(g.Chunk), WithChecksums(g.Checksums)}
	if !g.Calibrate {
		opts = append(opts, WithCodebook(goldenCodebook))
	}
	c := newCPU(t, opts...)
	if g.Stream == 0 {
		out, err := c.EncodeAll(in, nil)
		require.NoError(t, err)
		return out
	}
	var w sliceWriter
	sw, err := c.NewWriter(context.Background(), &w, g.Stream)
	require.NoError(t, err)
	_, err = sw.Write(in)
	require.NoError(t, err)
	require.NoError(t, sw.Close())
	return w.b
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestGolden(t *testing.T) {
	inputs := goldenInputs(t)
	manifest := filepath.Join("testdata", "golden", "manifest.json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(manifest), 0o755))
		var cases []goldenCase
		for _, g := range goldenCases() {
			in := inputs[g.Name]
			out := encodeGolden(t, g, in)
			require.NoError(t, os.WriteFile(g.file(), out, 0o644))
			g.InSHA, g.OutSHA, g.OutBytes = sha(in), sha(out), len(out)
			cases = append(cases, g)
		}
		b, _ := json.MarshalIndent(cases, "", "  ")
		require.NoError(t, os.WriteFile(manifest, append(b, '\n'), 0o644))
	}
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	var cases []goldenCase
	require.NoError(t, json.Unmarshal(b, &cases))
	require.Len(t, cases, len(goldenCases()))
	for _, g := range cases {
		in := inputs[g.Name]
		require.Equal(t, g.InSHA, sha(in), "%s: the generated input changed", g.file())
		want, err := os.ReadFile(g.file())
		require.NoError(t, err)
		require.Equal(t, g.OutSHA, sha(want), "%s does not match the manifest", g.file())
		got := encodeGolden(t, g, in)
		require.Equal(t, g.OutSHA, sha(got), "%s: encoder output changed", g.file())
		dec, err := newCPU(t).DecodeAll(want, nil)
		require.NoError(t, err)
		require.Equal(t, g.InSHA, sha(dec), "%s: decoder output changed", g.file())
	}
}

// TestGoldenLayout spot-checks a golden payload against the spec by hand, so a self-consistent but wrong codec
// cannot pass: the preamble, the first code and low bytes, and the first escape.
func TestGoldenLayout(t *testing.T) {
	in := goldenInputs(t)["kv5000"]
	g := goldenCases()[0]
	p, err := os.ReadFile(g.file())
	require.NoError(t, err)
	require.Equal(t, layout.Magic[:], p[:8])
	require.Equal(t, uint16(1), binary.LittleEndian.Uint16(p[8:]))
	require.Equal(t, uint16(layout.FlagChecksums|layout.FlagFinal), binary.LittleEndian.Uint16(p[10:]))
	ct, err := ParseHeader(p)
	require.NoError(t, err)
	r := ct.Recs[0]
	body := p[r.BodyOff : r.BodyOff+r.BodyLen]
	ct2 := goldenCodebook.CodeTable()
	for i := 0; i < 16; i++ {
		v := binary.LittleEndian.Uint16(in[2*i:])
		code := body[i/2] >> (4 * (i & 1)) & 15
		if c := ct2[uint8(v>>7)]; c != NoCode {
			require.Equal(t, c, code, "code of value %d", i)
		}
		lows := body[layout.Align4(uint64(len(in)/4)):]
		require.Equal(t, uint8(v>>8)&0x80|uint8(v)&0x7F, lows[i], "low byte of value %d", i)
	}
	// The first escape in the side section names the first value without a code.
	gm := newSZ4Geom(r.Elements, uint(r.Shift))
	first := -1
	for i := 0; i < 5000; i++ {
		if ct2[uint8(binary.LittleEndian.Uint16(in[2*i:])>>7)] == NoCode {
			first = i
			break
		}
	}
	require.GreaterOrEqual(t, first, 0)
	w := binary.LittleEndian.Uint32(body[gm.side:])
	require.Equal(t, uint32(first), w&0xFFFF)
	require.Equal(t, uint32(uint8(binary.LittleEndian.Uint16(in[2*first:])>>7)), w>>16)
}
