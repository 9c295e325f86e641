package nccl

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vkzip/vkzip/cudabridge"
)

// EnvLib overrides the library path (default DefaultLibrary).
const EnvLib = "VKZIP_NCCL_LIB"

// DefaultLibrary is NCCL's soname.
const DefaultLibrary = "libnccl.so.2"

// minVersion is NCCL 2.7.0, the first with ncclSend and ncclRecv (codes
// below 2.9 are X*1000 + Y*100 + Z).
const minVersion = 2700

// DataType is an ncclDataType_t.
type DataType int32

// ncclDataType_t values (nccl.h). Int8 is also ncclChar.
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
)

// Size is the size of one element in bytes.
func (t DataType) Size() int {
	switch t {
	case Int8, Uint8:
		return 1
	case Float16, BFloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// UniqueIDBytes is the size of an ncclUniqueId.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: what every rank of a multi-process
// communicator (ncclCommInitRank) must be given. vkzip's two ranks live in
// one process (InitAll); the type is here for a two-process transport.
type UniqueID [UniqueIDBytes]byte

// Lib is a loaded NCCL library. Libraries are cached per path and never
// unloaded; all methods are safe for concurrent use.
type Lib struct {
	lib     unsafe.Pointer // *C.cnl_lib (C memory)
	path    string
	version int
}

var libs struct {
	mu    sync.Mutex
	byLib map[string]*Lib
}

// LibraryPath is the library Load opens: $VKZIP_NCCL_LIB, else libnccl.so.2.
func LibraryPath() string {
	if p := strings.TrimSpace(os.Getenv(EnvLib)); p != "" {
		return p
	}
	return DefaultLibrary
}

// Load applies ApplyEnv and opens LibraryPath(). Without NCCL the error
// wraps ErrNoNCCL.
func Load() (*Lib, error) { return LoadLibrary(LibraryPath()) }

// LoadLibrary is Load with an explicit library path.
func LoadLibrary(path string) (*Lib, error) {
	// The safety variables go in first, whatever happens next: NCCL reads
	// them when it initialises, and a child started later inherits them.
	if err := ApplyEnv(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty library path", ErrNoNCCL)
	}
	libs.mu.Lock()
	defer libs.mu.Unlock()
	if l := libs.byLib[path]; l != nil {
		return l, nil
	}
	h, msg := openLibrary(path)
	if h == nil {
		return nil, fmt.Errorf("%w: loading %s: %s (set %s to the library's path)", ErrNoNCCL, path, msg, EnvLib)
	}
	l := &Lib{lib: h, path: path}
	v, r := l.llVersion()
	if r != Success {
		return nil, fmt.Errorf("%w: %w", ErrNoNCCL, l.err("ncclGetVersion", r, 0, path))
	}
	if v < minVersion {
		return nil, fmt.Errorf("%w: %s is NCCL %s; vkzip needs 2.7 or later (ncclSend/ncclRecv)", ErrNoNCCL, path,
			VersionString(v))
	}
	l.version = v
	if libs.byLib == nil {
		libs.byLib = map[string]*Lib{}
	}
	libs.byLib[path] = l
	return l, nil
}

// Path is the library this Lib was loaded from.
func (l *Lib) Path() string { return l.path }

// Version is ncclGetVersion's code (e.g. 22803 for 2.28.3).
func (l *Lib) Version() int { return l.version }

// VersionString formats Version as "2.28.3".
func (l *Lib) VersionString() string { return VersionString(l.version) }

// VersionString formats an NCCL version code: X*10000 + Y*100 + Z since
// 2.9, X*1000 + Y*100 + Z before.
func VersionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

func (l *Lib) err(fn string, r Result, comm uintptr, detail string) error {
	e := &Error{Func: fn, Code: r, Detail: detail}
	if r >= 0 {
		e.Desc = l.llErrorString(r)
		e.Last = l.llLastError(comm)
	}
	return e
}

func (l *Lib) check(fn string, r Result, comm uintptr, detail string) error {
	if r == Success {
		return nil
	}
	return l.err(fn, r, comm, detail)
}

// UniqueID is ncclGetUniqueId: the id a multi-process communicator is made
// from (rank 0 makes it and hands it to the others).
func (l *Lib) UniqueID() (UniqueID, error) {
	id, r := l.llUniqueID()
	return id, l.check("ncclGetUniqueId", r, 0, "")
}

// Comm is one communicator: one rank, on one CUDA device.
type Comm struct {
	l         *Lib
	h         uintptr
	rank, dev int
	destroyed atomic.Bool
}

// InitAll makes one communicator per CUDA device in devices (their CUDA
// ordinals, as cuDeviceGet numbers them), all in this process
// (ncclCommInitAll): rank i is on devices[i].
func (l *Lib) InitAll(devices []int) ([]*Comm, error) {
	if len(devices) == 0 || len(devices) > 64 {
		return nil, invalidf("InitAll of %d devices (1 to 64)", len(devices))
	}
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 || seen[d] {
			return nil, invalidf("device list %v: ordinals must be distinct and not negative", devices)
		}
		seen[d] = true
	}
	hs, r := l.llInitAll(devices)
	if r != Success {
		return nil, l.err("ncclCommInitAll", r, 0, fmt.Sprintf("devices %v", devices))
	}
	comms := make([]*Comm, len(devices))
	for i, h := range hs {
		comms[i] = &Comm{l: l, h: h, rank: i, dev: devices[i]}
	}
	// Where NCCL says which device and rank it took, it must be ours.
	for _, c := range comms {
		if dev, r := l.llCuDevice(c.h); r == Success && dev != c.dev {
			err := fmt.Errorf("nccl: communicator of rank %d is on CUDA device %d, asked for %d", c.rank, dev, c.dev)
			destroyAll(comms)
			return nil, err
		}
		if rank, r := l.llUserRank(c.h); r == Success && rank != c.rank {
			err := fmt.Errorf("nccl: communicator for device %d has rank %d, expected %d", c.dev, rank, c.rank)
			destroyAll(comms)
			return nil, err
		}
	}
	return comms, nil
}

func destroyAll(cs []*Comm) {
	for _, c := range cs {
		c.Destroy()
	}
}

// Rank is the communicator's rank.
func (c *Comm) Rank() int { return c.rank }

// Device is the CUDA ordinal of the communicator's device.
func (c *Comm) Device() int { return c.dev }

func (c *Comm) ok() error {
	if c == nil || c.destroyed.Load() {
		return ErrClosed
	}
	return nil
}

// AsyncError is ncclCommGetAsyncError: nil while the communicator is
// healthy, an *Error naming the asynchronous failure otherwise.
func (c *Comm) AsyncError() error {
	if err := c.ok(); err != nil {
		return err
	}
	a, r := c.l.llAsyncError(c.h)
	if r != Success {
		return c.l.err("ncclCommGetAsyncError", r, c.h, "")
	}
	if a != Success && a != InProgress {
		return c.l.err("asynchronous error", a, c.h, fmt.Sprintf("rank %d, CUDA device %d", c.rank, c.dev))
	}
	return nil
}

// Destroy frees the communicator (ncclCommDestroy). Its operations must have
// completed. Idempotent.
func (c *Comm) Destroy() error {
	if c == nil || !c.destroyed.CompareAndSwap(false, true) {
		return nil
	}
	return c.l.check("ncclCommDestroy", c.l.llDestroy(c.h), 0, fmt.Sprintf("rank %d", c.rank))
}

// Op is one point-to-point operation of a Group.
type Op struct {
	Recv   bool // false: ncclSend from Buf, true: ncclRecv into Buf
	Comm   *Comm
	Buf    cudabridge.DevicePtr
	Count  uint64 // elements of Type
	Type   DataType
	Peer   int // the other end's rank
	Stream *cudabridge.Stream
}

// Send is an ncclSend of count elements at buf to rank peer, on st.
func Send(c *Comm, buf cudabridge.DevicePtr, count uint64, t DataType, peer int, st *cudabridge.Stream) Op {
	return Op{Comm: c, Buf: buf, Count: count, Type: t, Peer: peer, Stream: st}
}

// Recv is an ncclRecv of count elements into buf from rank peer, on st.
func Recv(c *Comm, buf cudabridge.DevicePtr, count uint64, t DataType, peer int, st *cudabridge.Stream) Op {
	return Op{Recv: true, Comm: c, Buf: buf, Count: count, Type: t, Peer: peer, Stream: st}
}

func (o *Op) check(i int) error {
	what := "send"
	if o.Recv {
		what = "recv"
	}
	switch {
	case o.Comm.ok() != nil:
		return fmt.Errorf("op %d (%s): %w", i, what, ErrClosed)
	case o.Stream == nil:
		return invalidf("op %d (%s): no stream", i, what)
	case o.Type.Size() == 0:
		return invalidf("op %d (%s): data type %d", i, what, o.Type)
	case o.Buf == 0 && o.Count > 0:
		return invalidf("op %d (%s): null buffer", i, what)
	case o.Peer < 0 || o.Peer == o.Comm.rank:
		return invalidf("op %d (%s): peer %d from rank %d", i, what, o.Peer, o.Comm.rank)
	}
	return nil
}

// Group runs ops as one NCCL group (ncclGroupStart, the sends and receives
// in order, ncclGroupEnd), all in one call on one OS thread: NCCL keeps its
// group state per thread. In one process the send and the matching receive
// of two communicators must be in the same group. It returns once the
// operations are enqueued on their streams; a send and its receive must
// have the same count and type.
func (l *Lib) Group(ops ...Op) error {
	if len(ops) == 0 {
		return nil
	}
	for i := range ops {
		if err := ops[i].check(i); err != nil {
			return err
		}
	}
	failed, r := l.llGroup(ops)
	if r == Success {
		return nil
	}
	fn, comm, detail := "ncclGroupEnd", ops[0].Comm.h, fmt.Sprintf("group of %d operations", len(ops))
	if failed >= 0 && failed < len(ops) {
		o := ops[failed]
		fn, comm = "ncclSend", o.Comm.h
		if o.Recv {
			fn = "ncclRecv"
		}
		detail = fmt.Sprintf("op %d of %d: %d elements of type %d, rank %d ↔ peer %d", failed, len(ops), o.Count, o.Type,
			o.Comm.rank, o.Peer)
	}
	return l.err(fn, r, comm, detail)
}
