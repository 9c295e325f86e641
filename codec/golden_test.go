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

	"github.com/vkzip/vkzip/codec/cdeflate"
	"github.com/vkzip/vkzip/codec/crc32c"
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
	Version   int    `json:"version,omitempty"` // container version; 0 is version 1 (the goldens that predate 2)
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

// goldenCases are the version 1 vectors (they prove version 1 payloads still decode and that WithContainerVersion(1)
// still writes them) and the same inputs as version 2.
func goldenCases() []goldenCase {
	v1 := []goldenCase{
		{Name: "kv5000", Chunk: 16384, Checksums: true},
		{Name: "kv5000", Chunk: 1024, Checksums: false},
		{Name: "kv5000", Chunk: 1024, Checksums: true, Calibrate: true},
		{Name: "kv-escapes", Chunk: 1024, Checksums: true},
		{Name: "allpatterns", Chunk: 4096, Checksums: true},
		{Name: "odd", Chunk: 1024, Checksums: true, Stream: 1000},
	}
	out := v1
	for _, g := range v1 {
		g.Version = layout.Version2
		out = append(out, g)
	}
	return out
}

func (g goldenCase) version() int {
	if g.Version == 0 {
		return layout.Version1
	}
	return g.Version
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
	v := ""
	if g.Version >= layout.Version2 {
		v = "-v" + itoa(g.Version)
	}
	return filepath.Join("testdata", "golden", g.Name+"-"+itoa(g.Chunk)+"-"+cs+cal+st+v+".vkz")
}

func encodeGolden(t *testing.T, g goldenCase, in []byte) []byte {
	opts := []Option{WithChunkSize(g.Chunk), WithChecksums(g.Checksums), WithContainerVersion(g.version())}
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

// TestGoldenSeal checks a version 2 golden payload's sequence and seal by hand from the spec (docs/FORMAT.md §3.1,
// §4.4), so that a self-consistent but wrong seal cannot pass: the directory opens with sequence 0, and the u32
// after the body is the CRC-32C of metaCRC, the record index and the chunk table's crc words.
func TestGoldenSeal(t *testing.T) {
	var g goldenCase
	for _, c := range goldenCases() {
		if c.Version == layout.Version2 && c.Checksums && c.Stream == 0 && c.Name == "kv5000" {
			g = c
			break
		}
	}
	p, err := os.ReadFile(g.file())
	require.NoError(t, err)
	require.Equal(t, uint16(2), binary.LittleEndian.Uint16(p[8:]))
	clen := binary.LittleEndian.Uint32(p[12:])
	dir, err := cdeflate.Decompress(p[20:20+clen], int(binary.LittleEndian.Uint32(p[16:])))
	require.NoError(t, err)
	require.Equal(t, uint64(0), binary.LittleEndian.Uint64(dir), "sequence")
	end := (20 + int(clen) + 3) &^ 3
	metaCRC := binary.LittleEndian.Uint32(p[end:])
	require.Equal(t, crc32c.Checksum(p[:end]), metaCRC)
	// One BF16 tensor of 5000 values at chunk size 2^14: code stream, low stream, then a one-entry table.
	n := uint64(5000)
	table := uint64(end+4) + layout.Align4((n+1)/2) + layout.Align4(n)
	crcWord := p[table+8 : table+12]
	want := crc32c.Checksum(append(append(binary.LittleEndian.AppendUint32(nil, metaCRC), 0, 0, 0, 0), crcWord...))
	require.Equal(t, want, binary.LittleEndian.Uint32(p[len(p)-4:]), "seal")
	require.NotZero(t, binary.LittleEndian.Uint32(crcWord))
}
