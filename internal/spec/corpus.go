package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Checking a SplitZip-4 conformance manifest (conformance/corpus/splitzip4/manifest.json) against this package:
// every valid case's body, version 1 container and (where the manifest has it) version 2 container must be the
// bytes this encoder writes, and this decoder must decode each back to the case's input.

// dtypeNames are the names of §3.2's dtypes as manifests write them.
var dtypeNames = map[string]uint8{
	"OPAQUE": 0, "BF16": 1, "F16": 2, "F32": 3, "F64": 4, "F8_E5M2": 5, "F8_E4M3": 6, "BOOL": 7,
	"U8": 8, "I8": 9, "U16": 10, "I16": 11, "U32": 12, "I32": 13, "U64": 14, "I64": 15,
}

// ParseDType is a dtype id by its manifest name.
func ParseDType(name string) (uint8, bool) {
	d, ok := dtypeNames[name]
	return d, ok
}

// Expect is an expected payload: length and SHA-256.
type Expect struct {
	Len    int    `json:"len"`
	SHA256 string `json:"sha256"`
}

func (e *Expect) check(what string, b []byte) error {
	s := sha256.Sum256(b)
	if got := hex.EncodeToString(s[:]); len(b) != e.Len || got != e.SHA256 {
		return fmt.Errorf("%s: spec encoder writes %d bytes, SHA-256 %s; manifest says %d bytes, %s", what, len(b),
			got, e.Len, e.SHA256)
	}
	return nil
}

// SZ4Case is the part of a manifest case this check reads.
type SZ4Case struct {
	ID          string   `json:"id"`
	Input       string   `json:"input"`
	DType       string   `json:"dtype"`
	Shape       []uint64 `json:"shape"`
	Chunk       int      `json:"chunk"`
	Codebook    string   `json:"codebook"`
	Calibrate   bool     `json:"calibrate"`
	Checksums   bool     `json:"checksums"`
	Body        *Expect  `json:"body"`
	Container   *Expect  `json:"container"`
	ContainerV2 *Expect  `json:"container_v2"`
}

// SZ4Manifest is the part of a manifest this check reads.
type SZ4Manifest struct {
	Format string    `json:"format"`
	Cases  []SZ4Case `json:"cases"`
}

// SZ4Report counts what CheckSZ4Manifest checked.
type SZ4Report struct {
	Cases, Bodies, Containers, ContainersV2, Decoded int
}

// CheckSZ4Manifest checks every case of a SplitZip-4 manifest; input gives a case's input bytes by input id. It
// returns an error naming the disagreeing cases (all of them are checked) or, when none disagrees but fewer cases
// were checked than the manifest lists, an error saying so. Once any case has a version 2 container expectation,
// every case must have one.
func CheckSZ4Manifest(manifest []byte, input func(id string) ([]byte, error)) (SZ4Report, error) {
	var rep SZ4Report
	var m SZ4Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return rep, fmt.Errorf("manifest: %w", err)
	}
	if m.Format != "splitzip4" {
		return rep, fmt.Errorf("manifest of format %q, not splitzip4", m.Format)
	}
	if len(m.Cases) == 0 {
		return rep, errors.New("manifest lists no cases")
	}
	v2 := false
	for _, k := range m.Cases {
		v2 = v2 || k.ContainerV2 != nil
	}
	var errs []string
	for i := range m.Cases {
		k := &m.Cases[i]
		if v2 && k.ContainerV2 == nil {
			errs = append(errs, fmt.Sprintf("case %s: no container_v2 although other cases have one", k.ID))
			continue
		}
		if err := checkSZ4Case(k, input, &rep); err != nil {
			errs = append(errs, fmt.Sprintf("case %s: %v", k.ID, err))
			continue
		}
		rep.Cases++
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("%d of %d cases disagree with the spec codec:\n%s", len(errs), len(m.Cases),
			strings.Join(errs, "\n"))
	}
	if rep.Cases != len(m.Cases) {
		return rep, fmt.Errorf("checked %d cases of %d", rep.Cases, len(m.Cases))
	}
	return rep, nil
}

func checkSZ4Case(k *SZ4Case, input func(string) ([]byte, error), rep *SZ4Report) error {
	in, err := input(k.Input)
	if err != nil {
		return err
	}
	dt, ok := ParseDType(k.DType)
	if !ok {
		return fmt.Errorf("dtype %q", k.DType)
	}
	shift := uint(0)
	for s := uint(MinShift); s <= MaxShift; s++ {
		if k.Chunk == 1<<s {
			shift = s
		}
	}
	if shift == 0 {
		return fmt.Errorf("chunk size %d", k.Chunk)
	}
	rec := Record{Name: k.ID, DType: dt, Shape: k.Shape, Data: in}
	if rec.Elements()*uint64(DTypeSize(dt)) != uint64(len(in)) {
		return fmt.Errorf("%d input bytes for shape %v of %s", len(in), k.Shape, k.DType)
	}
	var cb Codebook
	b, err := hex.DecodeString(k.Codebook)
	if err != nil || len(b) != len(cb) {
		return fmt.Errorf("codebook %q", k.Codebook)
	}
	copy(cb[:], b)
	var given *Codebook
	if !k.Calibrate {
		given = &cb
	} else if dt == DTypeBF16 {
		if cal := Calibrate(in); cal != cb {
			return fmt.Errorf("calibration gives codebook %x, manifest says %s", cal[:], k.Codebook)
		}
	}
	// The body: present exactly when the container codes the tensor with SplitZip-4.
	if codes := codesSZ4(&rec); codes != (k.Body != nil) {
		return fmt.Errorf("the spec encoder codes the tensor with splitzip4: %v; the manifest has a body: %v", codes,
			k.Body != nil)
	}
	if k.Body != nil {
		body, err := SZ4Encode(in, shift, cb, k.Checksums)
		if err != nil {
			return err
		}
		if err := k.Body.check("body", body); err != nil {
			return err
		}
		rep.Bodies++
		out, err := SZ4Decode(body, rec.Elements(), shift, cb, k.Checksums)
		if err != nil {
			return fmt.Errorf("spec decoder rejects the body: %w", err)
		}
		if !bytes.Equal(out, in) {
			return errors.New("spec decoder decodes the body to other bytes")
		}
		rep.Decoded++
	}
	if k.Container == nil {
		return errors.New("no container expectation")
	}
	for _, v := range []struct {
		version int
		want    *Expect
		count   *int
	}{{1, k.Container, &rep.Containers}, {2, k.ContainerV2, &rep.ContainersV2}} {
		if v.want == nil {
			continue
		}
		c, err := EncodeContainer([]Record{rec}, EncodeOptions{Version: v.version, Checksums: k.Checksums,
			Final: true, Shift: shift, Codebook: given})
		if err != nil {
			return err
		}
		if err := v.want.check(fmt.Sprintf("container v%d", v.version), c); err != nil {
			return err
		}
		*v.count++
		out, err := DecodeStream(c)
		if err != nil {
			return fmt.Errorf("spec decoder rejects the v%d container: %w", v.version, err)
		}
		if !bytes.Equal(out, in) {
			return fmt.Errorf("spec decoder decodes the v%d container to other bytes", v.version)
		}
		rep.Decoded++
	}
	return nil
}
