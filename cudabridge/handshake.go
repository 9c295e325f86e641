package cudabridge

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// The cross-process protocol (docs/CUDA.md, "Cross-process handshake"):
// frames over a Unix stream socket, each
//
//	offset size
//	0      4    magic "VKZB"
//	4      2    protocol version (little-endian), ProtocolVersion
//	6      2    kind: 1 handshake, 2 control, 3 data
//	8      4    payload length in bytes (little-endian)
//	12     4    CRC-32 (IEEE) of the payload (little-endian)
//	16     n    payload: JSON (handshake, control) or raw bytes (data)
//
// File descriptors travel as one SCM_RIGHTS message attached to the
// frame's bytes; a handshake refers to them by index.

const (
	// Magic starts every frame.
	Magic = "VKZB"
	// ProtocolVersion is the only version this package speaks; a frame of
	// another version is rejected with ErrProtocol.
	ProtocolVersion = 1
	// FrameHeaderSize is the size of a frame header.
	FrameHeaderSize = 16
	// MaxFDs is the most file descriptors one frame may carry.
	MaxFDs = 16
	// MaxJSONPayload bounds handshake and control payloads.
	MaxJSONPayload = 1 << 20
)

// FrameKind says what a frame's payload is.
type FrameKind uint16

const (
	KindHandshake FrameKind = 1 // JSON Handshake, with the fds it names
	KindControl   FrameKind = 2 // JSON object with a string "op"
	KindData      FrameKind = 3 // raw bytes
)

func (k FrameKind) String() string {
	switch k {
	case KindHandshake:
		return "handshake"
	case KindControl:
		return "control"
	case KindData:
		return "data"
	}
	return fmt.Sprintf("kind %d", uint16(k))
}

// FrameHeader is a decoded frame header.
type FrameHeader struct {
	Version uint16
	Kind    FrameKind
	Length  uint32
	CRC     uint32
}

// AppendFrame appends a frame holding payload to dst.
func AppendFrame(dst []byte, kind FrameKind, payload []byte) []byte {
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint16(dst, ProtocolVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(kind))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(payload))
	return append(dst, payload...)
}

// ParseFrameHeader decodes and checks a header: magic, version, kind, and
// a length within the kind's limit (maxData for data frames).
func ParseFrameHeader(h []byte, maxData uint32) (FrameHeader, error) {
	if len(h) < FrameHeaderSize {
		return FrameHeader{}, protocolf("frame header of %d bytes", len(h))
	}
	if string(h[:4]) != Magic {
		return FrameHeader{}, protocolf("bad magic %q", h[:4])
	}
	fh := FrameHeader{
		Version: binary.LittleEndian.Uint16(h[4:]),
		Kind:    FrameKind(binary.LittleEndian.Uint16(h[6:])),
		Length:  binary.LittleEndian.Uint32(h[8:]),
		CRC:     binary.LittleEndian.Uint32(h[12:]),
	}
	if fh.Version != ProtocolVersion {
		return fh, protocolf("protocol version %d (this side speaks %d)", fh.Version, ProtocolVersion)
	}
	switch fh.Kind {
	case KindHandshake, KindControl:
		if fh.Length > MaxJSONPayload {
			return fh, protocolf("%s payload of %d bytes exceeds %d", fh.Kind, fh.Length, MaxJSONPayload)
		}
	case KindData:
		if fh.Length > maxData {
			return fh, protocolf("data payload of %d bytes exceeds %d", fh.Length, maxData)
		}
	default:
		return fh, protocolf("unknown frame kind %d", uint16(fh.Kind))
	}
	return fh, nil
}

