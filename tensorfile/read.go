package tensorfile

import (
	"io"
	"os"
)

// readAll reads f to its end; unlike io.ReadAll it sizes the buffer from a regular file's length up front.
func readAll(f *os.File) ([]byte, error) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size := fi.Size()
		if int64(int(size)) != size {
			return nil, errorf(ErrTooLarge, Auto, "file size %d does not fit in memory on this platform", size)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	return io.ReadAll(f)
}
