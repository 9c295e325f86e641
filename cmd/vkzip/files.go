package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vkzip/vkzip/tensorfile"
)

// readInput returns the bytes of path ("-" = stdin). Regular files are memory-mapped read-only (through
// tensorfile's raw reader), so an input of many GiB costs address space rather than memory; release unmaps.
func readInput(path string) (data []byte, release func(), err error) {
	if path == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("reading stdin: %w", err)
		}
		return b, func() {}, nil
	}
	f, err := tensorfile.Open(path, tensorfile.OpenOptions{Kind: tensorfile.Raw})
	if err != nil {
		return nil, nil, err
	}
	return f.Tensors[0].Data, func() { f.Close() }, nil
}

// isStream reports whether path names a destination that cannot be replaced by a rename: stdout, or an existing
// file that is not a regular one (/dev/null, a FIFO). Those are written in place, after all checks have passed.
func isStream(path string) bool {
	if path == "-" {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}

// sameFile reports whether a and b are the same existing file.
func sameFile(a, b string) bool {
	if a == "-" || b == "-" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// atomicFile is an output file that appears under its name only when complete: it is written to a temporary file
// in the same directory (so the rename cannot cross file systems) and renamed over the target by commit. abort,
// or any failure of commit, removes the temporary file, so no partial output ever remains.
type atomicFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	done bool
}

func createAtomic(path string) (*atomicFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("output %s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot create %s: directory %s does not exist", path, filepath.Dir(path))
		}
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	return &atomicFile{path: path, f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.w.Write(p) }

// commit flushes, syncs and renames the file into place.
func (a *atomicFile) commit() error {
	err := a.w.Flush()
	if err == nil {
		err = a.f.Chmod(0o644) // CreateTemp makes 0600; outputs are ordinary files
	}
	if err == nil {
		// Sync before rename: otherwise a crash could leave the new name pointing at a file with no data.
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	a.done = true
	return nil
}

// abort removes the temporary file unless commit succeeded; safe to defer unconditionally.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.f.Name())
}

// writeOutput writes data to path: stdout or a stream destination directly, a file atomically.
func writeOutput(path string, data []byte) error {
	if path == "-" {
		_, err := os.Stdout.Write(data)
		return err
	}
	if isStream(path) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	defer a.abort()
	if _, err := a.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return a.commit()
}

// spillBuffer holds output that must not reach a stream before it has all been verified: in memory up to limit
// bytes, beyond that in a temporary file, which close removes.
type spillBuffer struct {
	limit int
	mem   []byte
	f     *os.File
	n     int64
}

func (s *spillBuffer) Write(p []byte) (int, error) {
	if s.f == nil && len(s.mem)+len(p) <= s.limit {
		s.mem = append(s.mem, p...)
		s.n += int64(len(p))
		return len(p), nil
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "vkzip-decode-*")
		if err != nil {
			return 0, fmt.Errorf("creating a temporary file for the output: %w", err)
		}
		s.f = f
		if _, err := f.Write(s.mem); err != nil {
			return 0, err
		}
		s.mem = nil
	}
	n, err := s.f.Write(p)
	s.n += int64(n)
	return n, err
}

// copyTo writes everything buffered to w.
func (s *spillBuffer) copyTo(w io.Writer) error {
	if s.f == nil {
		_, err := w.Write(s.mem)
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.f)
	return err
}

func (s *spillBuffer) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
	s.mem = nil
}

// isTerminal reports whether f is a character device: a terminal, in practice.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
