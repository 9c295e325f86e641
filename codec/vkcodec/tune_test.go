package vkcodec

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/internal/vktune"
	"github.com/vkzip/vkzip/shaders"
)

// tuneKnob is one tuning knob that was once read from the environment: the variable, a non-default value, the
// same value as a vktune.Params setting, and where the backend's resolved configuration shows it.
type tuneKnob struct {
	env, val string
	set      func(*vktune.Params)
	get      func(*Backend, *huffTuning) any
}

// perKernel is f of every shipped kernel, by name: a knob resolved per kernel shows in it.
func perKernel(f func(string) int) map[string]int {
	m := map[string]int{}
	for _, n := range shaders.Names {
		m[n] = f(n)
	}
	return m
}

// tuneKnobs lists every VKZIP_* variable the backend read before tuning moved to vktune.Params.
var tuneKnobs = []tuneKnob{
	{"VKZIP_CRC_BITS", "6", func(p *vktune.Params) { p.CRCBits = 6 },
		func(b *Backend, _ *huffTuning) any { return perKernel(b.crcBits) }},
	{"VKZIP_SZ4_PLACE_WG", "64", func(p *vktune.Params) { p.SZ4PlaceWG = 64 },
		func(b *Backend, _ *huffTuning) any { return b.placeWG() }},
	{"VKZIP_QUEUES", "1", func(p *vktune.Params) { p.Queues = 1 },
		func(b *Backend, _ *huffTuning) any { return b.VK().Queues() }},
}

// huffKnobs are the VKZIP_HUFF_* variables: VKZIP_HUFF_ + env, a non-default value as text and as the vktune.Huff
// field param takes it, and the huffTuning field that shows it.
var huffKnobs = []struct {
	env, val, param string
	v               any
	kernel          string
}{
	{"ENCODE_WG", "64", "EncodeWG", uint32(64), "EncodeWG"}, {"PLACE_WG", "64", "PlaceWG", uint32(64), "PlaceWG"},
	{"DECODE_WG", "64", "DecodeWG", uint32(64), "DecodeWG"}, {"DECODE_GROUPS", "3", "DecodeGroups", uint32(3), "DecodeGroups"},
	{"CHECK_WG", "64", "CheckWG", uint32(64), "CheckWG"}, {"CHECK_GROUPS", "2", "CheckGroups", uint32(2), "CheckGroups"},
	{"CHECK_FIRST", "1", "CheckFirst", true, "CheckFirst"}, {"BATCH", "4", "Batch", uint32(4), "Batch"},
	{"CACHE_SHIFT", "12", "CacheShift", uint32(12), "CacheShift"}, {"TEAM_SYNC", "0", "NoTeamSync", true, "TeamSync"},
	{"INT64", "0", "NoInt64", true, "Int64"}, {"TABLE", "512", "TableEntries", uint32(512), "TableEntries"},
	{"L1_BITS", "7", "L1Bits", uint32(7), "L1Bits"}, {"ONE_READ", "0", "TwoReads", true, "TwoReads"},
	{"RFILL", "3", "RingFill", uint32(3), "RingFill"}, {"LOWPF", "2", "LowAhead", uint32(2), "LowAhead"},
}

func init() {
	for _, h := range huffKnobs {
		tuneKnobs = append(tuneKnobs, tuneKnob{"VKZIP_HUFF_" + h.env, h.val,
			func(p *vktune.Params) { reflect.ValueOf(&p.Huff).Elem().FieldByName(h.param).Set(reflect.ValueOf(h.v)) },
			func(_ *Backend, k *huffTuning) any {
				return reflect.ValueOf(k).Elem().FieldByName(h.kernel).Interface()
			}})
	}
}

// tuneFormats are the formats whose payloads the tuning tests compare: every GPU format family, xw3 on F8_E5M2.
var tuneFormats = []struct {
	name string
	dt   layout.DType
}{{"splitzip4", layout.DTypeBF16}, {"zf12", layout.DTypeBF16}, {"tbe3", layout.DTypeBF16},
	{"huff", layout.DTypeBF16}, {"auto", layout.DTypeBF16}, {"xw3", layout.DTypeF8E5M2}}

