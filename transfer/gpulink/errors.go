package gpulink

import "errors"

var (
	// ErrNeedTwoGPUs: fewer than two CUDA devices (or the two given are the same one).
	ErrNeedTwoGPUs = errors.New("gpulink: need two CUDA devices")
	// ErrMismatch: the tensor that arrived on GPU 1 differs from the one sent.
	ErrMismatch = errors.New("gpulink: delivered tensor differs from the input")
	// ErrNoVulkanDevice: no Vulkan device is the CUDA device (by UUID).
	ErrNoVulkanDevice = errors.New("gpulink: no Vulkan device for the CUDA device")
)
