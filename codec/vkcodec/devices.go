package vkcodec

import "github.com/vkzip/vkzip/vk"

// Devices lists the Vulkan physical devices with what vkzip needs to know about them (usable or why not).
func Devices() ([]vk.DeviceInfo, error) {
	inst, err := vk.NewInstance(vk.InstanceOptions{AppName: "vkzip"})
	if err != nil {
		return nil, err
	}
	defer inst.Close()
	return inst.Devices()
}
