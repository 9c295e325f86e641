package cudabridge

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// EnvLib overrides the driver library path (default DefaultLibrary).
const EnvLib = "VKZIP_CUDA_LIB"

// DefaultLibrary is the CUDA driver's soname; the unversioned libcuda.so
// only exists with the toolkit's stubs or the -dev package.
const DefaultLibrary = "libcuda.so.1"

// Device attributes queried (CUdevice_attribute).
const (
	attrVMM               = 102 // CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
	attrPOSIXFD           = 103 // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
	attrTimelineSemaphore = 114 // CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED
)

// Driver is a loaded and initialised CUDA driver library. Drivers are
// cached per path and never unloaded; all methods are safe for concurrent
// use.
type Driver struct {
	lib     unsafe.Pointer // *C.cub_lib (C memory)
	path    string
	version int
}

var drivers struct {
	mu    sync.Mutex
	byLib map[string]*Driver
}

// LibraryPath is the library Load opens: $VKZIP_CUDA_LIB, else libcuda.so.1.
func LibraryPath() string {
	if p := strings.TrimSpace(os.Getenv(EnvLib)); p != "" {
		return p
	}
	return DefaultLibrary
}

// Load opens LibraryPath() and calls cuInit. Without a driver (library
// missing or bogus, cuInit failing, or a build without cgo) the error
// wraps ErrNoCUDA.
func Load() (*Driver, error) { return LoadLibrary(LibraryPath()) }

// LoadLibrary is Load with an explicit library path.
func LoadLibrary(path string) (*Driver, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty library path", ErrNoCUDA)
	}
	drivers.mu.Lock()
	defer drivers.mu.Unlock()
	if d := drivers.byLib[path]; d != nil {
		return d, nil
	}
	lib, msg := openLibrary(path)
	if lib == nil {
		return nil, fmt.Errorf("%w: loading %s: %s", ErrNoCUDA, path, msg)
	}
	d := &Driver{lib: lib, path: path}
	if r := d.llInit(); r != Success {
		return nil, fmt.Errorf("%w: %w", ErrNoCUDA, d.err("cuInit", r, path))
	}
	if v, r := d.llVersion(); r == Success {
		d.version = v
	}
	if drivers.byLib == nil {
		drivers.byLib = map[string]*Driver{}
	}
	drivers.byLib[path] = d
	return d, nil
}

// Path is the library this driver was loaded from.
func (d *Driver) Path() string { return d.path }

// Version is cuDriverGetVersion (e.g. 12040 for CUDA 12.4), 0 if unknown.
func (d *Driver) Version() int { return d.version }

// VersionString formats Version as "12.4".
func (d *Driver) VersionString() string {
	if d.version == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10)
}

func (d *Driver) err(fn string, r Result, detail string) error {
	name, desc := d.llErrorText(r)
	if name == "" {
		name = r.String()
	}
	return &Error{Func: fn, Code: r, Name: name, Desc: desc, Detail: detail}
}

// check turns a Result into nil or an *Error naming fn.
func (d *Driver) check(fn string, r Result, detail string) error {
	if r == Success {
		return nil
	}
	return d.err(fn, r, detail)
}

// DeviceInfo describes one CUDA device.
type DeviceInfo struct {
	Ordinal     int // cuDeviceGet ordinal (as CUDA_VISIBLE_DEVICES numbers them)
	Name        string
	UUID        [16]byte // cuDeviceGetUuid: equals Vulkan's deviceUUID on NVIDIA
	TotalMemory uint64
	// VMM: cuMemCreate and friends are supported.
	VMM bool
	// POSIXFD: VMM allocations can be exported as POSIX file descriptors.
	POSIXFD bool
	// TimelineSemaphores: Vulkan timeline semaphores can be imported.
	TimelineSemaphores bool
}

// UUIDString formats the UUID the way nvidia-smi prints it.
func (i DeviceInfo) UUIDString() string { return FormatUUID(i.UUID) }

func (i DeviceInfo) String() string {
	return fmt.Sprintf("%d: %s (%s, %.1f GiB)", i.Ordinal, i.Name, i.UUIDString(), float64(i.TotalMemory)/(1<<30))
}

// FormatUUID formats a device UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
func FormatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ParseUUID accepts FormatUUID's form, with or without "GPU-" and dashes.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	t := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "GPU-"), "-", "")
	if len(t) != 32 {
		return u, invalidf("UUID %q: want 32 hex digits", s)
	}
	if _, err := hex.Decode(u[:], []byte(t)); err != nil {
		return u, invalidf("UUID %q: %v", s, err)
	}
	return u, nil
}

// Devices lists the CUDA devices.
func (d *Driver) Devices() ([]DeviceInfo, error) {
	n, r := d.llDeviceCount()
	if r != Success {
		return nil, d.err("cuDeviceGetCount", r, "")
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		dev, r := d.llDeviceGet(i)
		if r != Success {
			return nil, d.err("cuDeviceGet", r, fmt.Sprintf("ordinal %d", i))
		}
		info := DeviceInfo{Ordinal: i}
		if info.UUID, r = d.llDeviceUUID(dev); r != Success {
			return nil, d.err("cuDeviceGetUuid", r, fmt.Sprintf("ordinal %d", i))
		}
		info.Name, _ = d.llDeviceName(dev)
		info.TotalMemory, _ = d.llDeviceTotalMem(dev)
		attr := func(a int) bool { v, r := d.llDeviceAttribute(dev, a); return r == Success && v != 0 }
		info.VMM, info.POSIXFD, info.TimelineSemaphores = attr(attrVMM), attr(attrPOSIXFD), attr(attrTimelineSemaphore)
		out = append(out, info)
	}
	return out, nil
}

