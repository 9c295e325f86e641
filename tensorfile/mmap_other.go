//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tensorfile

import "os"

// mapFile reads the whole file into memory where this package does not map files.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err = readAll(f)
	return data, nil, err
}
