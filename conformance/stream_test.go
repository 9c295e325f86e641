package conformance

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
)

// TestCorpusThroughDecodeFile: every valid payload of the corpus, container version 1 and 2, decodes through the
// streaming file decoder (codec.Codec.DecodeFile, what `vkzip decode` runs) to its input, byte for byte, and
// every container-level invalid payload is rejected by it. The payloads are the reference's, checked against the
// corpus's SHA-256s first, so they are exactly the ones the corpus describes.
func TestCorpusThroughDecodeFile(t *testing.T) {
	ctx := context.Background()
	corpora, err := Load()
	require.NoError(t, err)
	ref := codec.NewCPUBackend(0)
	c, err := codec.New(codec.WithBackend(ref))
	require.NoError(t, err)
	defer c.Close()
	decode := func(p []byte) ([]byte, error) {
		var out bytes.Buffer
		out.WriteString("poison")
		out.Reset()
		_, err := c.DecodeFile(ctx, &out, bytes.NewReader(p))
		return out.Bytes(), err
	}
	valid, invalid, sameClass := 0, 0, 0
	for _, cp := range corpora {
		f := Format{Name: cp.Format, ID: cp.FormatID, Version: cp.Version}
		encs := map[string]encoded{}
		for i := range cp.Cases {
			k := &cp.Cases[i]
			cb, err := caseCodebook(k.Codebook)
			require.NoError(t, err)
			in := cp.input(k.Input)
			e, err := encodeCase(ctx, ref, f, k, cb, in)
			require.NoError(t, err, "%s/%s", f.Name, k.ID)
			require.True(t, matches(&k.Container, e.container, e.contErr), "%s/%s: reference container", f.Name, k.ID)
			require.True(t, matches(k.ContainerV2, e.containerV2, e.contV2Err), "%s/%s: reference v2 container", f.Name, k.ID)
			encs[k.ID] = e
			for _, p := range [][]byte{e.container, e.containerV2} {
				if p == nil {
					continue
				}
				got, err := decode(p)
				require.NoError(t, err, "%s/%s", f.Name, k.ID)
				require.True(t, bytes.Equal(in, got), "%s/%s: DecodeFile output differs from the input", f.Name, k.ID)
				valid++
			}
		}
		for i := range cp.Invalid {
			iv := &cp.Invalid[i]
			if iv.Level != LevelContainer {
				continue
			}
			bad, err := apply(encs[iv.Base].container, iv.Ops, cp.data)
			require.NoError(t, err)
			_, err = decode(bad)
			require.Error(t, err, "%s/%s accepted (%s)", f.Name, iv.ID, iv.Note)
			invalid++
			// A streaming reader meets errors in input order, so where a payload has several, the one it reports
			// may differ from the whole-buffer decoder's (a truncation is found when the read gets there, not
			// before the first record); the class must still be an error class.
			if got := ClassName(err); got == iv.Class {
				sameClass++
			} else {
				t.Logf("%s/%s: %s, the corpus says %s (%s)", f.Name, iv.ID, got, iv.Class, iv.Note)
				assert.NotEqual(t, "other", got, "%s/%s: not an error class of the codec", f.Name, iv.ID)
			}
		}
	}
	t.Logf("%d valid payloads decoded; %d invalid payloads rejected, %d with the corpus's error class", valid, invalid,
		sameClass)
	assert.Greater(t, valid, 100)
	assert.Greater(t, invalid, 50)
}
