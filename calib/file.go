package calib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// Error classes; every error about a codebook file's content wraps one of them.
var (
	ErrInvalid     = errors.New("invalid codebook file")     // not a codebook file, or a malformed one
	ErrUnsupported = errors.New("unsupported codebook file") // a version or dtype this package does not know
	ErrNoBF16      = errors.New("no BF16 data")              // an input with nothing to calibrate on
)

// Codebook file identification.
const (
	FileFormat  = "vkzip-codebook"
	FileVersion = 1
	FileDType   = "BF16"
)

// maxFileSize bounds what Load reads: a codebook file with a full histogram is a few KiB.
const maxFileSize = 1 << 20

// Calibration is the content of a codebook file.
type Calibration struct {
	Codebook  codec.Codebook
	Stats     Stats      // of the codebook on the data it was calibrated on
	Source    string     // free text: what it was calibrated on
	Histogram *Histogram // the exponent counts it was calibrated on; optional
}

// fileJSON is the document Save writes; see there.
type fileJSON struct {
	Format    string            `json:"format"`
	Version   any               `json:"version"` // checked before the rest is decoded
	DType     string            `json:"dtype"`
	Exponents []json.RawMessage `json:"exponents"`
	Source    string            `json:"source,omitempty"`
	Stats     *Stats            `json:"stats,omitempty"`
	Histogram *histogramJSON    `json:"histogram,omitempty"`
}

// histogramJSON writes a Histogram as an object keyed by exponent, in exponent order, without zero counts.
type histogramJSON Histogram

func (h *histogramJSON) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for e, c := range h {
		if c == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(e), 10)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, c, 10)
	}
	return append(b, '}'), nil
}

func (h *histogramJSON) UnmarshalJSON(b []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("histogram: %v", err)
	}
	*h = histogramJSON{}
	for k, c := range m {
		e, err := strconv.ParseUint(k, 10, 8)
		if err != nil || strconv.FormatUint(e, 10) != k {
			return fmt.Errorf("histogram key %q is not an exponent 0..255", k)
		}
		h[e] = c
	}
	return nil
}

// Save writes c as a codebook file, a JSON document:
//
//	{
//	  "format": "vkzip-codebook",      required, exactly this
//	  "version": 1,                    required; Load refuses other versions as unsupported
//	  "dtype": "BF16",                 required; the only dtype codebooks exist for
//	  "exponents": [126, 127, ...],    required: 16 distinct integers in 0..255; code i stands for exponents[i]
//	  "source": "...",                 optional free text: what the codebook was calibrated on
//	  "stats": {"values": ..., ...},   optional and informative: the fields of Stats
//	  "histogram": {"120": 1234, ...}  optional: value counts by exponent, decimal keys, zero counts left out
//	}
//
// Readers ignore fields they do not know, within stats too. Save fails if the codebook repeats an exponent.
func Save(w io.Writer, c *Calibration) error {
	if err := c.Codebook.Validate(); err != nil {
		return fmt.Errorf("calib: %w: %v", ErrInvalid, err)
	}
	doc := fileJSON{
		Format:  FileFormat,
		Version: FileVersion,
		DType:   FileDType,
		Source:  c.Source,
		Stats:   &c.Stats,
	}
	for _, e := range c.Codebook {
		doc.Exponents = append(doc.Exponents, strconv.AppendUint(nil, uint64(e), 10))
	}
	if c.Histogram != nil {
		doc.Histogram = (*histogramJSON)(c.Histogram)
	}
	b, err := json.MarshalIndent(&doc, "", "  ")
	if err != nil {
		return fmt.Errorf("calib: %v", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Load reads a codebook file and validates it: format, version and dtype must be those Save writes, and the
// exponents 16 distinct integers in 0..255.
func Load(r io.Reader) (*Calibration, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("calib: %w: larger than %d bytes", ErrInvalid, maxFileSize)
	}
	return parse(b)
}

func parse(b []byte) (*Calibration, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("calib: %w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	// Identify the file before decoding the rest, so that a wrong file gets "not a codebook file", not a
	// complaint about some field of it.
	var id struct {
		Format  any `json:"format"`
		Version any `json:"version"`
		DType   any `json:"dtype"`
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, invalid("not a JSON object: %v", err)
	}
	if id.Format != FileFormat {
		return nil, invalid("format is %s, want %q", show(id.Format), FileFormat)
	}
	if v, ok := id.Version.(float64); !ok || v != FileVersion {
		if !ok || math.Trunc(v) != v {
			return nil, invalid("version is %s, want an integer", show(id.Version))
		}
		return nil, fmt.Errorf("calib: %w: version %v, this reader knows version %d", ErrUnsupported, v, FileVersion)
	}
	if id.DType != FileDType {
		if s, ok := id.DType.(string); ok {
			return nil, fmt.Errorf("calib: %w: dtype %q, codebooks are for %s", ErrUnsupported, s, FileDType)
		}
		return nil, invalid("dtype is %s, want %q", show(id.DType), FileDType)
	}

	var doc fileJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, invalid("%v", err)
	}
	if len(doc.Exponents) != layout.CodebookSize {
		return nil, invalid("%d exponents, want %d", len(doc.Exponents), layout.CodebookSize)
	}
	c := &Calibration{Source: doc.Source}
	var seen [256]bool
	for i, raw := range doc.Exponents {
		e, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		switch {
		case err != nil:
			return nil, invalid("exponent %d (%s) is not an integer", i, raw)
		case e < 0 || e > 255:
			return nil, invalid("exponent %d (%d) is outside 0..255", i, e)
		case seen[e]:
			return nil, invalid("exponent %d repeats exponent %d", i, e)
		}
		seen[e] = true
		c.Codebook[i] = uint8(e)
	}
	if doc.Stats != nil {
		c.Stats = *doc.Stats
	}
	if doc.Histogram != nil {
		c.Histogram = (*Histogram)(doc.Histogram)
	}
	return c, nil
}

// show formats a decoded JSON value for an error message.
func show(v any) string {
	if v == nil {
		return "missing"
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > 40 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

// SaveFile writes c to the named file, replacing it.
func SaveFile(path string, c *Calibration) error {
	var buf bytes.Buffer
	if err := Save(&buf, c); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// LoadFile reads the named codebook file.
func LoadFile(path string) (*Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Load(f)
	if err != nil && (errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsupported)) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, err
}
