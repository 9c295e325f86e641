package conformance

import (
	"errors"
	"fmt"
)

// DeviceInfo describes a Vulkan device as a DeviceLister reports it: what OpenTargets needs to select, open and
// describe it (VulkanDevice), without this package reaching Vulkan itself.
type DeviceInfo struct {
	Index         int    // position in the loader's device list
	Name          string // device name ("llvmpipe (LLVM 15.0.6, 256 bits)" for lavapipe)
	Usable        bool   // the codec can run on it
	Reason        string // why it is not usable
	Type          string // "discrete GPU", "cpu", ...
	VendorName    string
	VendorID      uint32
	DeviceID      uint32
	DriverID      uint32 // VkDriverId, 0 if unknown
	DriverName    string
	DriverInfo    string
	DriverVersion string
	APIVersion    string
	SubgroupSize  uint32
}

// ErrNoDevice: no usable Vulkan device was found, or none matches a selection.
var ErrNoDevice = errors.New("vk: no usable Vulkan device")

// DeviceLister is how conformance reaches Vulkan devices: OpenTargets lists them and opens the ones it checks
// through it, and nothing else in the verdict logic calls Vulkan. The CLI wires in the Vulkan loader's lister
// (package conformance/vkdevices); tests inject a fake one to stand for machines without a loader, with devices
// that cannot be opened, or with targets that lack a format.
type DeviceLister interface {
	// Devices lists the Vulkan devices the loader reports, usable or not. An error, or an empty list, means no
	// Vulkan device was found here (no loader, no ICD, no device).
	Devices() ([]DeviceInfo, error)
	// Select picks the device a spec (an index or a name substring) names among devs; an error wraps
	// ErrNoDevice.
	Select(devs []DeviceInfo, spec string) (DeviceInfo, error)
	// Open opens a listed device: its host-path target and, when resident is true, the device-resident target
	// on the same device. The caller closes the targets' backends.
	Open(d DeviceInfo, resident bool) ([]Target, error)
}

// noLister is the DeviceLister of a Selection without one: it finds no device, so Vulkan is reported as not
// checked (backend all) or is an error (backend vulkan), never silently passed.
type noLister struct{}

func (noLister) Devices() ([]DeviceInfo, error) {
	return nil, fmt.Errorf("%w: no device lister (Selection.Lister) was given", ErrNoDevice)
}

func (noLister) Select([]DeviceInfo, string) (DeviceInfo, error) {
	return DeviceInfo{}, fmt.Errorf("%w: no device lister (Selection.Lister) was given", ErrNoDevice)
}

func (noLister) Open(d DeviceInfo, _ bool) ([]Target, error) {
	return nil, fmt.Errorf("%w: no device lister (Selection.Lister) was given", ErrNoDevice)
}

func lister(sel Selection) DeviceLister {
	if sel.Lister != nil {
		return sel.Lister
	}
	return noLister{}
}
