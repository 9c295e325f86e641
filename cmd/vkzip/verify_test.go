package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeVerify: --verify passes on an honest encode (and says so in --json), for every backend the machine has.
func TestEncodeVerify(t *testing.T) {
	dir := t.TempDir()
	in := write(t, filepath.Join(dir, "kv.safetensors"), kvSample)
	for _, b := range []string{"cpu", "auto"} {
		r := vkz(t, dir, nil, "encode", "-f", "--verify", "--json", "--backend", b, "-o", "v.vkz", in)
		require.Equal(t, exitOK, r.code, r.stderr)
		var res encodeResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
		assert.True(t, res.Verified)
		r = vkz(t, dir, nil, "decode", "-f", "-q", "-o", "out.safetensors", "v.vkz")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, kvSample, read(t, filepath.Join(dir, "out.safetensors")))
	}
}