// ParseFrame decodes one whole frame (header and payload, nothing after).
func ParseFrame(b []byte, maxData uint32) (FrameKind, []byte, error) {
	fh, err := ParseFrameHeader(b, maxData)
	if err != nil {
		return 0, nil, err
	}
	if uint64(len(b)-FrameHeaderSize) != uint64(fh.Length) {
		return 0, nil, protocolf("frame of %d bytes, header says %d payload bytes", len(b), fh.Length)
	}
	payload := b[FrameHeaderSize:]
	if crc32.ChecksumIEEE(payload) != fh.CRC {
		return 0, nil, protocolf("%s payload CRC mismatch", fh.Kind)
	}
	return fh.Kind, payload, nil
}

// HandleType is how a buffer's fd is to be imported.
type HandleType string

const (
	// HandleVulkanFD: Vulkan memory exported with VK_KHR_external_memory_fd
	// (opaque fd). CUDA: cuImportExternalMemory(CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
	// size AllocSize, CUDA_EXTERNAL_MEMORY_DEDICATED if Dedicated), then
	// cuExternalMemoryGetMappedBuffer at Offset.
	HandleVulkanFD HandleType = "vulkan_opaque_fd"
	// HandleCUDAVMMFD: a CUDA VMM allocation exported with
	// cuMemExportToShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
	// CUDA: cuMemImportFromShareableHandle + cuMemMap; Vulkan:
	// vkAllocateMemory with VkImportMemoryFdInfoKHR (opaque fd).
	HandleCUDAVMMFD HandleType = "cuda_vmm_fd"
)

// SemaphoreType is the kind of an exported semaphore.
type SemaphoreType string

const (
	// SemaphoreTimeline: a Vulkan timeline semaphore (opaque fd); CUDA
	// imports it as CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD.
	SemaphoreTimeline SemaphoreType = "timeline"
	// SemaphoreBinary: a binary semaphore (opaque fd); CUDA imports it as
	// CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD.
	SemaphoreBinary SemaphoreType = "binary"
)

// DTypeSize is the element size of each dtype name the handshake accepts.
var DTypeSize = map[string]uint64{"bf16": 2, "f16": 2, "f32": 4, "u8": 1, "i32": 4}

// BufferDesc describes one shared buffer.
type BufferDesc struct {
	Name      string     `json:"name"`
	FD        int        `json:"fd"` // index into the frame's SCM_RIGHTS fds
	Handle    HandleType `json:"handle"`
	Dedicated bool       `json:"dedicated"`  // a dedicated allocation (import with CUDA_EXTERNAL_MEMORY_DEDICATED)
	AllocSize uint64     `json:"alloc_size"` // size of the whole exported allocation
	Offset    uint64     `json:"offset"`     // where the tensor starts in it (multiple of 16)
	Size      uint64     `json:"size"`       // tensor bytes (product(shape) × element size)
	DType     string     `json:"dtype"`      // bf16, f16, f32, u8, i32
	Shape     []uint64   `json:"shape"`
}

// SemaphoreDesc describes one shared semaphore.
type SemaphoreDesc struct {
	Name    string        `json:"name"`
	FD      int           `json:"fd"`
	Type    SemaphoreType `json:"type"`
	Initial uint64        `json:"initial"` // timeline value at export (0 for binary)
}

// Handshake is the first frame of a session: what memory and semaphores
// the fds attached to it are, and which device they belong to.
type Handshake struct {
	DeviceUUID string          `json:"device_uuid"` // 32 hex digits: Vulkan deviceUUID = CUDA cuDeviceGetUuid
	DriverUUID string          `json:"driver_uuid"` // 32 hex digits: Vulkan driverUUID (informative)
	Device     string          `json:"device"`      // device name (informative)
	Buffers    []BufferDesc    `json:"buffers"`
	Semaphores []SemaphoreDesc `json:"semaphores"`
}

// UUID decodes DeviceUUID.
func (h *Handshake) UUID() ([16]byte, error) { return ParseUUID(h.DeviceUUID) }

// Buffer returns the buffer with this name.
func (h *Handshake) Buffer(name string) (BufferDesc, bool) {
	for _, b := range h.Buffers {
		if b.Name == name {
			return b, true
		}
	}
	return BufferDesc{}, false
}