// tunePayloads encodes one tensor of each of tuneFormats on vb (output poisoned first), checks each body decodes
// back to its values on vb (output poisoned first), and returns the bodies by format.
func tunePayloads(t *testing.T, vb *Backend) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for i, tf := range tuneFormats {
		id, ok := codec.FormatByName(tf.name)
		require.True(t, ok, tf.name)
		fd, _ := codec.LookupFormat(id)
		r := rand.New(rand.NewPCG(29, uint64(i)))
		n := 3<<12 + 5
		src := kvLike(r, n, 0.01)
		if tf.dt != layout.DTypeBF16 {
			src = xwValues(r, tf.dt, n, 1.6)
		}
		shift := uint(12)
		var cb *codec.Codebook
		if fd.UsesCodebook(tf.dt) {
			cb = &testCB
		}
		dst := make([]byte, fd.MaxBodyOf(uint64(n), tf.dt, shift))
		for j := range dst {
			dst[j] = 0xA5
		}
		enc := []codec.EncodeJob{{Format: id, DType: tf.dt, Src: src, N: uint64(n), Shift: shift, Codebook: cb,
			Checksums: true, Dst: dst}}
		require.NoError(t, vb.Encode(ctx, enc), tf.name)
		body := append([]byte(nil), enc[0].Out...)
		vals := make([]byte, len(src))
		for j := range vals {
			vals[j] = 0x5A
		}
		dec := []codec.DecodeJob{{Name: tf.name, Format: id, DType: tf.dt, Body: body, N: uint64(n), Shift: shift,
			Codebook: cb, Checksums: true, Dst: vals}}
		require.NoError(t, vb.Decode(ctx, dec), tf.name)
		require.NoError(t, dec[0].Err, tf.name)
		require.True(t, string(src) == string(vals), "%s: values differ at byte %d", tf.name, firstDiff(src, vals))
		out[tf.name] = body
	}
	return out
}

// TestEnvIgnored sets every VKZIP_* variable the backend once read for tuning, each to a value that changes its
// knob when given through vktune.Params (TestTuneChangesPipelines shows that), and checks that the backend ignores
// them: its resolved configuration (per-kernel CRC widths, workgroups, queues, the huff kernels' variant) is the
// default one, and every format's payload is byte-identical to a default backend's.
//
// How it fails: were a variable read again (say VKZIP_HUFF_BATCH in newHuffTuning), the knob's
// resolved value under the variable differs from the default and the comparison of that knob reports the variable
// by name. The payload comparison alone could not catch it, since tuning changes speed, never bytes.
func TestEnvIgnored(t *testing.T) {
	def := openTest(t, Options{})
	want := tunePayloads(t, def)
	defK := newHuffTuning(def)
	for _, k := range tuneKnobs {
		t.Setenv(k.env, k.val)
	}
	vb := openTest(t, Options{})
	got := tunePayloads(t, vb)
	k := newHuffTuning(vb)
	for _, kn := range tuneKnobs {
		assert.Equal(t, kn.get(def, defK), kn.get(vb, k), "%s=%s changed the backend's configuration", kn.env, kn.val)
	}
	assert.Equal(t, def.t, vb.t, "resolved tuning")
	for _, tf := range tuneFormats {
		require.True(t, string(want[tf.name]) == string(got[tf.name]), "%s: payload differs with VKZIP_* set, at byte %d",
			tf.name, firstDiff(want[tf.name], got[tf.name]))
	}
}

// TestTuneChangesPipelines sets every knob of tuneKnobs through Options.Tune: each one that this device can show
// changes the backend's resolved configuration (so TestEnvIgnored's comparison sees a variable that is read), and
// the payloads, made by the tuned kernels, are still the default backend's bytes.
func TestTuneChangesPipelines(t *testing.T) {
	def := openTest(t, Options{})
	want := tunePayloads(t, def)
	defK := newHuffTuning(def)
	var p vktune.Params
	for _, kn := range tuneKnobs {
		kn.set(&p)
	}
	vb := openTest(t, Options{Tune: &p})
	k := newHuffTuning(vb)
	shown := 0
	for _, kn := range tuneKnobs {
		d, g := kn.get(def, defK), kn.get(vb, k)
		switch {
		case kn.env == "VKZIP_HUFF_TEAM_SYNC" && !def.teamSyncable(),
			kn.env == "VKZIP_HUFF_INT64" && !def.huffWide(),
			kn.env == "VKZIP_QUEUES" && def.Info().ComputeQueueCount < 2:
			t.Logf("%s: not observable on %s", kn.env, def.Device())
			assert.Equal(t, d, g, kn.env)
		default:
			assert.NotEqual(t, d, g, "%s: its Params setting changed nothing", kn.env)
			shown++
		}
	}
	assert.GreaterOrEqual(t, shown, len(tuneKnobs)-3)
	got := tunePayloads(t, vb)
	for _, tf := range tuneFormats {
		require.True(t, string(want[tf.name]) == string(got[tf.name]), "%s: tuned payload differs at byte %d",
			tf.name, firstDiff(want[tf.name], got[tf.name]))
	}
}

// TestTuneBadCRCBits: CRC widths outside 4 to 8 are refused with ErrUnsupported.
func TestTuneBadCRCBits(t *testing.T) {
	for _, bits := range []int{3, 9, -1} {
		b, err := Open(Options{Tune: &vktune.Params{CRCBits: bits}})
		if err == nil {
			b.Close()
		}
		require.ErrorIs(t, err, codec.ErrUnsupported, "CRCBits %d", bits)
	}
}
