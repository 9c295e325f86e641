//go:build cgo

package vk

/*
#include <stdlib.h>
#include "vkz.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// vulkanGoEntryPoints lists every Vulkan entry point package vk calls
// through github.com/vulkan-go/vulkan. vulkan-go keeps one process-global
// function table; bindVulkanGo fills it from the first instance and checks
// that every later instance resolves the same addresses (see doc.go,
// "vulkan-go").
var vulkanGoEntryPoints = []string{
	// Physical devices (1.0).
	"vkEnumeratePhysicalDevices",
	"vkGetPhysicalDeviceProperties",
	"vkGetPhysicalDeviceFeatures",
	"vkGetPhysicalDeviceMemoryProperties",
	"vkGetPhysicalDeviceQueueFamilyProperties",
	// Device lifetime.
	"vkGetDeviceQueue",
	"vkDestroyDevice",
	"vkDeviceWaitIdle",
	// Memory.
	"vkGetBufferMemoryRequirements",
	"vkBindBufferMemory",
	"vkMapMemory",
	"vkUnmapMemory",
	"vkFreeMemory",
	"vkDestroyBuffer",
	// Pipelines and descriptors (creation stays in C).
	"vkGetPipelineCacheData",
	"vkDestroyPipelineCache",
	"vkDestroyPipeline",
	"vkDestroyPipelineLayout",
	"vkDestroyDescriptorSetLayout",
	"vkDestroyDescriptorPool",
	// Command pools and buffers.
	"vkCreateCommandPool",
	"vkDestroyCommandPool",
	"vkEndCommandBuffer",
	// Fences.
	"vkCreateFence",
	"vkDestroyFence",
	"vkResetFences",
	"vkGetFenceStatus",
	"vkWaitForFences",
	// Query pools.
	"vkCreateQueryPool",
	"vkDestroyQueryPool",
	"vkGetQueryPoolResults",
	// Semaphores (creation and 1.2 timeline calls stay in C).
	"vkDestroySemaphore",
	// Struct-free recording.
	"vkCmdBindPipeline",
	"vkCmdBindDescriptorSets",
	"vkCmdPushConstants",
	"vkCmdDispatch",
	"vkCmdFillBuffer",
	"vkCmdResetQueryPool",
	"vkCmdWriteTimestamp",
}

var vulkanGo struct {
	mu    sync.Mutex
	bound bool
	addrs []uintptr // vkGetInstanceProcAddr(first instance, name) per vulkanGoEntryPoints
}

// resolveEntryPoints returns vkGetInstanceProcAddr(inst, name) for every
// name of vulkanGoEntryPoints.
func resolveEntryPoints(inst C.VkInstance) []uintptr {
	names := make([]*C.char, len(vulkanGoEntryPoints))
	cnames := (**C.char)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(cnames))
	view := unsafe.Slice(cnames, len(names))
	for i, n := range vulkanGoEntryPoints {
		names[i] = C.CString(n)
		view[i] = names[i]
	}
	out := (*C.uintptr_t)(C.calloc(C.size_t(len(names)), 8))
	defer C.free(unsafe.Pointer(out))
	C.vkz_resolve(inst, cnames, C.uint32_t(len(names)), out)
	addrs := make([]uintptr, len(names))
	for i, a := range unsafe.Slice(out, len(names)) {
		addrs[i] = uintptr(a)
		C.free(unsafe.Pointer(names[i]))
	}
	return addrs
}

// bindVulkanGo makes vulkan-go's function table valid for inst. The first
// instance of the process fills it (vulkan.InitInstance, through the
// loader Load installed); a later instance is accepted only when the
// loader resolves every entry point of vulkanGoEntryPoints to the same
// address for it. The Khronos loader returns its exported trampolines,
// which dispatch through the handle passed to them, so one table serves
// every instance and device; a loader that returned per-instance
// addresses would make the process-global table wrong for some
// instance, and is refused rather than called.
func bindVulkanGo(inst C.VkInstance) error {
	addrs := resolveEntryPoints(inst)
	for i, a := range addrs {
		if a == 0 {
			return fmt.Errorf("%w: %s", ErrMissingEntryPoint, vulkanGoEntryPoints[i])
		}
	}
	vulkanGo.mu.Lock()
	defer vulkanGo.mu.Unlock()
	if !vulkanGo.bound {
		if err := vulkan.InitInstance(vulkan.Instance(unsafe.Pointer(inst))); err != nil {
			return fmt.Errorf("%w: vulkan-go InitInstance: %v", ErrNoVulkan, err)
		}
		vulkanGo.addrs, vulkanGo.bound = addrs, true
		return nil
	}
	for i, a := range addrs {
		if a != vulkanGo.addrs[i] {
			return fmt.Errorf("%w: the Vulkan loader resolves %s per instance; vulkan-go's process-global table cannot serve this instance",
				ErrUnsupported, vulkanGoEntryPoints[i])
		}
	}
	return nil
}

// Handle conversions between the C layer's types and vulkan-go's.
//
// Dispatchable handles (instance, physical device, device, command
// buffer) are pointers to loader-allocated C memory in both, so they
// convert as pointers and may be kept in Go memory.
//
// Non-dispatchable handles are uint64 in package vk (vkz.h) but Go
// pointer types in vulkan-go on 64-bit platforms, although a driver's
// value need not be an address. Package vk therefore never stores a
// vulkan-go non-dispatchable handle: objects keep the uint64, and the
// functions below reinterpret its bits (no uintptr→unsafe.Pointer
// conversion, which vet and checkptr reject) only in the argument list of
// the vulkan-go call. Arrays of handles that vulkan-go takes as slices
// (descriptor sets, fences) live in C memory, so cgo's pointer checks
// never see them. checkHandle rejects at creation the values the Go
// runtime refuses in a pointer slot.

func vgInstance(h C.VkInstance) vulkan.Instance { return vulkan.Instance(unsafe.Pointer(h)) }
func vgPhysicalDevice(h C.VkPhysicalDevice) vulkan.PhysicalDevice {
	return vulkan.PhysicalDevice(unsafe.Pointer(h))
}
func vgDevice(h C.VkDevice) vulkan.Device { return vulkan.Device(unsafe.Pointer(h)) }
func vgCommandBuffer(h C.VkCommandBuffer) vulkan.CommandBuffer {
	return vulkan.CommandBuffer(unsafe.Pointer(h))
}

func vgBuffer(h C.VkBuffer) vulkan.Buffer { return *(*vulkan.Buffer)(unsafe.Pointer(&h)) }
func vgDeviceMemory(h C.VkDeviceMemory) vulkan.DeviceMemory {
	return *(*vulkan.DeviceMemory)(unsafe.Pointer(&h))
}
func vgPipeline(h C.VkPipeline) vulkan.Pipeline { return *(*vulkan.Pipeline)(unsafe.Pointer(&h)) }
func vgPipelineLayout(h C.VkPipelineLayout) vulkan.PipelineLayout {
	return *(*vulkan.PipelineLayout)(unsafe.Pointer(&h))
}
func vgPipelineCache(h C.VkPipelineCache) vulkan.PipelineCache {
	return *(*vulkan.PipelineCache)(unsafe.Pointer(&h))
}
func vgDescriptorSetLayout(h C.VkDescriptorSetLayout) vulkan.DescriptorSetLayout {
	return *(*vulkan.DescriptorSetLayout)(unsafe.Pointer(&h))
}
func vgDescriptorPool(h C.VkDescriptorPool) vulkan.DescriptorPool {
	return *(*vulkan.DescriptorPool)(unsafe.Pointer(&h))
}
func vgCommandPool(h C.VkCommandPool) vulkan.CommandPool {
	return *(*vulkan.CommandPool)(unsafe.Pointer(&h))
}
func vgFence(h C.VkFence) vulkan.Fence             { return *(*vulkan.Fence)(unsafe.Pointer(&h)) }
func vgQueryPool(h C.VkQueryPool) vulkan.QueryPool { return *(*vulkan.QueryPool)(unsafe.Pointer(&h)) }
func vgSemaphore(h C.VkSemaphore) vulkan.Semaphore { return *(*vulkan.Semaphore)(unsafe.Pointer(&h)) }

// minLegalPointer is the Go runtime's lowest acceptable non-nil value in a
// pointer slot (runtime.minLegalPointer); a smaller one found on a stack
// being copied aborts the process.
const minLegalPointer = 4096

// checkHandle reports a non-dispatchable handle that vulkan-go's pointer
// typed handles cannot carry safely. Called once per created object.
func checkHandle(op string, hs ...uint64) error {
	for _, h := range hs {
		if h != 0 && h < minLegalPointer {
			return fmt.Errorf("%w: %s returned handle %#x, which vulkan-go cannot carry in a Go pointer slot", ErrUnsupported, op, h)
		}
	}
	return nil
}

// pdev10 is the Vulkan 1.0 description of a physical device, read
// through vulkan-go.
type pdev10 struct {
	props    vulkan.PhysicalDeviceProperties
	features vulkan.PhysicalDeviceFeatures
	types    []memType
	heaps    []memHeap
	queues   []vulkan.QueueFamilyProperties
}

// queryPhysicalDevice reads the 1.0 properties, features, memory
// properties and queue families of pd. Every vulkan-go struct here is
// fresh: vulkan-go caches a struct's C copy on first use (PassRef), so a
// reused struct would not be refilled. Deref copies the C result into the
// Go fields (nested structs need their own Deref while the C copy lives);
// Free releases the C copy, which vulkan-go never frees by itself.
func queryPhysicalDevice(pd C.VkPhysicalDevice) *pdev10 {
	vpd := vgPhysicalDevice(pd)
	v := &pdev10{}
	vulkan.GetPhysicalDeviceProperties(vpd, &v.props)
	v.props.Deref()
	v.props.Limits.Deref()
	v.props.Free()

	vulkan.GetPhysicalDeviceFeatures(vpd, &v.features)
	v.features.Deref()
	v.features.Free()

	var mp vulkan.PhysicalDeviceMemoryProperties
	vulkan.GetPhysicalDeviceMemoryProperties(vpd, &mp)
	mp.Deref()
	mp.Free()
	for i := 0; i < int(mp.MemoryHeapCount) && i < len(mp.MemoryHeaps); i++ {
		h := &mp.MemoryHeaps[i]
		h.Deref()
		v.heaps = append(v.heaps, memHeap{size: uint64(h.Size), flags: uint32(h.Flags)})
	}
	for i := 0; i < int(mp.MemoryTypeCount) && i < len(mp.MemoryTypes); i++ {
		t := &mp.MemoryTypes[i]
		t.Deref()
		v.types = append(v.types, memType{flags: uint32(t.PropertyFlags), heap: t.HeapIndex})
	}

	var n uint32
	vulkan.GetPhysicalDeviceQueueFamilyProperties(vpd, &n, nil)
	if n > 0 {
		qs := make([]vulkan.QueueFamilyProperties, n)
		vulkan.GetPhysicalDeviceQueueFamilyProperties(vpd, &n, qs)
		v.queues = qs[:min(int(n), len(qs))]
		for i := range v.queues {
			v.queues[i].Deref()
		}
	}
	return v
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