// MatchUUID returns the device with the given UUID; the error wraps
// ErrNoDevice and lists the devices there are.
func MatchUUID(devs []DeviceInfo, uuid [16]byte) (DeviceInfo, error) {
	for _, d := range devs {
		if d.UUID == uuid {
			return d, nil
		}
	}
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = d.String()
	}
	return DeviceInfo{}, fmt.Errorf("%w: no CUDA device has UUID %s; CUDA devices: [%s]", ErrNoDevice,
		FormatUUID(uuid), strings.Join(parts, "; "))
}

// Context is a retained primary context of one device: the context the
// CUDA runtime (PyTorch, CuPy) uses too, so pointers are valid across both.
// Every call pushes it current on its thread for its duration.
type Context struct {
	d      *Driver
	dev    int // CUdevice
	info   DeviceInfo
	ctx    uintptr
	closed atomic.Bool

	spinMu  sync.Mutex
	spinMod uintptr
	spinFn  uintptr
}

// Open retains the primary context of the device with this ordinal.
func (d *Driver) Open(ordinal int) (*Context, error) {
	devs, err := d.Devices()
	if err != nil {
		return nil, err
	}
	for _, info := range devs {
		if info.Ordinal == ordinal {
			return d.open(info)
		}
	}
	return nil, fmt.Errorf("%w: no CUDA device %d (%d devices)", ErrNoDevice, ordinal, len(devs))
}

// OpenUUID retains the primary context of the device with this UUID.
func (d *Driver) OpenUUID(uuid [16]byte) (*Context, error) {
	devs, err := d.Devices()
	if err != nil {
		return nil, err
	}
	info, err := MatchUUID(devs, uuid)
	if err != nil {
		return nil, err
	}
	return d.open(info)
}

func (d *Driver) open(info DeviceInfo) (*Context, error) {
	dev, r := d.llDeviceGet(info.Ordinal)
	if r != Success {
		return nil, d.err("cuDeviceGet", r, fmt.Sprintf("ordinal %d", info.Ordinal))
	}
	ctx, r := d.llPrimaryRetain(dev)
	if r != Success {
		return nil, d.err("cuDevicePrimaryCtxRetain", r, info.String())
	}
	return &Context{d: d, dev: dev, info: info, ctx: ctx}, nil
}

// Driver returns the driver of this context.
func (c *Context) Driver() *Driver { return c.d }

// Info describes the device.
func (c *Context) Info() DeviceInfo { return c.info }

func (c *Context) ok() error {
	if c == nil || c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Synchronize waits for all work of the context (cuCtxSynchronize).
func (c *Context) Synchronize() error {
	if err := c.ok(); err != nil {
		return err
	}
	return c.d.check("cuCtxSynchronize", c.d.llCtxSynchronize(c.ctx), "")
}

// Close releases the primary context (objects made from it must be closed
// first). Idempotent.
func (c *Context) Close() error {
	if c == nil || !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.spinMu.Lock()
	if c.spinMod != 0 {
		c.d.llModuleUnload(c.ctx, c.spinMod)
		c.spinMod, c.spinFn = 0, 0
	}
	c.spinMu.Unlock()
	return c.d.check("cuDevicePrimaryCtxRelease", c.d.llPrimaryRelease(c.dev), "")
}

// Stream is a non-blocking CUDA stream.
type Stream struct {
	c        *Context
	h        uintptr
	borrowed bool // made elsewhere: Close does not destroy it
	closed   atomic.Bool
}

// NewStream creates a stream (CU_STREAM_NON_BLOCKING).
func (c *Context) NewStream() (*Stream, error) {
	if err := c.ok(); err != nil {
		return nil, err
	}
	h, r := c.d.llStreamCreate(c.ctx)
	if r != Success {
		return nil, c.d.err("cuStreamCreate", r, "")
	}
	return &Stream{c: c, h: h}, nil
}

// WrapStream wraps a stream made elsewhere (e.g. torch.cuda.Stream's
// cuda_stream) in this context; Close does not destroy it.
func (c *Context) WrapStream(handle uintptr) *Stream {
	return &Stream{c: c, h: handle, borrowed: true}
}

// Handle is the CUstream.
func (s *Stream) Handle() uintptr { return s.h }

func (s *Stream) ok() error {
	if s == nil || s.closed.Load() {
		return ErrClosed
	}
	return s.c.ok()
}

// Synchronize waits on the host until the stream's work completed.
func (s *Stream) Synchronize() error {
	if err := s.ok(); err != nil {
		return err
	}
	return s.c.d.check("cuStreamSynchronize", s.c.d.llStreamSynchronize(s.c.ctx, s.h), "")
}

// Done reports whether all work of the stream completed (non-blocking).
func (s *Stream) Done() (bool, error) {
	if err := s.ok(); err != nil {
		return false, err
	}
	switch r := s.c.d.llStreamQuery(s.c.ctx, s.h); r {
	case Success:
		return true, nil
	case ErrorNotReady:
		return false, nil
	default:
		return false, s.c.d.err("cuStreamQuery", r, "")
	}
}

// Close destroys the stream (pending work still completes).
func (s *Stream) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) || s.borrowed {
		return nil
	}
	return s.c.d.check("cuStreamDestroy", s.c.d.llStreamDestroy(s.c.ctx, s.h), "")
}

// DevicePtr is a CUdeviceptr.
type DevicePtr uint64

// Add offsets the pointer.
func (p DevicePtr) Add(n uint64) DevicePtr { return p + DevicePtr(n) }
