package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vkzip/vkzip/codec"
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

// openStreamInput opens path ("-" = stdin) for reading once, in order: encode and decode stream their inputs
// through read calls, so that memory does not grow with the input (a memory-mapped file's pages would count as
// the process's memory as they are read). size is the input's length for a regular file, -1 otherwise; closeIn
// may be called more than once.
func openStreamInput(path string) (in io.Reader, size int64, closeIn func(), err error) {
	size = -1
	if path == "-" {
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		return os.Stdin, size, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s is a directory", path)
	}
	if fi.Mode().IsRegular() {
		size = fi.Size()
	}
	closed := false
	return f, size, func() {
		if !closed {
			closed = true
			f.Close()
		}
	}, nil
}

// openSink opens the output path for a verb that writes as it goes. A file is written through an atomicFile, so
// it appears only on commit and a failure leaves nothing; stdout and an existing non-regular file (a FIFO,
// /dev/null) receive the bytes as they are written. abort is safe to defer unconditionally.
func openSink(path string, opts outputOptions) (w io.Writer, commit func() error, abort func(), err error) {
	nop := func() error { return nil }
	if path == "-" {
		return os.Stdout, nop, func() {}, nil
	}
	if isStream(path) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, nil, err
		}
		closed := false
		closeF := func() error {
			if closed {
				return nil
			}
			closed = true
			return f.Close()
		}
		return f, closeF, func() { closeF() }, nil
	}
	a, err := createOutput(path, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return a, a.commit, a.abort, nil
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

// atomicFile is an output file that appears under its name only when complete, with its final mode and times,
// or not at all. Where the OS has unnamed files (Linux O_TMPFILE) it is written to one in the target's directory
// and linked into place by commit, so that a process killed at any point (SIGKILL included) leaves nothing behind.
// Elsewhere it is written to a hidden temporary name that carries the writer's process id,
// ".NAME.vkzip-PID-RANDOM.tmp"; a later run that creates NAME removes those whose process is gone. abort, or any
// failure of commit, removes what was written.
type atomicFile struct {
	path    string
	f       *os.File
	w       *bufio.Writer
	tmpName string // the temporary name; "" for an unnamed file
	opts    outputOptions
	done    bool
}

// outputOptions say how an output file is created.
type outputOptions struct {
	// force replaces an existing file; without it an existing output is an error wrapping fs.ErrExist, checked
	// both before anything is written and, atomically, when the file is put in place.
	force bool
	mode  fs.FileMode // permission bits of the output; 0 means 0644
	mtime time.Time   // modification (and access) time of the output; zero means the time of writing
}

// createAtomic creates an output that replaces an existing file of that name: mode 0644, the current time.
func createAtomic(path string) (*atomicFile, error) {
	return createOutput(path, outputOptions{force: true})
}

// existsError is the error for an output that exists and may not be replaced; it matches fs.ErrExist.
func existsError(path string) error { return &outputExistsError{path} }

type outputExistsError struct{ path string }

func (e *outputExistsError) Error() string {
	return e.path + " already exists (use -f to overwrite it)"
}
func (e *outputExistsError) Is(target error) bool { return target == fs.ErrExist }

// createOutput creates the output path as opts say; see atomicFile.
func createOutput(path string, opts outputOptions) (*atomicFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("output %s is a directory", path)
	}
	if _, err := os.Lstat(path); err == nil && !opts.force {
		return nil, existsError(path)
	}
	dir := filepath.Dir(path)
	a := &atomicFile{path: path, opts: opts}
	removeStaleTemps(path)
	f, err := openUnnamed(dir)
	if err != nil {
		f, err = os.CreateTemp(dir, tempPattern(path))
		if err == nil {
			a.tmpName = f.Name()
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot create %s: directory %s does not exist", path, dir)
		}
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	a.f, a.w = f, bufio.NewWriterSize(f, 1<<20)
	return a, nil
}

// tempPattern is the os.CreateTemp pattern of path's named temporary files: hidden, with this process's id.
func tempPattern(path string) string {
	return "." + filepath.Base(path) + ".vkzip-" + strconv.Itoa(os.Getpid()) + "-*.tmp"
}

// removeStaleTemps removes the named temporary files of path (tempPattern) whose writing process no longer
// exists: what a killed run on a system without unnamed files left behind.
func removeStaleTemps(path string) {
	prefix := "." + filepath.Base(path) + ".vkzip-"
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(prefix)+"*.tmp"))
	for _, n := range names {
		rest := strings.TrimPrefix(filepath.Base(n), prefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err == nil && pid > 0 && !processAlive(pid) {
			os.Remove(n)
		}
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// setFileTimes sets the modification time of f (named name, or "" for an unnamed file) to mtime; the access
// time stays the time of writing.
func setFileTimes(f *os.File, name string, mtime time.Time) error {
	if name == "" {
		name = fdPath(f)
	}
	return os.Chtimes(name, time.Time{}, mtime)
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.w.Write(p) }

// commit flushes the file, gives it its mode and times, syncs it and puts it in place under its name.
func (a *atomicFile) commit() error {
	err := a.w.Flush()
	mode := a.opts.mode.Perm()
	if a.opts.mode == 0 {
		mode = 0o644
	}
	if err == nil {
		err = a.f.Chmod(mode)
	}
	if err == nil && !a.opts.mtime.IsZero() {
		err = setFileTimes(a.f, a.tmpName, a.opts.mtime)
	}
	if err == nil {
		// Sync before the name appears: otherwise a crash could leave the name pointing at a file with no data.
		err = a.f.Sync()
	}
	if err == nil {
		err = a.place()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if a.tmpName != "" {
			os.Remove(a.tmpName)
		}
		a.done = true
		if errors.Is(err, fs.ErrExist) {
			return existsError(a.path)
		}
		return fmt.Errorf("writing %s: %w", a.path, err)
	}
	a.done = true
	return nil
}

// place gives the written file its name: without force only if the name is free (link fails on an existing
// name), with force replacing whatever is there (rename).
func (a *atomicFile) place() error {
	if a.tmpName == "" {
		return linkUnnamed(a.f, a.path, a.opts.force)
	}
	if a.opts.force {
		return os.Rename(a.tmpName, a.path)
	}
	if err := os.Link(a.tmpName, a.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// No hard links on this file system: check, then rename (the name could appear in between).
		if _, serr := os.Lstat(a.path); serr == nil {
			return fs.ErrExist
		}
		return os.Rename(a.tmpName, a.path)
	}
	return os.Remove(a.tmpName)
}

// abort removes the temporary file unless commit succeeded; safe to defer unconditionally.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	if a.tmpName != "" {
		os.Remove(a.tmpName)
	}
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

// isTerminal reports whether f is a character device: a terminal, in practice.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// fileFlags are the flags encode and decode share for their files, as zstd has them.
type fileFlags struct {
	out    string // -o
	stdout bool   // -c
	force  bool   // -f
	rm     bool   // --rm
}

func addFileFlags(fs *flag.FlagSet, defaultOut string) *fileFlags {
	ff := &fileFlags{}
	fs.StringVar(&ff.out, "o", "", "output `path`, or - for stdout, with one INPUT only (default "+defaultOut+")")
	fs.BoolVar(&ff.stdout, "c", false, "write to stdout (one INPUT only); the same as -o -")
	fs.BoolVar(&ff.force, "f", false, "overwrite existing output files (never the input itself)")
	fs.BoolVar(&ff.rm, "rm", false, "remove each INPUT once its output is complete (not with stdin or stdout)")
	return ff
}

// fileJob is one input of a command and the output it goes to ("-": stdin, stdout).
type fileJob struct{ in, out string }

// planJobs pairs every input with its output, checking the command line before any input is read: -o and -c take
// one input, an input given twice or stdin among several is a mistake, and --rm needs files on both sides.
// defaultOut names the output of an input file given no -o; it may return a usage error.
func planJobs(pos []string, ff *fileFlags, defaultOut func(in string) (string, error)) ([]fileJob, error) {
	switch {
	case len(pos) == 0:
		return nil, usagef("no INPUT given")
	case ff.stdout && ff.out != "" && ff.out != "-":
		return nil, usagef("-c and -o %s both name the output", ff.out)
	case len(pos) > 1 && ff.out != "":
		return nil, usagef("-o names the output of one INPUT, got %d (without -o each INPUT gets its own output)", len(pos))
	case len(pos) > 1 && ff.stdout:
		return nil, usagef("-c writes one INPUT to stdout, got %d", len(pos))
	}
	seen := map[string]bool{}
	jobs := make([]fileJob, 0, len(pos))
	for _, in := range pos {
		key := filepath.Clean(in)
		switch {
		case in == "-" && len(pos) > 1:
			return nil, usagef("stdin (-) can only be the only INPUT")
		case seen[key]:
			return nil, usagef("INPUT %s given twice", in)
		}
		seen[key] = true
		out := ff.out
		switch {
		case ff.stdout:
			out = "-"
		case out != "":
		case in == "-":
			out = "-"
		default:
			var err error
			if out, err = defaultOut(in); err != nil {
				return nil, err
			}
		}
		if out == "-" {
			dataOnStdout()
		}
		if ff.rm && (in == "-" || out == "-") {
			return nil, usagef("--rm removes an input file once its output file is complete: not with stdin or stdout")
		}
		jobs = append(jobs, fileJob{in: in, out: out})
	}
	return jobs, nil
}

// checkJobOutput refuses, before any work, an output that would replace the input or an existing file without
// -f. Stdout and existing non-regular files (/dev/null, a FIFO) are written in place and need no -f.
func checkJobOutput(j fileJob, force bool) error {
	if j.out == "-" || j.in == "-" && isStream(j.out) {
		return nil
	}
	if filepath.Clean(j.out) == filepath.Clean(j.in) || sameFile(j.in, j.out) {
		return fmt.Errorf("refusing to overwrite the input %s", j.in)
	}
	if isStream(j.out) {
		return nil
	}
	if _, err := os.Lstat(j.out); err == nil && !force {
		return existsError(j.out)
	}
	return nil
}

// outputOptionsFor is how the output of input in is created: with the input's permission bits and modification
// time, as zstd and gzip keep them (stdin: 0644 and the current time).
func outputOptionsFor(in string, force bool) outputOptions {
	o := outputOptions{force: force}
	if in == "-" {
		return o
	}
	if fi, err := os.Stat(in); err == nil {
		o.mode, o.mtime = fi.Mode().Perm(), fi.ModTime()
		if o.mode == 0 {
			o.mode = 0o600 // a file of no permissions: keep the output private rather than give it the default
		}
	}
	return o
}

// removeInput deletes an input whose output is complete (--rm).
func removeInput(in string) error {
	if err := os.Remove(in); err != nil {
		return fmt.Errorf("--rm: %w", err)
	}
	return nil
}

// forEachInput runs fn on every job in order. With one job its error is returned as it is; with several, each
// failure is printed as one line naming its input and the others still run, and the result is errReported when
// any failed. An interrupt stops at once.
func forEachInput(ctx context.Context, verb string, jobs []fileJob, fn func(fileJob) error) error {
	failed := false
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(j)
		if err == nil {
			continue
		}
		if j.in != "-" && !strings.Contains(errMessage(err), j.in) {
			err = fmt.Errorf("%s: %w", j.in, err)
		}
		var ue *usageError
		if len(jobs) == 1 || errors.Is(err, context.Canceled) || errors.As(err, &ue) {
			return err
		}
		printFailure(verb, j.in, errMessage(err), err)
		failed = true
	}
	if failed {
		return errReported
	}
	return nil
}

