package main

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens an unnamed regular file in dir (O_TMPFILE): it has no name until linkUnnamed gives it one,
// and the kernel frees it when the process ends without doing so, however it ends. It fails where the file
// system has no unnamed files or /proc is not mounted (linkUnnamed needs /proc/self/fd).
func openUnnamed(dir string) (*os.File, error) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)")), nil
}

// linkUnnamed names the unnamed file f path. Without replace the link fails when path exists (fs.ErrExist);
// with replace the file is linked under a temporary name (tempPattern) and renamed over path, so that the old
// file is replaced in one step.
func linkUnnamed(f *os.File, path string, replace bool) error {
	src := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if !replace {
		return linkat(src, path)
	}
	for range 100 {
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".vkzip-"+strconv.Itoa(os.Getpid())+"-"+
			strconv.FormatUint(uint64(rand.Uint32()), 10)+".tmp")
		err := linkat(src, tmp)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	return os.ErrExist
}

func linkat(src, dst string) error {
	if err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &os.LinkError{Op: "link", Old: src, New: dst, Err: err}
	}
	return nil
}

// fdPath is a path that names the open file f, for calls that take a path.
func fdPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
