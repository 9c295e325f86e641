package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/internal/spec"
)

// The SplitZip-4 corpus against internal/spec, an encoder and decoder written from docs/FORMAT.md alone: the
// corpus's expected hashes come from the reference codec, and this test makes a second implementation vouch for
// every one of them.

func sz4Corpus(t *testing.T) (*Corpus, []byte) {
	t.Helper()
	for _, c := range corpora(t) {
		if c.Format == sz4 {
			raw, err := fs.ReadFile(embedded, "corpus/"+sz4+"/manifest.json")
			require.NoError(t, err)
			return c, raw
		}
	}
	t.Fatal("no splitzip4 corpus")
	return nil, nil
}

func corpusInput(c *Corpus) func(string) ([]byte, error) {
	return func(id string) ([]byte, error) {
		b, ok := c.inputs[id]
		if !ok {
			return nil, fmt.Errorf("no input %s", id)
		}
		return b, nil
	}
}

// skipSpecIfShort skips a whole-corpus check of internal/spec under -short (make test's race step): the spec codec
// runs on one goroutine, so the race detector has nothing to find there, and the plain run checks every case.
func skipSpecIfShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the whole corpus through the single-threaded spec codec runs in the plain test run")
	}
}

func TestSpecSZ4Corpus(t *testing.T) {
	skipSpecIfShort(t)
	c, raw := sz4Corpus(t)
	rep, err := spec.CheckSZ4Manifest(raw, corpusInput(c))
	require.NoError(t, err)
	require.Equal(t, len(c.Cases), rep.Cases)
	bodies, v2 := 0, 0
	var m spec.SZ4Manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range m.Cases {
		if k.Body != nil {
			bodies++
		}
		if k.ContainerV2 != nil {
			v2++
		}
	}
	require.Equal(t, bodies, rep.Bodies)
	require.Equal(t, len(c.Cases), rep.Containers)
	require.Equal(t, v2, rep.ContainersV2)
	t.Logf("spec codec agrees on %d cases: %d bodies, %d v1 containers, %d v2 containers, %d payloads decoded",
		rep.Cases, rep.Bodies, rep.Containers, rep.ContainersV2, rep.Decoded)

	// The check can fail: one flipped expectation of each kind is caught.
	t.Run("FlippedHash", func(t *testing.T) {
		k := m.Cases[len(m.Cases)/2]
		wants := []*spec.Expect{k.Container, k.Body, k.ContainerV2}
		for i, want := range wants {
			if want == nil {
				continue
			}
			flipped := want.SHA256[:10] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", want.SHA256[10])+1)%16]) + want.SHA256[11:]
			bad := strings.Replace(string(raw), want.SHA256, flipped, 1)
			require.NotEqual(t, string(raw), bad)
			_, err := spec.CheckSZ4Manifest([]byte(bad), corpusInput(c))
			require.Error(t, err, "expectation %d of %s flipped", i, k.ID)
			require.Contains(t, err.Error(), k.ID)
		}
	})
	t.Run("MissingCase", func(t *testing.T) {
		// A manifest whose case list the checker cannot read in full is not a pass.
		var mm map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &mm))
		var cases []map[string]any
		require.NoError(t, json.Unmarshal(mm["cases"], &cases))
		delete(cases[0], "container")
		b, err := json.Marshal(cases)
		require.NoError(t, err)
		mm["cases"] = b
		bad, err := json.Marshal(mm)
		require.NoError(t, err)
		_, err = spec.CheckSZ4Manifest(bad, corpusInput(c))
		require.Error(t, err)
	})
}

// specClass names a spec error's class as manifests do.
func specClass(err error) string {
	for _, c := range []struct {
		name string
		err  error
	}{{"format", spec.ErrFormat}, {"version", spec.ErrVersion}, {"truncated", spec.ErrTruncated},
		{"checksum", spec.ErrChecksum}, {"corrupt", spec.ErrCorrupt}, {"non-canonical", spec.ErrNonCanonical},
		{"too-large", spec.ErrTooLarge}, {"unsupported", spec.ErrUnsupported}} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	if err == nil {
		return ""
	}
	return "other"
}

