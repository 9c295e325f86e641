//go:build !(cgo && linux)

package nccl

// Stub build (no cgo, or not Linux): the API is identical, Load fails with
// ErrNoNCCL, and no NCCL call is ever made.

import "unsafe"

func openLibrary(path string) (unsafe.Pointer, string) {
	return nil, "built without cgo (or not on Linux): NCCL cannot be loaded"
}

func (l *Lib) llVersion() (int, Result)                   { return 0, resultNoNCCL }
func (l *Lib) llErrorString(r Result) string              { return "" }
func (l *Lib) llLastError(comm uintptr) string            { return "" }
func (l *Lib) llUniqueID() (UniqueID, Result)             { return UniqueID{}, resultNoNCCL }
func (l *Lib) llInitAll(devs []int) ([]uintptr, Result)   { return nil, resultNoNCCL }
func (l *Lib) llDestroy(comm uintptr) Result              { return resultNoNCCL }
func (l *Lib) llAsyncError(comm uintptr) (Result, Result) { return Success, resultNoNCCL }
func (l *Lib) llCuDevice(comm uintptr) (int, Result)      { return 0, resultNoNCCL }
func (l *Lib) llUserRank(comm uintptr) (int, Result)      { return 0, resultNoNCCL }
func (l *Lib) llGroup(ops []Op) (int, Result)             { return -1, resultNoNCCL }

func cLayout() [12]int { return [12]int{} }

// builtWithNCCL reports whether this build can load NCCL at all.
const builtWithNCCL = false
