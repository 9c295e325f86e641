//go:build unix && !(linux && (amd64 || arm64))

package cudabridge

import "errors"

func memfdCreate(name string) (int, error) { return -1, errors.New("no memfd here") }
