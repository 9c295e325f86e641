package vk

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Environment variables understood by the package.
const (
	EnvVulkanLib = "VKZIP_VULKAN_LIB" // loader path (default libvulkan.so.1)
	EnvValidate  = "VKZIP_VALIDATE"   // "1": enable VK_LAYER_KHRONOS_validation
	EnvDevice    = "VKZIP_DEVICE"     // default device spec for SelectDevice
)

// DeviceType mirrors VkPhysicalDeviceType.
type DeviceType int

const (
	DeviceTypeOther      DeviceType = 0
	DeviceTypeIntegrated DeviceType = 1
	DeviceTypeDiscrete   DeviceType = 2
	DeviceTypeVirtual    DeviceType = 3
	DeviceTypeCPU        DeviceType = 4
)

func (t DeviceType) String() string {
	switch t {
	case DeviceTypeDiscrete:
		return "discrete"
	case DeviceTypeIntegrated:
		return "integrated"
	case DeviceTypeVirtual:
		return "virtual"
	case DeviceTypeCPU:
		return "cpu"
	}
	return "other"
}

// rank orders device types for automatic selection (higher is better).
func (t DeviceType) rank() int {
	switch t {
	case DeviceTypeDiscrete:
		return 4
	case DeviceTypeIntegrated:
		return 3
	case DeviceTypeVirtual:
		return 2
	case DeviceTypeCPU:
		return 1
	}
	return 0
}

// SubgroupOps mirrors VkSubgroupFeatureFlags.
type SubgroupOps uint32

const (
	SubgroupBasic           SubgroupOps = 0x01
	SubgroupVote            SubgroupOps = 0x02
	SubgroupArithmetic      SubgroupOps = 0x04
	SubgroupBallot          SubgroupOps = 0x08
	SubgroupShuffle         SubgroupOps = 0x10
	SubgroupShuffleRelative SubgroupOps = 0x20
	SubgroupClustered       SubgroupOps = 0x40
	SubgroupQuad            SubgroupOps = 0x80
)

func (o SubgroupOps) HasBasic() bool           { return o&SubgroupBasic != 0 }
func (o SubgroupOps) HasVote() bool            { return o&SubgroupVote != 0 }
func (o SubgroupOps) HasArithmetic() bool      { return o&SubgroupArithmetic != 0 }
func (o SubgroupOps) HasBallot() bool          { return o&SubgroupBallot != 0 }
func (o SubgroupOps) HasShuffle() bool         { return o&SubgroupShuffle != 0 }
func (o SubgroupOps) HasShuffleRelative() bool { return o&SubgroupShuffleRelative != 0 }
func (o SubgroupOps) HasClustered() bool       { return o&SubgroupClustered != 0 }
func (o SubgroupOps) HasQuad() bool            { return o&SubgroupQuad != 0 }

