//go:build cgo

package vk

/*
#include <stdlib.h>
#include "vkz.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

const (
	validationLayer    = "VK_LAYER_KHRONOS_validation"
	extDebugUtils      = "VK_EXT_debug_utils"
	extPortabilityEnum = "VK_KHR_portability_enumeration"
	extProps2          = "VK_KHR_get_physical_device_properties2"
	// Device extension for compiler statistics (Pipeline.Statistics).
	extPipelineExecProps = "VK_KHR_pipeline_executable_properties"
	extHostQueryReset    = "VK_EXT_host_query_reset"
	maxStoredMessages    = 1000
)

// pinMu serialises vkz_pin_libraries (its list is C-global).
var pinMu sync.Mutex

// Instance is a VkInstance plus, with validation, a debug messenger whose
// messages are collected per instance.
type Instance struct {
	c          *C.vkz_inst
	handle     cgo.Handle
	apiVersion uint32
	validation bool
	layers     []string
	extensions []string
	closed     atomic.Bool

	msgMu     sync.Mutex
	msgs      []string
	msgCount  int
	errCount  int
	warnCount int

	devMu   sync.Mutex
	devices map[*Device]struct{}
}

// NewInstance loads the Vulkan loader (once) and creates an instance.
// Errors wrap ErrNoVulkan when no loader or no compatible driver exists.
func NewInstance(opts InstanceOptions) (*Instance, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	layers, err := instanceLayers()
	if err != nil {
		return nil, err
	}
	exts, err := instanceExtensions()
	if err != nil {
		return nil, err
	}
	has := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}

	wantValidation := opts.Validation || os.Getenv(EnvValidate) == "1"
	inst := &Instance{devices: map[*Device]struct{}{}}
	var enLayers, enExts []string
	var flags uint32
	if wantValidation && has(layers, validationLayer) {
		enLayers = append(enLayers, validationLayer)
		inst.validation = true
	}
	debugUtils := inst.validation // the layer itself provides VK_EXT_debug_utils
	if debugUtils {
		enExts = append(enExts, extDebugUtils)
	}
	if has(exts, extPortabilityEnum) {
		enExts = append(enExts, extPortabilityEnum)
		flags |= 0x1 // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
	}
	api := uint32(C.vkz_instance_version())
	if api > MakeVersion(1, 3, 0) {
		api = MakeVersion(1, 3, 0)
	}
	api &^= 0xfff // patch is ignored in apiVersion; keep it clean
	if api < MakeVersion(1, 1, 0) && has(exts, extProps2) {
		enExts = append(enExts, extProps2)
	}
	inst.apiVersion = api
	inst.layers = enLayers
	inst.extensions = enExts

	appName := opts.AppName
	if appName == "" {
		appName = "vkzip"
	}
	cApp := C.CString(appName)
	defer C.free(unsafe.Pointer(cApp))
	cLayers, freeLayers := cStrings(enLayers)
	defer freeLayers()
	cExts, freeExts := cStrings(enExts)
	defer freeExts()

	inst.handle = cgo.NewHandle(inst)
	var cinst *C.vkz_inst
	var missing *C.char
	r := Result(C.vkz_create_instance(cApp, C.uint32_t(api), C.uint32_t(flags),
		cLayers, C.uint32_t(len(enLayers)), cExts, C.uint32_t(len(enExts)),
		boolInt(debugUtils), C.uintptr_t(inst.handle), &cinst, &missing))
	if r != ResultSuccess {
		inst.handle.Delete()
		if r == ResultMissingEntryPoint {
			return nil, fmt.Errorf("%w: %s", ErrMissingEntryPoint, C.GoString(missing))
		}
		err := check("vkCreateInstance", r)
		if r == ResultIncompatibleDriver || r == ResultInitializationFailed {
			err = fmt.Errorf("%w: %v", ErrNoVulkan, err)
		}
		return nil, err
	}
	inst.c = cinst
	pinMu.Lock()
	C.vkz_pin_libraries() // see vkz.c: drivers must not be unloaded per instance
	pinMu.Unlock()
	globalLive.Add(1)
	if cinst.messenger != 0 {
		globalLive.Add(1)
	}

	if err := bindVulkanGo(cinst.instance); err != nil {
		inst.Close()
		return nil, err
	}
	return inst, nil
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// cStrings makes a C array of C strings; free releases all of it.
func cStrings(ss []string) (**C.char, func()) {
	if len(ss) == 0 {
		return nil, func() {}
	}
	arr := (**C.char)(C.calloc(C.size_t(len(ss)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	view := unsafe.Slice(arr, len(ss))
	for i, s := range ss {
		view[i] = C.CString(s)
	}
	return arr, func() {
		for i := range view {
			C.free(unsafe.Pointer(view[i]))
		}
		C.free(unsafe.Pointer(arr))
	}
}

func instanceLayers() ([]string, error) {
	var n uint32
	if r := Result(vulkan.EnumerateInstanceLayerProperties(&n, nil)); r != ResultSuccess {
		return nil, check("vkEnumerateInstanceLayerProperties", r)
	}
	if n == 0 {
		return nil, nil
	}
	props := make([]vulkan.LayerProperties, n)
	r := Result(vulkan.EnumerateInstanceLayerProperties(&n, props))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, check("vkEnumerateInstanceLayerProperties", r)
	}
	var out []string
	for i := range props[:min(int(n), len(props))] {
		props[i].Deref()
		out = append(out, cString(props[i].LayerName[:]))
	}
	return out, nil
}

func instanceExtensions() ([]string, error) {
	var n C.uint32_t
	if r := Result(C.vkz_enum_instance_extensions(&n, nil)); r != ResultSuccess {
		return nil, check("vkEnumerateInstanceExtensionProperties", r)
	}
	if n == 0 {
		return nil, nil
	}
	arr := (*C.VkExtensionProperties)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.VkExtensionProperties{}))))
	defer C.free(unsafe.Pointer(arr))
	r := Result(C.vkz_enum_instance_extensions(&n, arr))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, check("vkEnumerateInstanceExtensionProperties", r)
	}
	var out []string
	for _, e := range unsafe.Slice(arr, int(n)) {
		out = append(out, C.GoString(&e.extensionName[0]))
	}
	return out, nil
}

//export vkzGoDebugMessage
func vkzGoDebugMessage(h C.uintptr_t, severity C.uint32_t, types C.uint32_t, id C.int32_t, idName *C.char, msg *C.char) {
	// A stale or foreign handle must never crash the process from inside a
	// driver callback.
	defer func() { _ = recover() }()
	inst, ok := cgo.Handle(h).Value().(*Instance)
	if !ok || inst == nil {
		return
	}
	sev := "INFO"
	switch {
	case severity&0x1000 != 0:
		sev = "ERROR"
	case severity&0x100 != 0:
		sev = "WARNING"
	}
	name := ""
	if idName != nil {
		name = C.GoString(idName)
	}
	text := ""
	if msg != nil {
		text = C.GoString(msg)
	}
	inst.addMessage(sev, name, text)
}

func (in *Instance) addMessage(sev, name, text string) {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	in.msgCount++
	switch sev {
	case "ERROR":
		in.errCount++
	case "WARNING":
		in.warnCount++
	}
	if len(in.msgs) < maxStoredMessages {
		s := "[" + sev + "] "
		if name != "" {
			s += name + ": "
		}
		in.msgs = append(in.msgs, s+text)
	}
}

// ValidationEnabled reports whether the validation layer is active.
func (in *Instance) ValidationEnabled() bool { return in != nil && in.validation }

// ValidationMessages returns the collected validation/debug messages
// (warnings and errors; at most the first 1000 are kept).
func (in *Instance) ValidationMessages() []string {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	return append([]string(nil), in.msgs...)
}

// ValidationMessageCount returns the number of messages received.
func (in *Instance) ValidationMessageCount() int {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	return in.msgCount
}

// ValidationErrorCount returns the number of ERROR-severity messages.
func (in *Instance) ValidationErrorCount() int {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	return in.errCount
}

// ResetValidationMessages clears collected messages and counters.
func (in *Instance) ResetValidationMessages() {
	in.msgMu.Lock()
	defer in.msgMu.Unlock()
	in.msgs, in.msgCount, in.errCount, in.warnCount = nil, 0, 0, 0
}

// APIVersion returns the instance API version requested ("1.3.0").
func (in *Instance) APIVersion() string { return VersionString(in.apiVersion) }

// EnabledLayers returns the enabled instance layers.
func (in *Instance) EnabledLayers() []string { return append([]string(nil), in.layers...) }

// EnabledExtensions returns the enabled instance extensions.
func (in *Instance) EnabledExtensions() []string { return append([]string(nil), in.extensions...) }

// Close closes all devices opened from this instance, then destroys the
// messenger and the instance. It is idempotent.
func (in *Instance) Close() error {
	if in == nil || !in.closed.CompareAndSwap(false, true) {
		return nil
	}
	in.devMu.Lock()
	devs := make([]*Device, 0, len(in.devices))
	for d := range in.devices {
		devs = append(devs, d)
	}
	in.devMu.Unlock()
	var errs []error
	for _, d := range devs {
		if err := d.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if in.c.messenger != 0 {
		globalLive.Add(-1)
	}
	C.vkz_destroy_instance(in.c)
	in.c = nil
	globalLive.Add(-1)
	// Deleted only now: the messenger may report during vkDestroyInstance.
	in.handle.Delete()
	return errors.Join(errs...)
}

func (in *Instance) physicalDevices() ([]C.VkPhysicalDevice, error) {
	if in == nil || in.closed.Load() {
		return nil, ErrClosed
	}
	vin := vgInstance(in.c.instance)
	var n uint32
	if r := Result(vulkan.EnumeratePhysicalDevices(vin, &n, nil)); r != ResultSuccess {
		return nil, check("vkEnumeratePhysicalDevices", r)
	}
	if n == 0 {
		return nil, nil
	}
	// Physical-device handles are loader-owned C addresses, safe in Go memory.
	pds := make([]vulkan.PhysicalDevice, n)
	r := Result(vulkan.EnumeratePhysicalDevices(vin, &n, pds))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, check("vkEnumeratePhysicalDevices", r)
	}
	out := make([]C.VkPhysicalDevice, n)
	for i := range out {
		out[i] = C.VkPhysicalDevice(unsafe.Pointer(pds[i]))
	}
	return out, nil
}

// Devices lists the physical devices with their capabilities.
func (in *Instance) Devices() ([]DeviceInfo, error) {
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, len(pds))
	for i, pd := range pds {
		info, err := in.describe(i, pd)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func (in *Instance) deviceExtensions(pd C.VkPhysicalDevice) ([]string, error) {
	var n C.uint32_t
	if r := Result(C.vkz_enum_device_extensions(in.c, pd, &n, nil)); r != ResultSuccess {
		return nil, check("vkEnumerateDeviceExtensionProperties", r)
	}
	if n == 0 {
		return nil, nil
	}
	arr := (*C.VkExtensionProperties)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.VkExtensionProperties{}))))
	defer C.free(unsafe.Pointer(arr))
	r := Result(C.vkz_enum_device_extensions(in.c, pd, &n, arr))
	if r != ResultSuccess && r != ResultIncomplete {
		return nil, check("vkEnumerateDeviceExtensionProperties", r)
	}
	out := make([]string, 0, int(n))
	for _, e := range unsafe.Slice(arr, int(n)) {
		out = append(out, C.GoString(&e.extensionName[0]))
	}
	sort.Strings(out)
	return out, nil
}

// memoryInfo is the Go copy of VkPhysicalDeviceMemoryProperties.
type memoryInfo struct {
	types []memType
	heaps []memHeap
}

type memType struct {
	flags uint32
	heap  uint32
}

type memHeap struct {
	size  uint64
	flags uint32
}

// Vulkan memory property bits.
const (
	memDeviceLocal  = 0x1
	memHostVisible  = 0x2
	memHostCoherent = 0x4
	memHostCached   = 0x8
)

type pdevDetails struct {
	info DeviceInfo
	mem  memoryInfo
}

func uuid16(a *[16]C.uint8_t) (u [16]byte) {
	for i := range u {
		u[i] = byte(a[i])
	}
	return u
}

func (in *Instance) describe(index int, pd C.VkPhysicalDevice) (DeviceInfo, error) {
	d, err := in.details(index, pd)
	return d.info, err
}

func (in *Instance) details(index int, pd C.VkPhysicalDevice) (pdevDetails, error) {
	exts, err := in.deviceExtensions(pd)
	if err != nil {
		return pdevDetails{}, err
	}
	info := DeviceInfo{Index: index, Extensions: exts, ComputeQueueFamily: -1}

	v := queryPhysicalDevice(pd)
	props := &v.props
	devAPI := props.ApiVersion
	// The 1.1+ structs: ask only for those the device (and our instance
	// version) support.
	eff := min(devAPI, in.apiVersion)
	driverProps := eff >= MakeVersion(1, 2, 0) || info.HasExtension("VK_KHR_driver_properties")
	sizeControl := eff >= MakeVersion(1, 3, 0) || info.HasExtension("VK_EXT_subgroup_size_control")
	timeline := eff >= MakeVersion(1, 2, 0) || info.HasExtension("VK_KHR_timeline_semaphore")
	execProps := info.HasExtension(extPipelineExecProps)
	hostReset := eff >= MakeVersion(1, 2, 0) || info.HasExtension(extHostQueryReset)
	p := (*C.vkz_pdev_info)(C.calloc(1, C.size_t(unsafe.Sizeof(C.vkz_pdev_info{}))))
	defer C.free(unsafe.Pointer(p))
	C.vkz_query_pdev(in.c, pd, C.uint32_t(devAPI), boolInt(driverProps), boolInt(sizeControl), boolInt(timeline),
		boolInt(execProps), boolInt(hostReset), p)

	info.Name = cString(props.DeviceName[:])
	info.VendorID = props.VendorID
	info.VendorName = vendorName(info.VendorID, info.Name)
	info.DeviceID = props.DeviceID
	info.Type = DeviceType(props.DeviceType)
	info.APIVersionRaw = devAPI
	info.APIVersion = VersionString(devAPI)
	info.DriverVersion = props.DriverVersion
	info.DriverVersionString = driverVersionString(info.VendorID, info.DriverVersion)
	info.PipelineCacheUUID = props.PipelineCacheUUID
	if p.haveDriver != 0 {
		info.DriverID = uint32(p.driver.driverID)
		info.DriverName = C.GoString(&p.driver.driverName[0])
		info.DriverInfo = C.GoString(&p.driver.driverInfo[0])
	}
	lim := &props.Limits
	info.Limits = Limits{
		MaxStorageBufferRange:               lim.MaxStorageBufferRange,
		MaxComputeWorkGroupInvocations:      lim.MaxComputeWorkGroupInvocations,
		MaxComputeSharedMemorySize:          lim.MaxComputeSharedMemorySize,
		MaxPushConstantsSize:                lim.MaxPushConstantsSize,
		MaxBoundDescriptorSets:              lim.MaxBoundDescriptorSets,
		MaxPerStageDescriptorStorageBuffers: lim.MaxPerStageDescriptorStorageBuffers,
		MinStorageBufferOffsetAlignment:     uint64(lim.MinStorageBufferOffsetAlignment),
		NonCoherentAtomSize:                 uint64(lim.NonCoherentAtomSize),
		TimestampPeriod:                     lim.TimestampPeriod,
		TimestampComputeAndGraphics:         lim.TimestampComputeAndGraphics != 0,
		MaxComputeWorkGroupCount:            lim.MaxComputeWorkGroupCount,
		MaxComputeWorkGroupSize:             lim.MaxComputeWorkGroupSize,
	}
	info.RobustBufferAccessAvailable = v.features.RobustBufferAccess != 0
	info.ShaderInt64 = v.features.ShaderInt64 != 0
	info.ShaderInt16 = v.features.ShaderInt16 != 0

	if p.haveProps2 != 0 {
		info.SubgroupSize = uint32(p.subgroup.subgroupSize)
		info.SubgroupOps = SubgroupOps(p.subgroup.supportedOperations)
		info.SubgroupStages = ShaderStages(p.subgroup.supportedStages)
		info.UUID = uuid16(&p.id.deviceUUID)
		info.DriverUUID = uuid16(&p.id.driverUUID)
		info.Limits.MaxMemoryAllocationSize = uint64(p.maint3.maxMemoryAllocationSize)
	}
	info.MinSubgroupSize, info.MaxSubgroupSize = info.SubgroupSize, info.SubgroupSize
	if p.haveSizeControl != 0 {
		info.MinSubgroupSize = uint32(p.sizeControl.minSubgroupSize)
		info.MaxSubgroupSize = uint32(p.sizeControl.maxSubgroupSize)
		info.RequiredSubgroupSizeStages = ShaderStages(p.sizeControl.requiredSubgroupSizeStages)
		info.SubgroupSizeControl = p.sizeControlFeatures.subgroupSizeControl != 0
		info.ComputeFullSubgroups = p.sizeControlFeatures.computeFullSubgroups != 0
	}
	if p.haveTimeline != 0 {
		info.TimelineSemaphore = p.timelineFeatures.timelineSemaphore != 0
	}
	if p.haveExecProps != 0 {
		info.PipelineExecutableInfo = p.execPropsFeatures.pipelineExecutableInfo != 0
	}
	if p.haveHostQueryReset != 0 {
		info.HostQueryReset = p.hostQueryResetFeatures.hostQueryReset != 0
	}
	info.ExternalMemoryFD = info.HasExtension("VK_KHR_external_memory_fd")
	info.ExternalSemaphoreFD = info.HasExtension("VK_KHR_external_semaphore_fd")

	// Memory heaps.
	var mem memoryInfo
	for _, h := range v.heaps {
		mem.heaps = append(mem.heaps, h)
		if h.flags&0x1 != 0 { // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
			info.DeviceLocalBytes += h.size
		}
	}
	hvdlHeaps := map[uint32]bool{}
	for _, mt := range v.types {
		mem.types = append(mem.types, mt)
		want := uint32(memDeviceLocal | memHostVisible | memHostCoherent)
		if mt.flags&want == want && int(mt.heap) < len(mem.heaps) {
			hvdlHeaps[mt.heap] = true
		}
	}
	for h := range hvdlHeaps {
		info.HostVisibleDeviceLocalBytes += mem.heaps[h].size
	}
	// The legacy 256 MiB BAR window does not count as resizable BAR.
	info.HostVisibleDeviceLocal = info.HostVisibleDeviceLocalBytes > 256<<20

	// Compute queue family: prefer timestamps, then a compute-only family.
	best, bestScore := -1, -1
	for i, q := range v.queues {
		if q.QueueFlags&0x2 == 0 || q.QueueCount == 0 {
			continue
		}
		score := 0
		if q.TimestampValidBits > 0 {
			score += 2
		}
		if q.QueueFlags&0x1 == 0 {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best >= 0 {
		info.ComputeQueueFamily = best
		info.ComputeQueueCount = int(v.queues[best].QueueCount)
		info.Limits.TimestampValidBits = v.queues[best].TimestampValidBits
	}

	// Usability for vkzip's compute shaders.
	var reasons []string
	if devAPI < MakeVersion(1, 1, 0) {
		reasons = append(reasons, "Vulkan "+info.APIVersion+" < 1.1")
	}
	if in.apiVersion < MakeVersion(1, 1, 0) {
		reasons = append(reasons, "loader Vulkan "+VersionString(in.apiVersion)+" < 1.1")
	}
	if p.haveProps2 == 0 && devAPI >= MakeVersion(1, 1, 0) {
		reasons = append(reasons, "vkGetPhysicalDeviceProperties2 unavailable")
	}
	if best < 0 {
		reasons = append(reasons, "no compute queue")
	}
	if p.haveProps2 != 0 {
		if !info.SubgroupStages.HasCompute() {
			reasons = append(reasons, "no subgroup operations in compute shaders")
		}
		// The subgroup operations the kernels in shaders/ use.
		var missing []string
		for _, op := range []SubgroupOps{SubgroupBasic, SubgroupVote, SubgroupArithmetic, SubgroupBallot, SubgroupShuffle} {
			if info.SubgroupOps&op == 0 {
				missing = append(missing, op.String())
			}
		}
		if len(missing) > 0 {
			reasons = append(reasons, "missing subgroup ops: "+strings.Join(missing, ","))
		}
		if info.SubgroupSize == 0 {
			reasons = append(reasons, "subgroup size 0")
		}
	}
	if info.Limits.MaxPerStageDescriptorStorageBuffers == 0 || info.Limits.MaxStorageBufferRange == 0 {
		reasons = append(reasons, "no storage buffers")
	}
	info.Usable = len(reasons) == 0
	info.Reason = strings.Join(reasons, "; ")
	return pdevDetails{info: info, mem: mem}, nil
}

func (in *Instance) addDevice(d *Device) {
	in.devMu.Lock()
	in.devices[d] = struct{}{}
	in.devMu.Unlock()
}

func (in *Instance) removeDevice(d *Device) {
	in.devMu.Lock()
	delete(in.devices, d)
	in.devMu.Unlock()
}
