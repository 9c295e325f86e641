package vk

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNoVulkan: no usable Vulkan loader (library missing, bad
	// VKZIP_VULKAN_LIB, or the package was built without cgo).
	ErrNoVulkan = errors.New("vk: Vulkan not available")
	// ErrNoDevice: no (usable) physical device, or a device spec matched none.
	ErrNoDevice = errors.New("vk: no usable Vulkan device")
	// ErrDeviceLost: VK_ERROR_DEVICE_LOST (real or injected).
	ErrDeviceLost = errors.New("vk: device lost")
	// ErrOutOfMemory: VK_ERROR_OUT_OF_HOST_MEMORY or VK_ERROR_OUT_OF_DEVICE_MEMORY.
	ErrOutOfMemory = errors.New("vk: out of memory")
	// ErrMissingEntryPoint: a Vulkan function pointer was NULL at run time.
	ErrMissingEntryPoint = errors.New("vk: missing Vulkan entry point")
	// ErrUnsupported: the device lacks a feature or extension the call needs.
	ErrUnsupported = errors.New("vk: not supported by this device")
	// ErrClosed: the object (or its device/instance) was already closed.
	ErrClosed = errors.New("vk: use of closed object")
	// ErrBusy: a Commands object is still executing from a previous Submit.
	ErrBusy = errors.New("vk: command buffer still in flight")
	// ErrInvalid: bad arguments (range, alignment, size, SPIR-V, ...).
	ErrInvalid = errors.New("vk: invalid argument")
)

// Result is a VkResult code.
type Result int32

// VkResult values used by this package.
const (
	ResultSuccess               Result = 0
	ResultNotReady              Result = 1
	ResultTimeout               Result = 2
	ResultIncomplete            Result = 5
	ResultOutOfHostMemory       Result = -1
	ResultOutOfDeviceMemory     Result = -2
	ResultInitializationFailed  Result = -3
	ResultDeviceLost            Result = -4
	ResultMemoryMapFailed       Result = -5
	ResultLayerNotPresent       Result = -6
	ResultExtensionNotPresent   Result = -7
	ResultFeatureNotPresent     Result = -8
	ResultIncompatibleDriver    Result = -9
	ResultTooManyObjects        Result = -10
	ResultFormatNotSupported    Result = -11
	ResultFragmentedPool        Result = -12
	ResultUnknown               Result = -13
	ResultOutOfPoolMemory       Result = -1000069000
	ResultInvalidExternalHandle Result = -1000072003
	// ResultMissingEntryPoint is not a VkResult: this package reports it
	// when a required function pointer is NULL.
	ResultMissingEntryPoint Result = -2147480000
)

var resultNames = map[Result]string{
	ResultSuccess:               "VK_SUCCESS",
	ResultNotReady:              "VK_NOT_READY",
	ResultTimeout:               "VK_TIMEOUT",
	ResultIncomplete:            "VK_INCOMPLETE",
	ResultOutOfHostMemory:       "VK_ERROR_OUT_OF_HOST_MEMORY",
	ResultOutOfDeviceMemory:     "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	ResultInitializationFailed:  "VK_ERROR_INITIALIZATION_FAILED",
	ResultDeviceLost:            "VK_ERROR_DEVICE_LOST",
	ResultMemoryMapFailed:       "VK_ERROR_MEMORY_MAP_FAILED",
	ResultLayerNotPresent:       "VK_ERROR_LAYER_NOT_PRESENT",
	ResultExtensionNotPresent:   "VK_ERROR_EXTENSION_NOT_PRESENT",
	ResultFeatureNotPresent:     "VK_ERROR_FEATURE_NOT_PRESENT",
	ResultIncompatibleDriver:    "VK_ERROR_INCOMPATIBLE_DRIVER",
	ResultTooManyObjects:        "VK_ERROR_TOO_MANY_OBJECTS",
	ResultFormatNotSupported:    "VK_ERROR_FORMAT_NOT_SUPPORTED",
	ResultFragmentedPool:        "VK_ERROR_FRAGMENTED_POOL",
	ResultUnknown:               "VK_ERROR_UNKNOWN",
	ResultOutOfPoolMemory:       "VK_ERROR_OUT_OF_POOL_MEMORY",
	ResultInvalidExternalHandle: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
	ResultMissingEntryPoint:     "missing entry point",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Error reports a failed Vulkan call. errors.Is maps it onto the sentinel
// errors (ErrDeviceLost, ErrOutOfMemory, ErrMissingEntryPoint, ...).
type Error struct {
	Op     string // Vulkan function or package operation
	Result Result
	Detail string // optional extra context
}

func (e *Error) Error() string {
	s := "vk: " + e.Op + ": " + e.Result.String()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Is lets errors.Is(err, ErrDeviceLost) and friends match an *Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrDeviceLost:
		return e.Result == ResultDeviceLost
	case ErrOutOfMemory:
		return e.Result == ResultOutOfHostMemory || e.Result == ResultOutOfDeviceMemory ||
			e.Result == ResultOutOfPoolMemory
	case ErrMissingEntryPoint:
		return e.Result == ResultMissingEntryPoint
	case ErrNoVulkan:
		return e.Result == ResultIncompatibleDriver
	case ErrUnsupported:
		return e.Result == ResultExtensionNotPresent || e.Result == ResultFeatureNotPresent
	}
	return false
}

// check converts a VkResult into nil or an *Error.
func check(op string, r Result) error {
	if r == ResultSuccess {
		return nil
	}
	return &Error{Op: op, Result: r}
}

func checkDetail(op string, r Result, detail string) error {
	if r == ResultSuccess {
		return nil
	}
	return &Error{Op: op, Result: r, Detail: detail}
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