func (o SubgroupOps) String() string {
	names := []string{"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"}
	var parts []string
	for i, n := range names {
		if o&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// ShaderStages mirrors VkShaderStageFlags.
type ShaderStages uint32

// StageCompute is VK_SHADER_STAGE_COMPUTE_BIT.
const StageCompute ShaderStages = 0x20

// HasCompute reports whether the compute stage is included.
func (s ShaderStages) HasCompute() bool { return s&StageCompute != 0 }

// Limits holds the device limits relevant to compute work.
type Limits struct {
	MaxStorageBufferRange               uint32 // largest bindable storage range (bytes)
	MaxComputeWorkGroupCount            [3]uint32
	MaxComputeWorkGroupInvocations      uint32
	MaxComputeWorkGroupSize             [3]uint32
	MaxComputeSharedMemorySize          uint32
	MaxPushConstantsSize                uint32
	MaxBoundDescriptorSets              uint32
	MaxPerStageDescriptorStorageBuffers uint32
	MinStorageBufferOffsetAlignment     uint64
	NonCoherentAtomSize                 uint64
	MaxMemoryAllocationSize             uint64 // VkPhysicalDeviceMaintenance3Properties (0 if unknown)
	TimestampPeriod                     float32
	TimestampComputeAndGraphics         bool
	TimestampValidBits                  uint32 // of the compute queue family chosen by OpenDevice
}

// DeviceInfo describes one physical device as reported by Instance.Devices.
type DeviceInfo struct {
	Index               int // position in vkEnumeratePhysicalDevices
	Name                string
	VendorID            uint32
	VendorName          string
	DeviceID            uint32
	Type                DeviceType
	DriverID            uint32 // VkDriverId, 0 if unknown
	DriverName          string // VkPhysicalDeviceDriverProperties (empty if unavailable)
	DriverInfo          string
	APIVersion          string // "1.3.230"
	APIVersionRaw       uint32
	DriverVersion       uint32 // raw, vendor-specific encoding
	DriverVersionString string
	UUID                [16]byte // deviceUUID
	DriverUUID          [16]byte
	PipelineCacheUUID   [16]byte

	SubgroupSize               uint32 // default subgroup size (0 if unknown)
	MinSubgroupSize            uint32 // subgroup size control range (== SubgroupSize if unsupported)
	MaxSubgroupSize            uint32
	SubgroupOps                SubgroupOps
	SubgroupStages             ShaderStages
	SubgroupSizeControl        bool         // feature subgroupSizeControl
	ComputeFullSubgroups       bool         // feature computeFullSubgroups
	RequiredSubgroupSizeStages ShaderStages // stages accepting a required subgroup size

	Limits Limits

	DeviceLocalBytes            uint64 // sum of DEVICE_LOCAL heaps
	HostVisibleDeviceLocal      bool   // large host-visible device-local memory (resizable BAR or UMA)
	HostVisibleDeviceLocalBytes uint64

	Extensions                  []string // sorted device extension names
	RobustBufferAccessAvailable bool
	ShaderInt64                 bool // 64-bit integers in shaders (core feature shaderInt64)
	ShaderInt16                 bool // 16-bit integers in shaders (core feature shaderInt16)
	TimelineSemaphore           bool // feature available
	ExternalMemoryFD            bool // VK_KHR_external_memory_fd available
	ExternalSemaphoreFD         bool // VK_KHR_external_semaphore_fd available
	// PipelineExecutableInfo: VK_KHR_pipeline_executable_properties with
	// its pipelineExecutableInfo feature is available (compiler statistics,
	// see PipelineDesc.CaptureStatistics).
	PipelineExecutableInfo bool
	// HostQueryReset: queries can be reset from the host (core 1.2 feature hostQueryReset, or
	// VK_EXT_host_query_reset), see QueryPool.Reset.
	HostQueryReset bool

	ComputeQueueFamily int // family OpenDevice will use; -1 if none
	ComputeQueueCount  int // queues in that family

	Usable bool
	Reason string // why not usable (empty when usable)
}

// HasExtension reports whether the device exposes the named extension.
func (d DeviceInfo) HasExtension(name string) bool {
	i := sort.SearchStrings(d.Extensions, name)
	return i < len(d.Extensions) && d.Extensions[i] == name
}

func (d DeviceInfo) String() string {
	s := fmt.Sprintf("%d: %s (%s, %s, Vulkan %s", d.Index, d.Name, d.VendorName, d.Type, d.APIVersion)
	if d.DriverName != "" {
		s += ", " + d.DriverName
	}
	if d.SubgroupSize != 0 {
		s += fmt.Sprintf(", subgroup %d", d.SubgroupSize)
	}
	if d.Usable {
		s += ", usable)"
	} else {
		s += ", unusable: " + d.Reason + ")"
	}
	return s
}

// VersionString formats a packed Vulkan version as "major.minor.patch".
func VersionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", (v>>22)&0x7f, (v>>12)&0x3ff, v&0xfff)
}

// MakeVersion packs a Vulkan version number.
func MakeVersion(major, minor, patch uint32) uint32 {
	return major<<22 | minor<<12 | patch
}

func driverVersionString(vendor, v uint32) string {
	if vendor == 0x10de { // NVIDIA: 10.8.8.6 bits
		return fmt.Sprintf("%d.%d.%d.%d", v>>22, (v>>14)&0xff, (v>>6)&0xff, v&0x3f)
	}
	return VersionString(v)
}

func vendorName(id uint32, deviceName string) string {
	switch id {
	case 0x10de:
		return "NVIDIA"
	case 0x1002, 0x1022:
		return "AMD"
	case 0x8086:
		return "Intel"
	case 0x13b5:
		return "ARM"
	case 0x5143:
		return "Qualcomm"
	case 0x106b:
		return "Apple"
	case 0x1010:
		return "ImgTec"
	case 0x14e4:
		return "Broadcom"
	case 0x10005:
		if strings.Contains(strings.ToLower(deviceName), "llvmpipe") {
			return "Mesa (lavapipe)"
		}
		return "Mesa"
	case 0x10004:
		return "Codeplay"
	case 0x10006:
		return "PoCL"
	}
	return fmt.Sprintf("0x%x", id)
}

// SelectDevice picks a device from devs.
//
// spec "" means the VKZIP_DEVICE environment variable, and if that is empty
// too, the best usable device (discrete > integrated > virtual > cpu >
// other, lowest index first). Otherwise spec is an index ("0") or a
// case-insensitive substring of the device name (vendor and driver names
// are tried when no device name matches). Errors wrap ErrNoDevice and list
// the available devices.
func SelectDevice(devs []DeviceInfo, spec string) (DeviceInfo, error) {
	spec = strings.TrimSpace(spec)
	from := "spec"
	if spec == "" {
		spec = strings.TrimSpace(os.Getenv(EnvDevice))
		from = EnvDevice
	}
	if len(devs) == 0 {
		return DeviceInfo{}, fmt.Errorf("%w: no Vulkan physical devices found", ErrNoDevice)
	}
	if spec == "" {
		best := -1
		for i, d := range devs {
			if d.Usable && (best < 0 || d.Type.rank() > devs[best].Type.rank()) {
				best = i
			}
		}
		if best < 0 {
			return DeviceInfo{}, fmt.Errorf("%w: none of the devices is usable; available: %s", ErrNoDevice, listDevices(devs))
		}
		return devs[best], nil
	}
	if n, err := strconv.Atoi(spec); err == nil {
		for _, d := range devs {
			if d.Index == n {
				if !d.Usable {
					return DeviceInfo{}, fmt.Errorf("%w: device %d (%s) is not usable: %s; available: %s",
						ErrNoDevice, n, d.Name, d.Reason, listDevices(devs))
				}
				return d, nil
			}
		}
		return DeviceInfo{}, fmt.Errorf("%w: no device with index %d (%s=%q); available: %s", ErrNoDevice, n, from, spec, listDevices(devs))
	}
	low := strings.ToLower(spec)
	var matches []DeviceInfo
	for _, d := range devs {
		if strings.Contains(strings.ToLower(d.Name), low) {
			matches = append(matches, d)
		}
	}
	if len(matches) == 0 {
		for _, d := range devs {
			if strings.Contains(strings.ToLower(d.VendorName), low) || strings.Contains(strings.ToLower(d.DriverName), low) {
				matches = append(matches, d)
			}
		}
	}
	if len(matches) == 0 {
		return DeviceInfo{}, fmt.Errorf("%w: no device matches %q (%s); available: %s", ErrNoDevice, spec, from, listDevices(devs))
	}
	best := -1
	for i, d := range matches {
		if d.Usable && (best < 0 || d.Type.rank() > matches[best].Type.rank()) {
			best = i
		}
	}
	if best < 0 {
		return DeviceInfo{}, fmt.Errorf("%w: device %q matching %q is not usable: %s; available: %s",
			ErrNoDevice, matches[0].Name, spec, matches[0].Reason, listDevices(devs))
	}
	return matches[best], nil
}

func listDevices(devs []DeviceInfo) string {
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// InstanceOptions configures NewInstance.
type InstanceOptions struct {
	// Validation enables VK_LAYER_KHRONOS_validation plus a debug messenger
	// (also enabled by VKZIP_VALIDATE=1). If the layer is not installed the
	// instance is created without it; see Instance.ValidationEnabled.
	Validation bool
	AppName    string
}

// DeviceOptions configures Instance.OpenDevice.
type DeviceOptions struct {
	// PipelineCachePath, if set, is loaded at open (ignored when its header
	// belongs to another device/driver) and written back on Close.
	PipelineCachePath string
	// StagingSize is the chunk size of Upload/Download staging buffers
	// (default 64 MiB).
	StagingSize uint64
	// WaitSpin is how long Submission.Wait polls the fence before blocking
	// in vkWaitForFences, whose wake-up is slow on some drivers. 0 means
	// the default (100µs, none on CPU devices such as lavapipe); negative
	// disables polling.
	WaitSpin time.Duration
	// Queues is the compute queues to create, 1 to 8 and at most what the
	// queue family offers (0: min(4, what it offers)). A tuning knob.
	Queues int
}

// EnabledFeatures reports which optional features a Device enabled.
type EnabledFeatures struct {
	SubgroupSizeControl  bool
	ComputeFullSubgroups bool
	TimelineSemaphore    bool
	// ShaderInt64: the shaderInt64 feature is enabled, so kernels may use 64-bit integers.
	ShaderInt64 bool
	// ShaderInt16: the shaderInt16 feature is enabled, so kernels may use 16-bit integers (not 16-bit storage in
	// buffers, a separate feature).
	ShaderInt16         bool
	ExternalMemoryFD    bool
	ExternalSemaphoreFD bool
	// PipelineStatistics: VK_KHR_pipeline_executable_properties and its
	// pipelineExecutableInfo feature are enabled, so pipelines created
	// with PipelineDesc.CaptureStatistics report Pipeline.Statistics.
	PipelineStatistics bool
	// HostQueryReset: QueryPool.Reset resets queries from the host, so command buffers need not.
	HostQueryReset bool
}

// BufferKind selects memory placement and usage of a Buffer.
type BufferKind int

const (
	// DeviceLocal: device memory; storage + transfer src/dst. Not mapped.
	DeviceLocal BufferKind = iota
	// HostVisible: host-visible, host-coherent, persistently mapped (host
	// cached when available). Usable as a storage buffer too.
	HostVisible
	// Upload: host-visible, coherent, mapped; prefers uncached
	// (write-combined) system memory for host→device transfers.
	Upload
	// Readback: host-visible, coherent, mapped; prefers host-cached memory
	// for device→host transfers.
	Readback
	// DeviceLocalHostVisible: device-local and mapped (resizable BAR / UMA);
	// NewBuffer fails with ErrUnsupported when no such memory type exists.
	// On discrete GPUs host reads of it are uncached and slow: write it
	// from the host, read results back through Download.
	DeviceLocalHostVisible
)

func (k BufferKind) String() string {
	switch k {
	case DeviceLocal:
		return "device-local"
	case HostVisible:
		return "host-visible"
	case Upload:
		return "upload"
	case Readback:
		return "readback"
	case DeviceLocalHostVisible:
		return "device-local-host-visible"
	}
	return fmt.Sprintf("BufferKind(%d)", int(k))
}

// Mapped reports whether buffers of this kind are host mapped.
func (k BufferKind) Mapped() bool { return k != DeviceLocal }

// BufferOptions are optional NewBuffer settings.
type BufferOptions struct {
	// ExportableFD allocates the memory exportable as an opaque POSIX fd
	// (VK_KHR_external_memory_fd); see Buffer.ExportFD.
	ExportableFD bool
}

// ImportOptions are optional ImportBufferFD settings.
type ImportOptions struct {
	// AllocationSize of the exported memory; 0 means the size this device
	// requires for a buffer of the requested size (correct when the
	// exporter was a vk.Buffer of the same size on the same kind of device).
	AllocationSize uint64
}

// BufferRange is a storage-buffer binding: Size 0 means "to the end".
type BufferRange struct {
	Buf    *Buffer
	Offset uint64
	Size   uint64
}

// Piece is bytes for Device.UploadPieces to write at an offset.
type Piece struct {
	Off  uint64
	Data []byte
}

// SpecConst is one specialization constant (32-bit).
type SpecConst struct {
	ID    uint32
	Value uint32
}

// PipelineDesc describes a compute pipeline. Storage buffers are bound at
// set 0, bindings 0..Bindings-1; push constants are one range at offset 0.
type PipelineDesc struct {
	Name                 string // for error messages
	SPIRV                []byte // multiple of 4 bytes, little-endian, with SPIR-V magic
	Entry                string // default "main"
	Bindings             int
	PushConstantSize     uint32
	Spec                 []SpecConst
	RequiredSubgroupSize uint32 // 0: driver default
	RequireFullSubgroups bool   // needs ComputeFullSubgroups
	// CaptureStatistics creates the pipeline with
	// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR so Pipeline.Statistics
	// can report the driver's compiler statistics (registers, shared
	// memory, spills, ... as the driver names them). Ignored when the
	// device lacks EnabledFeatures.PipelineStatistics.
	CaptureStatistics bool
}

// PipelineStat is one compiler statistic of a pipeline executable
// (VkPipelineExecutableStatisticKHR). Names, descriptions and the set of
// statistics are driver-specific.
type PipelineStat struct {
	Executable  string  // name of the pipeline executable (e.g. "Compute Shader")
	Name        string  // statistic name (e.g. "Register Count")
	Description string  // driver's description of the statistic
	Value       float64 // the value converted: bool 0/1, integers, floats
	Text        string  // the value formatted exactly ("true", "42", "1.5")
}

func (s PipelineStat) String() string {
	return s.Executable + ": " + s.Name + " = " + s.Text
}

// VkPipelineExecutableStatisticFormatKHR values.
const (
	statFormatBool32  = 0
	statFormatInt64   = 1
	statFormatUint64  = 2
	statFormatFloat64 = 3
)

// makePipelineStat converts a statistic value: raw is the union read as
// b32 (format bool32) or as u64 (the 64-bit formats).
func makePipelineStat(exe, name, desc string, format int32, raw uint64) PipelineStat {
	s := PipelineStat{Executable: exe, Name: name, Description: desc}
	switch format {
	case statFormatBool32:
		s.Text = "false"
		if raw != 0 {
			s.Value, s.Text = 1, "true"
		}
	case statFormatInt64:
		s.Value, s.Text = float64(int64(raw)), strconv.FormatInt(int64(raw), 10)
	case statFormatUint64:
		s.Value, s.Text = float64(raw), strconv.FormatUint(raw, 10)
	case statFormatFloat64:
		f := math.Float64frombits(raw)
		s.Value, s.Text = f, strconv.FormatFloat(f, 'g', -1, 64)
	default:
		s.Text = fmt.Sprintf("%#x (unknown format %d)", raw, format)
	}
	return s
}

// SemaphoreOptions are optional NewTimelineSemaphore settings.
type SemaphoreOptions struct {
	// ExportableFD makes the semaphore exportable as an opaque fd
	// (VK_KHR_external_semaphore_fd).
	ExportableFD bool
}

// SemaphoreValue is a timeline semaphore and a value to wait for or signal.
type SemaphoreValue struct {
	Sem   *Semaphore
	Value uint64
}

// Stats are cumulative counters of a Device (read atomically).
type Stats struct {
	Submissions     uint64
	InFlight        int64 // submissions not yet observed complete
	MaxInFlight     int64 // high-water mark of InFlight
	Dispatches      uint64
	Readbacks       uint64 // Download calls (host reads of device data)
	BytesUploaded   uint64
	BytesDownloaded uint64
	// Host round trips and per-call work, for tests and benchmarks that check a hot path does none it need not:
	Recordings    uint64 // command buffers begun (Commands.Begin)
	BindingSets   uint64 // descriptor sets allocated and written (NewBindings)
	FencePolls    uint64 // vkGetFenceStatus calls
	BlockingWaits uint64 // waits that slept (in vkWaitForFences or vkWaitSemaphores) rather than only polled
}
