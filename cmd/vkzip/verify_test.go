package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/tensorfile"
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

// TestVerifyPayloadCatchesMismatch hands verifyPayload a valid payload and an input it does not decode to: one
// byte changed in a tensor, one byte changed in the header, the input cut short and the input made longer.
func TestVerifyPayloadCatchesMismatch(t *testing.T) {
	f, err := tensorfile.Parse(kvSample, tensorfile.OpenOptions{})
	require.NoError(t, err)
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)))
	require.NoError(t, err)
	defer c.Close()
	payload, err := c.Encode(context.Background(), nil, fileRecords(f), true)
	require.NoError(t, err)
	require.NoError(t, verifyPayload(context.Background(), payload, f))

	last := f.Tensors[len(f.Tensors)-1]
	withTensors := func() *tensorfile.File {
		g := *f
		g.Tensors = append([]tensorfile.Tensor(nil), f.Tensors...)
		return &g
	}
	tensorByte := withTensors()
	tensorByte.Tensors[1].Data = append([]byte(nil), f.Tensors[1].Data...)
	tensorByte.Tensors[1].Data[5] ^= 1
	headerByte := withTensors()
	headerByte.Prefix = append([]byte(nil), f.Prefix...)
	headerByte.Prefix[len(f.Prefix)/2] ^= 0x20
	cases := map[string]*tensorfile.File{"tensor byte": tensorByte, "header byte": headerByte}
	short := withTensors()
	short.Tensors[len(f.Tensors)-1].Data = last.Data[:len(last.Data)-2]
	short.Size -= 2
	cases["input shorter"] = short
	long := withTensors()
	long.Tensors[len(f.Tensors)-1].Data = append(append([]byte(nil), last.Data...), 0, 0)
	long.Size += 2
	cases["input longer"] = long
	for name, g := range cases {
		err := verifyPayload(context.Background(), payload, g)
		assert.True(t, errors.Is(err, errVerify), "%s: %v", name, err)
	}
	// A payload that does not decode at all.
	bad := append([]byte(nil), payload...)
	bad[len(bad)/2] ^= 0x10
	assert.True(t, errors.Is(verifyPayload(context.Background(), bad, f), errVerify))
}