// TestSpecSZ4Invalid runs the spec decoder on every invalid payload of the splitzip4 corpus: it must reject each
// with the class (and, for body errors, the chunk) the manifest records.
func TestSpecSZ4Invalid(t *testing.T) {
	c, _ := sz4Corpus(t)
	checked, v2known := 0, 0
	for _, iv := range c.Invalid {
		base := c.cases[iv.Base]
		in := c.inputs[base.Input]
		shift, err := shiftOf(base.Chunk)
		require.NoError(t, err)
		cbb, err := hex.DecodeString(base.Codebook)
		require.NoError(t, err)
		var cb spec.Codebook
		copy(cb[:], cbb)
		dt, ok := spec.ParseDType(base.DType)
		require.True(t, ok)
		var orig []byte
		if iv.Level == LevelBody {
			orig, err = spec.SZ4Encode(in, shift, cb, base.Checksums)
		} else {
			var given *spec.Codebook
			if !base.Calibrate {
				given = &cb
			}
			orig, err = spec.EncodeContainer([]spec.Record{{Name: base.ID, DType: dt, Shape: base.Shape, Data: in}},
				spec.EncodeOptions{Version: 1, Checksums: base.Checksums, Final: true, Shift: shift, Codebook: given})
		}
		require.NoError(t, err, iv.ID)
		bad, err := apply(orig, iv.Ops, c.data)
		require.NoError(t, err, iv.ID)
		require.Equal(t, iv.SHA256, sha(bad), "%s: payload", iv.ID)
		if iv.Level == LevelBody {
			cs := base.Checksums
			if iv.Checksums != nil {
				cs = *iv.Checksums
			}
			if iv.Codebook != "" {
				b, err := hex.DecodeString(iv.Codebook)
				require.NoError(t, err)
				copy(cb[:], b)
			}
			_, err = spec.SZ4Decode(bad, base.values(), shift, cb, cs)
			if iv.Class != specClass(err) || iv.Chunk != spec.ChunkOf(err) {
				t.Errorf("%s (%s): manifest %s at chunk %d, spec: %v", iv.ID, iv.Note, iv.Class, iv.Chunk, err)
			}
		} else {
			_, err = spec.DecodeStream(bad)
			if iv.Class == "version" && len(bad) >= 10 && binary.LittleEndian.Uint16(bad[8:]) == 2 {
				// A corpus made before container version 2 existed calls version 2 unknown; the spec codec reads
				// it (and then finds the v1 container's metaCRC wrong).
				require.Equal(t, "checksum", specClass(err), "%s: %v", iv.ID, err)
				t.Logf("%s: version 2 is known to the spec codec: %v", iv.ID, err)
				v2known++
				continue
			} else if iv.Class != specClass(err) || iv.Chunk != spec.ChunkOf(err) {
				t.Errorf("%s (%s): manifest %s at chunk %d, spec: %v", iv.ID, iv.Note, iv.Class, iv.Chunk, err)
			}
		}
		checked++
	}
	require.Equal(t, len(c.Invalid), checked+v2known)
	t.Logf("spec decoder gives the manifest's class and chunk on %d invalid payloads (%d name version 2)", checked,
		v2known)
}

// TestSpecOtherBodies holds the body expectations of the TBE-3, zf12 and exponent-window corpora to internal/spec's
// encoders, and huff's to its bit-by-bit decoder (the reference body, whose hash the manifest pins, must decode to
// the input).
func TestSpecOtherBodies(t *testing.T) {
	skipSpecIfShort(t)
	checked := map[string]int{}
	for _, c := range corpora(t) {
		for i := range c.Cases {
			k := &c.Cases[i]
			if k.Body == nil {
				continue
			}
			in := c.inputs[k.Input]
			shift, err := shiftOf(k.Chunk)
			require.NoError(t, err)
			dt, ok := spec.ParseDType(k.DType)
			require.True(t, ok, k.ID)
			var body []byte
			switch c.Format {
			case "tbe3":
				body = spec.TBE3Encode(in, shift, k.Checksums, nil)
			case "zf12":
				body = spec.ZF12Encode(in, shift, k.Checksums)
			case "xw2", "xw3", "xw4":
				g, ok := spec.NewXWGeom(c.FormatID, dt, shift)
				require.True(t, ok, k.ID)
				size := spec.DTypeSize(dt)
				vals := make([]uint32, len(in)/size)
				for j := range vals {
					for q := size - 1; q >= 0; q-- {
						vals[j] = vals[j]<<8 | uint32(in[size*j+q])
					}
				}
				body = g.Build(vals, k.Checksums, nil)
			case "huff":
				enc, err := encodeCase(context.Background(), codec.NewCPUBackend(1), Format{Name: c.Format, ID: c.FormatID},
					k, nil, in)
				require.NoError(t, err, k.ID)
				require.NoError(t, enc.bodyErr, k.ID)
				require.Equal(t, k.Body.SHA256, sha(enc.body), "%s: reference body", k.ID)
				out, err := spec.HuffDecode(enc.body, k.values(), shift)
				require.NoError(t, err, k.ID)
				require.True(t, bytes.Equal(in, out), "%s: spec huff decoder output differs from the input", k.ID)
				checked[c.Format]++
				continue
			default:
				continue
			}
			require.Equal(t, k.Body.Len, len(body), "%s: spec body length", k.ID)
			require.Equal(t, k.Body.SHA256, sha(body), "%s: spec body", k.ID)
			checked[c.Format]++
		}
	}
	for _, f := range []string{"tbe3", "zf12", "xw2", "xw3", "xw4", "huff"} {
		require.Positive(t, checked[f], "no %s bodies checked", f)
	}
	t.Logf("bodies checked against internal/spec: %v", checked)
}