// writeFile writes data to path: stdout or a stream destination directly, a file atomically (createOutput).
func writeFile(path string, data []byte, opts outputOptions) error {
	if path == "-" || isStream(path) {
		return writeOutput(path, data)
	}
	a, err := createOutput(path, opts)
	if err != nil {
		return err
	}
	defer a.abort()
	if _, err := a.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return a.commit()
}

// fileSession is one backend, opened once, for all the inputs of a command.
type fileSession struct {
	b         codec.Backend
	note      string // how "auto" chose, for one line on stderr
	noteShown bool
	opts      []codec.Option
}

// showNote prints how "auto" chose the backend, once per process, after the first input that succeeded (a
// failed run's stderr stays one line).
func (s *fileSession) showNote(verb string, quiet bool) {
	if !s.noteShown {
		showBackendNote(verb, s.note, quiet)
	}
	s.noteShown = true
}

func openFileSession(bf *backendFlags, opts ...codec.Option) (*fileSession, error) {
	b, note, err := codec.OpenBackend(bf.name, bf.device)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %s", bf.name, errMessage(err))
	}
	return &fileSession{b: b, note: note, opts: opts}, nil
}

// codec is a Codec on the session's backend with its options, reporting progress to p when p is not nil. The
// caller closes it; the backend stays open.
func (s *fileSession) codec(p *progress) (*codec.Codec, error) {
	var use codec.Backend = s.b
	if p != nil {
		pb := &progressBackend{Backend: s.b, p: p}
		use = pb
		if pe, ok := s.b.(codec.PlannedEncoder); ok {
			use = &plannedProgressBackend{progressBackend: pb, pe: pe}
		}
	}
	return codec.New(append(slices.Clone(s.opts), codec.WithBackend(use))...)
}

func (s *fileSession) close() { s.b.Close() }
