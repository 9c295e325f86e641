package conformance

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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

func TestSpecSZ4Corpus(t *testing.T) {
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
