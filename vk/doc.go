// Package vk is vkzip's Vulkan compute plumbing: loader, instance (with
// optional validation), device discovery and selection, buffers, staging
// transfers, compute pipelines, descriptor bindings, command recording and
// submission, timestamps, timeline semaphores and external memory. It knows
// nothing about codecs or formats.
//
// # Loading
//
// The Vulkan loader (libvulkan.so.1, or $VKZIP_VULKAN_LIB) is dlopened
// once per process. Its vkGetInstanceProcAddr serves both Vulkan bindings
// of this package: github.com/vulkan-go/vulkan (the 1.0 bindings) for
// every call it can make soundly, and a small own cgo layer (vkz.h, vkz.c)
// for the rest. Without cgo the package builds as a stub whose
// NewInstance returns ErrNoVulkan.
//
// # vulkan-go entry points
//
// Every entry point whose call carries no pNext chain and passes no Go
// memory inside a C struct goes through vulkan-go:
//
//	vkEnumerateInstanceLayerProperties          vkEnumeratePhysicalDevices
//	vkGetPhysicalDeviceProperties               vkGetPhysicalDeviceFeatures
//	vkGetPhysicalDeviceMemoryProperties         vkGetPhysicalDeviceQueueFamilyProperties
//	vkGetDeviceQueue                            vkDestroyDevice
//	vkDeviceWaitIdle                            vkGetBufferMemoryRequirements
//	vkBindBufferMemory                          vkMapMemory
//	vkUnmapMemory                               vkFreeMemory
//	vkDestroyBuffer                             vkGetPipelineCacheData
//	vkDestroyPipelineCache                      vkDestroyPipeline
//	vkDestroyPipelineLayout                     vkDestroyDescriptorSetLayout
//	vkDestroyDescriptorPool                     vkCreateCommandPool
//	vkDestroyCommandPool                        vkEndCommandBuffer
//	vkCreateFence                               vkDestroyFence
//	vkResetFences                               vkGetFenceStatus
//	vkWaitForFences                             vkCreateQueryPool
//	vkDestroyQueryPool                          vkGetQueryPoolResults
//	vkDestroySemaphore                          vkCmdBindPipeline
//	vkCmdBindDescriptorSets                     vkCmdPushConstants
//	vkCmdDispatch                               vkCmdFillBuffer
//	vkCmdResetQueryPool                         vkCmdWriteTimestamp
//
// What keeps this sound and fast:
//
//   - vulkan-go has one process-global function table. The first
//     instance fills it (vulkan.InitInstance); a later instance is
//     accepted only when the loader resolves every one of these entry
//     points to the same address for it (NewInstance fails with
//     ErrUnsupported otherwise). The Khronos loader returns its exported
//     trampolines, which dispatch through the handle they are given, so
//     one table serves every instance and device, layers or not.
//   - Dispatchable handles are loader-owned C addresses and convert as
//     pointers. Non-dispatchable handles are uint64 here but Go pointer
//     types in vulkan-go on 64-bit platforms, while a driver's value need
//     not be an address: they are stored only as uint64, reinterpreted in
//     the argument list of a call, and written by vulkan-go into a
//     standalone uint64 on creation. A created handle below 4096, which
//     the Go runtime refuses in a pointer slot, fails with ErrUnsupported.
//     Handle arrays that vulkan-go takes as slices (the bound descriptor
//     set, the fence) live in C memory.
//   - vulkan-go copies a struct to C on first use and caches the copy
//     (PassRef): a reused struct that changed would be ignored. Every
//     struct is therefore fresh per call, read back with Deref and
//     released with Free (vulkan-go never frees the copy itself).
//   - A struct costs vulkan-go about ten Go allocations per call, so only
//     creation and device queries pass one. Recording, submitting and
//     waiting call only struct-free vulkan-go functions with C-memory
//     arguments and allocate nothing (TestHotPathAllocs); Dispatch skips
//     the pipeline and descriptor-set binds when they are already bound.
//
// # C layer entry points
//
// vkz.c loads only the entry points below, each with the reason vulkan-go
// cannot make the call (TestCLayerEntryPointsDocumented compares this
// table with every entry-point name in vkz.c). Pointers are NULL-checked
// before use; create-info chains are built on the C stack of the call, so
// no Go pointer is stored in a Vulkan struct. Besides these, vkz_resolve
// looks up the vulkan-go entry points above, only to compare addresses
// between instances.
//
//	vkGetInstanceProcAddr                   the loader's entry point (dlsym); also handed to vulkan-go
//	vkEnumerateInstanceVersion              Vulkan 1.1
//	vkEnumerateInstanceExtensionProperties  vulkan-go passes pLayerName as a Go string's bytes: neither NUL-terminated nor NULL
//	vkCreateInstance                        pNext chain (debug messenger), string arrays
//	vkDestroyInstance                       also tears down an instance vulkan-go's table was refused for
//	vkCreateDebugUtilsMessengerEXT          extension; C callback
//	vkDestroyDebugUtilsMessengerEXT         extension
//	vkGetPhysicalDeviceProperties2          Vulkan 1.1; pNext chain
//	vkGetPhysicalDeviceProperties2KHR       extension alias of the above
//	vkGetPhysicalDeviceFeatures2            Vulkan 1.1; pNext chain
//	vkGetPhysicalDeviceFeatures2KHR         extension alias of the above
//	vkEnumerateDeviceExtensionProperties    pLayerName, as for the instance call
//	vkCreateDevice                          pNext feature chain, string arrays
//	vkGetDeviceProcAddr                     loads this table
//	vkQueueSubmit                           submit hot path: struct with timeline pNext; vulkan-go allocates per call
//	vkCmdPipelineBarrier                    recording hot path: barrier struct; vulkan-go allocates per call
//	vkResetCommandPool                      one crossing with vkBeginCommandBuffer per batch
//	vkBeginCommandBuffer                    begin-info struct on the per-batch path
//	vkUpdateDescriptorSets                  struct array holding pointers to structs
//	vkCmdCopyBuffer                         region struct array, on the Upload/Download path
//	vkAllocateCommandBuffers                its struct holds the pool handle in a Go pointer field in vulkan-go
//	vkCreateBuffer                          pNext (external memory)
//	vkAllocateMemory                        pNext (dedicated, export, import fd)
//	vkCreatePipelineCache                   struct holding the initial-data pointer
//	vkCreateShaderModule                    struct holding the code pointer
//	vkDestroyShaderModule                   the module never leaves the pipeline-creation call
//	vkCreateDescriptorSetLayout             struct holding the binding array
//	vkCreatePipelineLayout                  struct holding layout and push-range arrays
//	vkCreateComputePipelines                nested structs, specialization arrays, pNext (subgroup size)
//	vkCreateDescriptorPool                  struct holding the pool-size array
//	vkAllocateDescriptorSets                struct holding the layout array
//	vkCreateSemaphore                       pNext (timeline type, export)
//	vkGetSemaphoreCounterValue              Vulkan 1.2
//	vkGetSemaphoreCounterValueKHR           extension alias of the above
//	vkWaitSemaphores                        Vulkan 1.2; struct with arrays
//	vkWaitSemaphoresKHR                     extension alias of the above
//	vkSignalSemaphore                       Vulkan 1.2
//	vkSignalSemaphoreKHR                    extension alias of the above
//	vkResetQueryPool                        Vulkan 1.2
//	vkResetQueryPoolEXT                     extension alias of the above
//	vkGetMemoryFdKHR                        extension (external memory fd)
//	vkGetSemaphoreFdKHR                     extension (external semaphore fd)
//	vkGetPipelineExecutablePropertiesKHR    extension (compiler statistics)
//	vkGetPipelineExecutableStatisticsKHR    extension (compiler statistics)
//
// # Usage
//
//	inst, err := vk.NewInstance(vk.InstanceOptions{})   // VKZIP_VALIDATE=1 adds validation
//	devs, _ := inst.Devices()
//	info, err := vk.SelectDevice(devs, "")              // "" → $VKZIP_DEVICE → best usable
//	dev, err := inst.OpenDevice(info, vk.DeviceOptions{})
//	defer inst.Close()                                  // closes dev and everything in it
//
//	p, _ := dev.NewPipeline(vk.PipelineDesc{SPIRV: spv, Bindings: 2, PushConstantSize: 8,
//		Spec: []vk.SpecConst{{ID: 0, Value: 256}}})
//	in, _ := dev.NewBuffer(n*4, vk.DeviceLocal)
//	out, _ := dev.NewBuffer(n*4, vk.DeviceLocal)
//	_ = dev.Upload(ctx, in, 0, data)
//	b, _ := dev.NewBindings(p, []vk.BufferRange{{Buf: in}, {Buf: out}})
//	cmd, _ := dev.NewCommands()
//	_ = cmd.Begin()
//	cmd.Dispatch(p, b, push, groups, 1, 1)
//	cmd.Barrier()                                       // before a dependent dispatch
//	cmd.BarrierToHost()                                 // before host reads / Download
//	err = cmd.End()                                     // first recording error, if any
//	sub, err := dev.Submit(cmd)                         // re-submittable once finished
//	err = sub.Wait(ctx)
//	_ = dev.Download(ctx, result, out, 0)
//
// # Compiler statistics
//
// Where the device has VK_KHR_pipeline_executable_properties (NVIDIA,
// RADV, ANV; not lavapipe), OpenDevice enables it and reports
// EnabledFeatures.PipelineStatistics. A pipeline created with
// PipelineDesc.CaptureStatistics then returns the driver's compiler
// statistics (register count, shared memory, spills, ... as the driver
// names them) from Pipeline.Statistics; elsewhere the flag is ignored and
// Statistics returns ErrUnsupported.
//
// # Concurrency
//
// Instances, devices and all objects may be used from several goroutines.
// A Commands must be recorded and submitted by one goroutine at a time;
// each has its own command pool and fence, so goroutines with their own
// Commands record and keep submissions in flight concurrently. The only
// lock on the submit path is the per-queue mutex around vkQueueSubmit.
// Recording and submitting allocates nothing in Go.
//
// # Testing
//
// Device.InjectFault simulates VK_ERROR_DEVICE_LOST (and other results);
// LiveObjects counts live Vulkan objects; Instance.ValidationMessages
// collects validation-layer output per instance. Package vk/vktest opens
// a test device, skipping when Vulkan is missing unless
// VKZIP_REQUIRE_VULKAN=1.
//
// # Environment
//
// Packages vk and codec/... read only these variables; tuning knobs are
// options, never environment (DeviceOptions.Queues, and the codec kernels'
// knobs in internal/vktune, set by the lab command cmd/vkzip-lab):
//
//	VKZIP_DEVICE       default device selector of SelectDevice (EnvDevice):
//	                   an index or a name substring
//	VKZIP_VALIDATE     "1": enable the Khronos validation layer (EnvValidate)
//	VKZIP_VULKAN_LIB   path of the Vulkan loader (EnvVulkanLib; default
//	                   libvulkan.so.1)
//
// Tests also read VKZIP_REQUIRE_VULKAN ("1": fail instead of skipping where
// no Vulkan device opens; vk/vktest), VKZIP_SOAK ("full": the long versions
// of the stress tests), VKZIP_MUTATIONS (mutations per corruption test),
// VKZIP_LARGE_MIB (the size of the over-a-binding test),
// VKZIP_TEST_BOGUS_CHILD (a child process of the loader test) and Mesa's
// LP_NATIVE_VECTOR_WIDTH (the lavapipe vector width a test expects).
package vk
