// Package vk is vkzip's Vulkan compute plumbing: loader, instance (with
// optional validation), device discovery and selection, buffers, staging
// transfers, compute pipelines, descriptor bindings, command recording and
// submission, timestamps, timeline semaphores and external memory. It knows
// nothing about codecs or formats.
//
// # Loading
//
// The Vulkan loader (libvulkan.so.1, or $VKZIP_VULKAN_LIB) is dlopened
// once per process and also handed to github.com/vulkan-go/vulkan. All
// Vulkan calls of this package go through its own small cgo layer (vkz.h,
// vkz.c) with function pointers fetched via vkGetInstanceProcAddr /
// vkGetDeviceProcAddr and NULL-checked; create-info chains are built on
// the C stack, so no Go pointer is stored in a Vulkan struct. Without cgo
// the package builds as a stub whose NewInstance returns ErrNoVulkan.
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
