//go:build cgo && linux

package nccl

/*
#cgo LDFLAGS: -ldl
#include "cnl.h"
*/
import "C"

import (
	"unsafe"
)

// The low-level layer: one method per NCCL call, results as Result. Handles
// cross the boundary as integers (C memory, never Go pointers).

func (l *Lib) c() *C.cnl_lib { return (*C.cnl_lib)(l.lib) }

func openLibrary(path string) (unsafe.Pointer, string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	h := C.cnl_open(cpath, &buf[0], C.size_t(len(buf)))
	if h == nil {
		return nil, C.GoString(&buf[0])
	}
	return unsafe.Pointer(h), ""
}

func (l *Lib) llVersion() (int, Result) {
	var v C.int
	r := Result(C.cnl_version(l.c(), &v))
	return int(v), r
}

func (l *Lib) llErrorString(r Result) string { return C.GoString(C.cnl_error_string(l.c(), C.int(r))) }

func (l *Lib) llLastError(comm uintptr) string {
	return C.GoString(C.cnl_last_error(l.c(), C.uintptr_t(comm)))
}

func (l *Lib) llUniqueID() (UniqueID, Result) {
	var b [UniqueIDBytes]C.uchar
	r := Result(C.cnl_unique_id(l.c(), &b[0]))
	var id UniqueID
	for i := range b {
		id[i] = byte(b[i])
	}
	return id, r
}

func (l *Lib) llInitAll(devs []int) ([]uintptr, Result) {
	cd := make([]C.int, len(devs))
	for i, d := range devs {
		cd[i] = C.int(d)
	}
	out := make([]C.uintptr_t, len(devs))
	r := Result(C.cnl_init_all(l.c(), C.int(len(devs)), &cd[0], &out[0]))
	hs := make([]uintptr, len(devs))
	for i := range out {
		hs[i] = uintptr(out[i])
	}
	return hs, r
}

func (l *Lib) llDestroy(comm uintptr) Result { return Result(C.cnl_destroy(l.c(), C.uintptr_t(comm))) }

func (l *Lib) llAsyncError(comm uintptr) (Result, Result) {
	var a C.int
	r := Result(C.cnl_async_error(l.c(), C.uintptr_t(comm), &a))
	return Result(a), r
}

func (l *Lib) llCuDevice(comm uintptr) (int, Result) {
	var d C.int
	r := Result(C.cnl_cu_device(l.c(), C.uintptr_t(comm), &d))
	return int(d), r
}

func (l *Lib) llUserRank(comm uintptr) (int, Result) {
	var k C.int
	r := Result(C.cnl_user_rank(l.c(), C.uintptr_t(comm), &k))
	return int(k), r
}

// llGroup builds the C op array (C types in Go memory: no Go pointers in it)
// and runs the group in one call.
func (l *Lib) llGroup(ops []Op) (int, Result) {
	cops := make([]C.cnl_op, len(ops))
	for i, o := range ops {
		c := &cops[i]
		if o.Recv {
			c.recv = 1
		}
		c.peer = C.int32_t(o.Peer)
		c.dtype = C.int32_t(o.Type)
		c.buf = C.uint64_t(o.Buf)
		c.count = C.uint64_t(o.Count)
		c.comm = C.uintptr_t(o.Comm.h)
		c.stream = C.uintptr_t(o.Stream.Handle())
	}
	var failed C.int
	r := Result(C.cnl_group(l.c(), &cops[0], C.int(len(cops)), &failed))
	return int(failed), r
}

// cLayout is what the C side says about its types (tests compare it with
// nccl.h's values).
func cLayout() [12]int {
	var out [12]C.int
	C.cnl_layout(&out[0])
	var r [12]int
	for i := range out {
		r[i] = int(out[i])
	}
	return r
}

// builtWithNCCL reports whether this build can load NCCL at all.
const builtWithNCCL = true
