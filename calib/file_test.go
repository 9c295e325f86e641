package calib

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleCalibration() *Calibration {
	h := Histogram{120: 600, 121: 200, 119: 100, 3: 1, 255: 2}
	cb, st := Calibrate(h)
	return &Calibration{Codebook: cb, Stats: st, Source: "unit test", Histogram: &h}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	c := sampleCalibration()
	var buf bytes.Buffer
	require.NoError(t, Save(&buf, c))

	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, "vkzip-codebook", doc["format"])
	assert.Equal(t, 1.0, doc["version"])
	assert.Equal(t, "BF16", doc["dtype"])
	assert.Len(t, doc["exponents"], 16)
	assert.Equal(t, map[string]any{"3": 1.0, "119": 100.0, "120": 600.0, "121": 200.0, "255": 2.0}, doc["histogram"])
	assert.Less(t, strings.Index(buf.String(), `"3"`), strings.Index(buf.String(), `"119"`)) // numeric key order

	got, err := Load(&buf)
	require.NoError(t, err)
	assert.Equal(t, c, got)

	// Without histogram and stats.
	c2 := &Calibration{Codebook: c.Codebook}
	buf.Reset()
	require.NoError(t, Save(&buf, c2))
	assert.NotContains(t, buf.String(), "histogram")
	got, err = Load(&buf)
	require.NoError(t, err)
	assert.Equal(t, c2, got)
}

func TestSaveRejectsInvalidCodebook(t *testing.T) {
	c := sampleCalibration()
	c.Codebook[3] = c.Codebook[0]
	err := Save(&bytes.Buffer{}, c)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "repeats exponent")
}

func TestSaveLoadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cb.json")
	c := sampleCalibration()
	require.NoError(t, SaveFile(p, c))
	got, err := LoadFile(p)
	require.NoError(t, err)
	assert.Equal(t, c, got)

	_, err = LoadFile(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
	_, err = LoadFile(p)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, p)
}

func TestLoadTolerates(t *testing.T) {
	doc := `{"format":"vkzip-codebook","version":1.0,"dtype":"BF16","future":[1,2],
		"exponents":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14, 255],
		"stats":{"values":10,"new_measure":{"x":1},"coverage":0.5}}`
	c, err := Load(strings.NewReader(doc))
	require.NoError(t, err)
	assert.Equal(t, uint8(255), c.Codebook[15])
	assert.Equal(t, uint64(10), c.Stats.Values)
	assert.Equal(t, 0.5, c.Stats.Coverage)
	assert.Nil(t, c.Histogram)
}

func TestLoadRejects(t *testing.T) {
	exps := func(s string) string {
		return `{"format":"vkzip-codebook","version":1,"dtype":"BF16","exponents":[` + s + `]}`
	}
	const fifteen = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14"
	valid := exps(fifteen + ",15")
	with := func(field string) string { return valid[:len(valid)-1] + "," + field + "}" }
	tests := []struct {
		name  string
		doc   string
		class error
		msg   string
	}{
		{"not json", "vkzip", ErrInvalid, "not a JSON object"},
		{"array", "[1]", ErrInvalid, "not a JSON object"},
		{"trailing", valid + "{}", ErrInvalid, "not a JSON object"},
		{"no format", `{"version":1}`, ErrInvalid, "format is missing"},
		{"wrong format", `{"format":"safetensors"}`, ErrInvalid, `format is "safetensors"`},
		{"no version", `{"format":"vkzip-codebook","dtype":"BF16"}`, ErrInvalid, "version is missing"},
		{"version string", `{"format":"vkzip-codebook","version":"1"}`, ErrInvalid, "want an integer"},
		{"version fraction", `{"format":"vkzip-codebook","version":1.5}`, ErrInvalid, "want an integer"},
		{"version 2", `{"format":"vkzip-codebook","version":2,"dtype":"BF16"}`, ErrUnsupported, "version 2"},
		{"dtype F16", `{"format":"vkzip-codebook","version":1,"dtype":"F16"}`, ErrUnsupported, `dtype "F16"`},
		{"no dtype", `{"format":"vkzip-codebook","version":1}`, ErrInvalid, "dtype is missing"},
		{"no exponents", `{"format":"vkzip-codebook","version":1,"dtype":"BF16"}`, ErrInvalid, "0 exponents"},
		{"fifteen", exps(fifteen), ErrInvalid, "15 exponents"},
		{"seventeen", exps(fifteen + ",15,16"), ErrInvalid, "17 exponents"},
		{"duplicate", exps(fifteen + ",3"), ErrInvalid, "exponent 15 repeats exponent 3"},
		{"too big", exps(fifteen + ",256"), ErrInvalid, "outside 0..255"},
		{"negative", exps(fifteen + ",-1"), ErrInvalid, "outside 0..255"},
		{"fraction", exps(fifteen + ",15.5"), ErrInvalid, "not an integer"},
		{"exponent notation", exps(fifteen + ",1e1"), ErrInvalid, "not an integer"},
		{"string", exps(fifteen + `,"15"`), ErrInvalid, "not an integer"},
		{"huge", exps(fifteen + ",99999999999999999999"), ErrInvalid, "not an integer"},
		{"bad stats", with(`"stats":{"values":-1}`), ErrInvalid, "values"},
		{"bad histogram key", with(`"histogram":{"256":1}`), ErrInvalid, "histogram key"},
		{"histogram key form", with(`"histogram":{"07":1}`), ErrInvalid, "histogram key"},
		{"too large", valid + strings.Repeat(" ", maxFileSize), ErrInvalid, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}