// Semaphore returns the semaphore with this name.
func (h *Handshake) Semaphore(name string) (SemaphoreDesc, bool) {
	for _, s := range h.Semaphores {
		if s.Name == name {
			return s, true
		}
	}
	return SemaphoreDesc{}, false
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func validHex16(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// Validate checks the handshake against the number of fds that came with it.
func (h *Handshake) Validate(nfds int) error {
	if !validHex16(h.DeviceUUID) {
		return protocolf("device_uuid %q: want 32 hex digits", h.DeviceUUID)
	}
	if h.DriverUUID != "" && !validHex16(h.DriverUUID) {
		return protocolf("driver_uuid %q: want 32 hex digits", h.DriverUUID)
	}
	if len(h.Device) > 256 {
		return protocolf("device name of %d bytes", len(h.Device))
	}
	if len(h.Buffers)+len(h.Semaphores) > MaxFDs {
		return protocolf("%d buffers and semaphores (at most %d)", len(h.Buffers)+len(h.Semaphores), MaxFDs)
	}
	if len(h.Buffers)+len(h.Semaphores) != nfds {
		return protocolf("%d buffers and semaphores but %d fds", len(h.Buffers)+len(h.Semaphores), nfds)
	}
	used := make([]bool, nfds)
	names := map[string]bool{}
	claim := func(what, name string, fd int) error {
		if !validName(name) {
			return protocolf("%s name %q (1-64 of a-z 0-9 _ - .)", what, name)
		}
		if names[name] {
			return protocolf("duplicate name %q", name)
		}
		names[name] = true
		if fd < 0 || fd >= nfds {
			return protocolf("%s %q: fd index %d outside [0, %d)", what, name, fd, nfds)
		}
		if used[fd] {
			return protocolf("%s %q: fd index %d used twice", what, name, fd)
		}
		used[fd] = true
		return nil
	}
	for _, b := range h.Buffers {
		if err := claim("buffer", b.Name, b.FD); err != nil {
			return err
		}
		switch b.Handle {
		case HandleVulkanFD:
		case HandleCUDAVMMFD:
			if b.Dedicated {
				return protocolf("buffer %q: a CUDA VMM allocation is not a dedicated allocation", b.Name)
			}
		default:
			return protocolf("buffer %q: unknown handle type %q", b.Name, b.Handle)
		}
		es, ok := DTypeSize[b.DType]
		if !ok {
			return protocolf("buffer %q: unknown dtype %q", b.Name, b.DType)
		}
		if len(b.Shape) == 0 || len(b.Shape) > 8 {
			return protocolf("buffer %q: shape of %d dimensions (1-8)", b.Name, len(b.Shape))
		}
		n := es
		for _, d := range b.Shape {
			hi, lo := bits.Mul64(n, d)
			if d == 0 || hi != 0 {
				return protocolf("buffer %q: shape %v", b.Name, b.Shape)
			}
			n = lo
		}
		if n != b.Size {
			return protocolf("buffer %q: shape %v of %s is %d bytes, size says %d", b.Name, b.Shape, b.DType, n, b.Size)
		}
		if b.Offset%16 != 0 {
			return protocolf("buffer %q: offset %d is not a multiple of 16", b.Name, b.Offset)
		}
		if b.AllocSize == 0 || b.Offset > b.AllocSize || b.Size > b.AllocSize-b.Offset {
			return protocolf("buffer %q: [%d, +%d) outside an allocation of %d bytes", b.Name, b.Offset, b.Size, b.AllocSize)
		}
	}
	for _, s := range h.Semaphores {
		if err := claim("semaphore", s.Name, s.FD); err != nil {
			return err
		}
		switch s.Type {
		case SemaphoreTimeline:
		case SemaphoreBinary:
			if s.Initial != 0 {
				return protocolf("semaphore %q: a binary semaphore has no initial value", s.Name)
			}
		default:
			return protocolf("semaphore %q: unknown type %q", s.Name, s.Type)
		}
	}
	return nil
}

// decodeStrict decodes one JSON value into v: unknown fields, trailing
// data and a JSON null are errors.
func decodeStrict(payload []byte, v any) error {
	if len(bytes.TrimSpace(payload)) == 0 || bytes.Equal(bytes.TrimSpace(payload), []byte("null")) {
		return protocolf("empty JSON payload")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return protocolf("%v", err)
	}
	if len(bytes.TrimSpace(payload[dec.InputOffset():])) != 0 {
		return protocolf("data after the JSON value")
	}
	return nil
}

// MarshalHandshake validates h (for nfds fds) and encodes it as a frame.
func MarshalHandshake(h *Handshake, nfds int) ([]byte, error) {
	if err := h.Validate(nfds); err != nil {
		return nil, err
	}
	c := *h // lists go out as [], never null
	if c.Buffers == nil {
		c.Buffers = []BufferDesc{}
	}
	if c.Semaphores == nil {
		c.Semaphores = []SemaphoreDesc{}
	}
	payload, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return AppendFrame(nil, KindHandshake, payload), nil
}

// UnmarshalHandshake decodes a whole handshake frame and validates it for
// the nfds fds that came with it.
func UnmarshalHandshake(frame []byte, nfds int) (*Handshake, error) {
	kind, payload, err := ParseFrame(frame, 0)
	if err != nil {
		return nil, err
	}
	if kind != KindHandshake {
		return nil, protocolf("expected a handshake frame, got %s", kind)
	}
	return parseHandshakePayload(payload, nfds)
}

func parseHandshakePayload(payload []byte, nfds int) (*Handshake, error) {
	var h Handshake
	if err := decodeStrict(payload, &h); err != nil {
		return nil, err
	}
	if err := h.Validate(nfds); err != nil {
		return nil, err
	}
	return &h, nil
}

// Control is a control message: a JSON object with at least an "op".
type Control map[string]any

// Op is the message's operation.
func (c Control) Op() string { s, _ := c["op"].(string); return s }

// Str returns a string field ("" if absent or not a string).
func (c Control) Str(k string) string { s, _ := c[k].(string); return s }

// Uint returns a non-negative integer field (ok false if absent or not one).
func (c Control) Uint(k string) (uint64, bool) {
	switch v := c[k].(type) {
	case json.Number:
		n, err := v.Int64()
		if err != nil || n < 0 {
			u, err := parseUint(string(v))
			return u, err == nil
		}
		return uint64(n), true
	case float64:
		if v < 0 || v != float64(uint64(v)) {
			return 0, false
		}
		return uint64(v), true
	case uint64:
		return v, true
	case int:
		return uint64(v), v >= 0
	}
	return 0, false
}

// Bool returns a boolean field.
func (c Control) Bool(k string) bool { b, _ := c[k].(bool); return b }

func parseUint(s string) (uint64, error) {
	var u uint64
	if len(s) == 0 || len(s) > 20 {
		return 0, fmt.Errorf("bad integer %q", s)
	}
	for _, ch := range []byte(s) {
		if ch < '0' || ch > '9' {
			return 0, fmt.Errorf("bad integer %q", s)
		}
		hi, lo := bits.Mul64(u, 10)
		lo2, carry := bits.Add64(lo, uint64(ch-'0'), 0)
		if hi != 0 || carry != 0 {
			return 0, fmt.Errorf("integer %q overflows", s)
		}
		u = lo2
	}
	return u, nil
}

// ParseControl decodes a control payload.
func ParseControl(payload []byte) (Control, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var c Control
	if err := dec.Decode(&c); err != nil {
		return nil, protocolf("control message: %v", err)
	}
	if len(bytes.TrimSpace(payload[dec.InputOffset():])) != 0 {
		return nil, protocolf("control message: data after the JSON object")
	}
	if c == nil || c.Op() == "" {
		return nil, protocolf("control message without an op")
	}
	return c, nil
}
