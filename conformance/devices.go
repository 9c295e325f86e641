package conformance

import (
	"strconv"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

// DeviceLister is how conformance reaches Vulkan devices: OpenTargets lists them and opens the ones it checks
// through it, and nothing else in the verdict logic calls Vulkan. Tests inject a fake one to stand for machines
// without a loader, with devices that cannot be opened, or with targets that lack a format.
type DeviceLister interface {
	// Devices lists the Vulkan devices the loader reports, usable or not. An error, or an empty list, means no
	// Vulkan device was found here (no loader, no ICD, no device).
	Devices() ([]vk.DeviceInfo, error)
	// Open opens a listed device: its host-path target and, when resident is true, the device-resident target
	// on the same device. The caller closes the targets' backends.
	Open(d vk.DeviceInfo, resident bool) ([]Target, error)
}

// VulkanLister is the DeviceLister of the Vulkan loader: vkcodec.Devices and vkcodec.Open.
type VulkanLister struct{}

// Devices lists the devices through a short-lived Vulkan instance.
func (VulkanLister) Devices() ([]vk.DeviceInfo, error) { return vkcodec.Devices() }

// Open opens a vkcodec backend on device d.Index.
func (VulkanLister) Open(d vk.DeviceInfo, resident bool) ([]Target, error) {
	b, err := vkcodec.Open(vkcodec.Options{Device: strconv.Itoa(d.Index)})
	if err != nil {
		return nil, err
	}
	t := Target{Backend: b, Device: VulkanDevice(b.Info(), b.Device())}
	if !resident {
		return []Target{t}, nil
	}
	return []Target{t, ResidentTarget(t)}, nil
}

func lister(sel Selection) DeviceLister {
	if sel.Lister != nil {
		return sel.Lister
	}
	return VulkanLister{}
}
