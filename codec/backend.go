package codec

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/vkzip/vkzip/codec/layout"
)

// EncodeJob asks a backend to encode one tensor body. Src holds N little-endian values; Dst must have capacity for
// the format's largest body (layout.SZ4.MaxBodySize); the backend sets Out to the encoded body (a prefix of Dst).
type EncodeJob struct {
	Format    uint8
	DType     layout.DType // of the values; 0 means BF16 (formats that code one dtype ignore it)
	Src       []byte
	N         uint64
	Shift     uint
	Codebook  *Codebook
	Checksums bool
	Dst       []byte
	Out       []byte
}

// DecodeJob asks a backend to decode one tensor body into Dst (exactly the decoded size). Name is used in errors.
type DecodeJob struct {
	Name      string
	Format    uint8
	DType     layout.DType // of the values; 0 means BF16
	Body      []byte
	N         uint64
	Shift     uint
	Codebook  *Codebook
	Checksums bool
	Dst       []byte
	Err       error // set by the backend: why this body is invalid (class per docs/FORMAT.md §6), or nil
}

// Backend runs the tensor-body codecs. Implementations must be safe for concurrent use and must produce exactly the
// bytes of the CPU reference. Decode reports invalid bodies in each job's Err, with the error class the reference
// gives (docs/FORMAT.md §6); its own error is for failures of the call itself (cancellation, device loss).
type Backend interface {
	Name() string   // "cpu", "vulkan"
	Device() string // human-readable device description
	Encode(ctx context.Context, jobs []EncodeJob) error
	Decode(ctx context.Context, jobs []DecodeJob) error
	Close() error
}

// Warmer is implemented by backends whose first calls pay for resources they then keep (the Vulkan backend's
// per-caller staging and device memory: tens of ms per concurrent caller on a discrete GPU). Warm prepares for
// callers concurrent calls on tensors of up to values BF16 values, so a pipeline can pay that at start-up rather
// than in its first chunks.
type Warmer interface {
	Warm(ctx context.Context, callers int, values uint64) error
}

// Warm calls b.Warm when b is a Warmer; otherwise it does nothing.
func Warm(ctx context.Context, b Backend, callers int, values uint64) error {
	if w, ok := b.(Warmer); ok && callers > 0 && values > 0 {
		return w.Warm(ctx, callers, values)
	}
	return nil
}

// BackendFactory opens a backend; device is a device selector ("" = default).
type BackendFactory struct {
	Name string
	// Open opens the backend. Auto is true when the user did not ask for this backend by name: then a backend may
	// refuse devices it would be slower on (a CPU Vulkan implementation) with ErrNoDevice.
	Open func(device string, auto bool) (Backend, error)
	// Priority orders auto selection: higher first.
	Priority int
}

var (
	regMu    sync.Mutex
	registry = map[string]BackendFactory{}
)

// RegisterBackend makes a backend available to OpenBackend; backends register themselves in init functions.
func RegisterBackend(f BackendFactory) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[f.Name] = f
}

// Backends lists the registered backend names, by auto priority.
func Backends() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var fs []BackendFactory
	for _, f := range registry {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Priority > fs[j].Priority })
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// OpenBackend opens backend name ("auto" tries them by priority, falling back to the CPU). The note says what auto
// chose and why, for one line on stderr.
func OpenBackend(name, device string) (b Backend, note string, err error) {
	if name == "" || name == "auto" {
		var reasons []string
		for _, n := range Backends() {
			if n == "cpu" {
				continue
			}
			regMu.Lock()
			f := registry[n]
			regMu.Unlock()
			b, err := f.Open(device, true)
			if err == nil {
				return b, fmt.Sprintf("backend auto: using %s on %s", b.Name(), b.Device()), nil
			}
			reasons = append(reasons, fmt.Sprintf("%s: %v", n, err))
		}
		b := NewCPUBackend(0)
		note = "backend auto: using the Go CPU backend"
		if len(reasons) > 0 {
			note += fmt.Sprintf(" (%s)", joinReasons(reasons))
		}
		return b, note, nil
	}
	regMu.Lock()
	f, ok := registry[name]
	regMu.Unlock()
	if !ok {
		if pkg, known := backendPackages[name]; known {
			return nil, "", errorf(ErrUnsupported, "backend %q is not linked into this program: add import _ %q (have %v)",
				name, pkg, Backends())
		}
		return nil, "", errorf(ErrUnsupported, "backend %q is not available in this build (have %v)", name, Backends())
	}
	b, err = f.Open(device, false)
	return b, "", err
}

// backendPackages names the package whose import registers each backend this module ships, so that a program
// asking for one it did not link is told which import to add.
var backendPackages = map[string]string{"vulkan": "github.com/vkzip/vkzip/codec/vkcodec"}

func joinReasons(r []string) string {
	s := ""
	for i, x := range r {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}

// jobDType is a job's dtype, BF16 for the zero value.
func jobDType(d layout.DType) layout.DType {
	if d == layout.DTypeOpaque {
		return layout.DTypeBF16
	}
	return d
}
