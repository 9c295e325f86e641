//go:build cgo

package main

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vkzip/vkzip/calib"
	"github.com/vkzip/vkzip/codec"
	// The Vulkan backend registers itself (codec.RegisterBackend) when linked in, as in the CLI.
	_ "github.com/vkzip/vkzip/codec/vkcodec"
)

// config is what vkzip_open was asked for, in Go values.
type config struct {
	backend, device string
	formats         string // a codec format list ("" = the default), after prefer was resolved
	codebook        []byte // 16 exponents or calibration JSON; nil = calibrate per encode
	noChecksums     bool
	chunkSize       int // 0 = the format's default
}

// options turns a config into codec options, as the CLI's encode does for the same flags.
func (cf *config) options() ([]codec.Option, error) {
	opts := []codec.Option{codec.WithChecksums(!cf.noChecksums), codec.WithFormat(cf.formats)}
	if cf.chunkSize != 0 {
		opts = append(opts, codec.WithChunkSize(cf.chunkSize))
	}
	if cf.codebook != nil {
		cb, err := parseCodebook(cf.codebook)
		if err != nil {
			return nil, err
		}
		opts = append(opts, codec.WithCodebook(cb))
	}
	return opts, nil
}

// parseCodebook reads a codebook: 16 distinct exponent bytes, or the JSON `vkzip calibrate -o` writes.
func parseCodebook(b []byte) (codec.Codebook, error) {
	var cb codec.Codebook
	if len(b) == len(cb) {
		copy(cb[:], b)
		return cb, cb.Validate()
	}
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		cal, err := calib.Load(strings.NewReader(string(b)))
		if err != nil {
			return cb, invalidf("codebook JSON: %v", err)
		}
		return cal.Codebook, nil
	}
	return cb, invalidf("codebook of %d bytes: want %d exponent bytes or the JSON of `vkzip calibrate -o`", len(b), len(cb))
}

// handle is an open codec. Calls hold mu for reading; vkzip_close takes it for writing, so it waits for the calls
// in flight, and later calls find the handle gone from the table.
type handle struct {
	mu     sync.RWMutex
	c      *codec.Codec
	cf     config
	closed bool
	cuda   cudaDev // the CUDA device path's cached state (cudadev.go)
}

var (
	handlesMu sync.Mutex
	handles   = map[uint64]*handle{}
	lastID    atomic.Uint64 // ids are never reused, so a stale handle cannot reach a newer codec
)

// openHandle opens a codec for cf and registers it.
func openHandle(cf config) (uint64, error) {
	opts, err := cf.options()
	if err != nil {
		return 0, err
	}
	c, err := codec.New(append(opts, codec.WithBackendName(cf.backend, cf.device))...)
	if err != nil {
		return 0, err
	}
	id := lastID.Add(1)
	handlesMu.Lock()
	handles[id] = &handle{c: c, cf: cf}
	handlesMu.Unlock()
	return id, nil
}

// acquire finds handle id and holds it open until the returned release is called.
func acquire(id uint64) (*handle, func(), error) {
	handlesMu.Lock()
	h := handles[id]
	handlesMu.Unlock()
	if h == nil {
		return nil, nil, invalidf("codec handle %d is not open", id)
	}
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return nil, nil, invalidf("codec handle %d is closed", id)
	}
	return h, h.mu.RUnlock, nil
}

// closeHandle closes handle id once its calls in flight are done.
func closeHandle(id uint64) error {
	handlesMu.Lock()
	h := handles[id]
	delete(handles, id)
	handlesMu.Unlock()
	if h == nil {
		return invalidf("codec handle %d is not open", id)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.cuda.mu.Lock()
	h.cuda.close() // before the codec: it may run on the codec's backend
	h.cuda.mu.Unlock()
	return h.c.Close()
}
