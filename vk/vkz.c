//go:build cgo

// C side of package vk: loader, function tables and the few helpers that
// build Vulkan create-info chains. Chains live on the C stack of these
// helpers, so no Go pointer ever ends up inside a Vulkan struct.

#ifndef _GNU_SOURCE
#define _GNU_SOURCE // dl_iterate_phdr, RTLD_NODELETE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "vkz.h"
#include "_cgo_export.h"

#define VKZ_MAX_BINDINGS 64

// Layouts of the VK_KHR_pipeline_executable_properties structs (see
// vkz.h), as fixed by the Vulkan headers for LP64 ABIs.
#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__) || (defined(__riscv) && __riscv_xlen == 64)
_Static_assert(offsetof(VkPipelineExecutablePropertiesKHR, stages) == 16, "stages offset");
_Static_assert(offsetof(VkPipelineExecutablePropertiesKHR, name) == 20, "name offset");
_Static_assert(offsetof(VkPipelineExecutablePropertiesKHR, description) == 276, "description offset");
_Static_assert(offsetof(VkPipelineExecutablePropertiesKHR, subgroupSize) == 532, "subgroupSize offset");
_Static_assert(sizeof(VkPipelineExecutablePropertiesKHR) == 536, "VkPipelineExecutablePropertiesKHR size");
_Static_assert(sizeof(VkPipelineExecutableStatisticValueKHR) == 8, "statistic value size");
_Static_assert(_Alignof(VkPipelineExecutableStatisticValueKHR) == 8, "statistic value alignment");
_Static_assert(offsetof(VkPipelineExecutableStatisticKHR, name) == 16, "statistic name offset");
_Static_assert(offsetof(VkPipelineExecutableStatisticKHR, description) == 272, "statistic description offset");
_Static_assert(offsetof(VkPipelineExecutableStatisticKHR, format) == 528, "statistic format offset");
_Static_assert(offsetof(VkPipelineExecutableStatisticKHR, value) == 536, "statistic value offset");
_Static_assert(sizeof(VkPipelineExecutableStatisticKHR) == 544, "VkPipelineExecutableStatisticKHR size");
_Static_assert(offsetof(VkPipelineInfoKHR, pipeline) == 16 && sizeof(VkPipelineInfoKHR) == 24, "VkPipelineInfoKHR");
_Static_assert(offsetof(VkPipelineExecutableInfoKHR, executableIndex) == 24 && sizeof(VkPipelineExecutableInfoKHR) == 32,
	"VkPipelineExecutableInfoKHR");
_Static_assert(sizeof(VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR) == 24, "pipeline executable features");
#endif

static PFN_vkGetInstanceProcAddr g_gipa;

// open_loader dlopens path and looks up vkGetInstanceProcAddr; on failure
// it writes a message into err (caller-owned) and returns NULL.
static void* open_loader(const char* path, void** handle, char* err, size_t errLen) {
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		snprintf(err, errLen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	void* f = dlsym(h, "vkGetInstanceProcAddr");
	if (!f) {
		snprintf(err, errLen, "%s: no vkGetInstanceProcAddr symbol", path);
		dlclose(h);
		return NULL;
	}
	*handle = h;
	return f;
}

int vkz_load(const char* path, char* err, size_t errLen) {
	void* h = NULL;
	void* f = open_loader(path, &h, err, errLen);
	if (!f) return 0;
	// Never dlclose'd: vulkan-go and every Instance keep pointers into it.
	g_gipa = (PFN_vkGetInstanceProcAddr)f;
	return 1;
}

// vkz_try_load checks that path is a usable Vulkan loader without making
// it the process loader (test hook for bad library paths).
int vkz_try_load(const char* path, char* err, size_t errLen) {
	void* h = NULL;
	void* f = open_loader(path, &h, err, errLen);
	if (!f) return 0;
	dlclose(h);
	return 1;
}

// Libraries pinned by vkz_pin_libraries (names, to pin each only once).
#define VKZ_MAX_PINNED 1024
static char* g_pinned[VKZ_MAX_PINNED];
static int g_npinned;

typedef struct {
	char* names[VKZ_MAX_PINNED];
	int n;
} lib_list;

static int collect_lib(struct dl_phdr_info* info, size_t size, void* data) {
	(void)size;
	lib_list* l = data;
	const char* name = info->dlpi_name;
	if (!name || !name[0] || l->n >= VKZ_MAX_PINNED) return 0;
	for (int i = 0; i < g_npinned; i++)
		if (strcmp(g_pinned[i], name) == 0) return 0;
	l->names[l->n++] = strdup(name);
	return 0;
}

// vkz_pin_libraries makes every currently loaded shared library
// undeletable. The loader dlopens drivers and layers on each
// vkCreateInstance and dlcloses them on vkDestroyInstance; drivers with
// initial-exec TLS (NVIDIA's libnvidia-tls) then leak static TLS on every
// cycle until dlopen fails ("cannot allocate memory in static TLS block")
// and vkCreateInstance reports no drivers. Pinned libraries load once.
// Not thread-safe: the Go side serialises calls.
void vkz_pin_libraries(void) {
	lib_list* l = calloc(1, sizeof *l);
	if (!l) return;
	dl_iterate_phdr(collect_lib, l); // dlopen is not allowed inside the callback
	for (int i = 0; i < l->n; i++) {
		void* h = dlopen(l->names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
		if (h && g_npinned < VKZ_MAX_PINNED) {
			g_pinned[g_npinned++] = l->names[i]; // keeps the reference: never dlclose'd
		} else {
			free(l->names[i]);
		}
	}
	free(l);
}

void* vkz_gipa_ptr(void) { return (void*)g_gipa; }

// vkz_resolve looks up the entry points package vk calls through
// vulkan-go (names from Go), only to compare their addresses between
// instances; the C layer never calls them.
void vkz_resolve(VkInstance inst, const char* const* names, uint32_t n, uintptr_t* out) {
	for (uint32_t i = 0; i < n; i++) out[i] = (uintptr_t)g_gipa(inst, names[i]);
}

uint32_t vkz_instance_version(void) {
	VkResult (*ev)(uint32_t*) = (VkResult (*)(uint32_t*))g_gipa(NULL, "vkEnumerateInstanceVersion");
	uint32_t v = (1u << 22); // 1.0.0 when the 1.1 entry point is absent
	if (ev && ev(&v) != 0) v = (1u << 22);
	return v;
}

VkResult vkz_enum_instance_extensions(uint32_t* count, VkExtensionProperties* out) {
	VkResult (*f)(const char*, uint32_t*, VkExtensionProperties*) =
		(VkResult (*)(const char*, uint32_t*, VkExtensionProperties*))g_gipa(NULL, "vkEnumerateInstanceExtensionProperties");
	if (!f) return VKZ_MISSING_ENTRY_POINT;
	return f(NULL, count, out);
}

// Process-global trampoline; pUserData carries the cgo.Handle of the Go
// Instance, so messages are routed to the instance that produced them.
static VkBool32 vkz_debug_cb(uint32_t severity, VkFlags types,
	const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
	if (!data) return 0;
	vkzGoDebugMessage((uintptr_t)user, severity, types, data->messageIdNumber,
		(char*)data->pMessageIdName, (char*)data->pMessage);
	return 0; // never abort the call that triggered the message
}

static void fill_messenger_info(VkDebugUtilsMessengerCreateInfoEXT* mi, uintptr_t userData) {
	memset(mi, 0, sizeof *mi);
	mi->sType = VKZ_ST_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
	mi->messageSeverity = 0x100 | 0x1000;  // WARNING | ERROR
	mi->messageType = 0x1 | 0x2 | 0x4;     // GENERAL | VALIDATION | PERFORMANCE
	mi->pfnUserCallback = vkz_debug_cb;
	mi->pUserData = (void*)userData;
}

#define LOADI(field, name) in->field = (void*)g_gipa(inst, name)

VkResult vkz_create_instance(const char* appName, uint32_t apiVersion, uint32_t flags,
	const char** layers, uint32_t layerCount, const char** exts, uint32_t extCount,
	int debugUtils, uintptr_t userData, vkz_inst** out, const char** missing) {
	*out = NULL;
	*missing = NULL;
	VkResult (*create)(const VkInstanceCreateInfo*, const void*, VkInstance*) =
		(VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*))g_gipa(NULL, "vkCreateInstance");
	if (!create) {
		*missing = "vkCreateInstance";
		return VKZ_MISSING_ENTRY_POINT;
	}
	VkApplicationInfo app;
	memset(&app, 0, sizeof app);
	app.sType = VKZ_ST_APPLICATION_INFO;
	app.pApplicationName = appName;
	app.pEngineName = "vkzip";
	app.apiVersion = apiVersion;

	VkDebugUtilsMessengerCreateInfoEXT mi;
	fill_messenger_info(&mi, userData);

	VkInstanceCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_INSTANCE_CREATE_INFO;
	ci.pNext = debugUtils ? &mi : NULL; // also catches create/destroy messages
	ci.flags = flags;
	ci.pApplicationInfo = &app;
	ci.enabledLayerCount = layerCount;
	ci.ppEnabledLayerNames = layers;
	ci.enabledExtensionCount = extCount;
	ci.ppEnabledExtensionNames = exts;

	VkInstance inst = NULL;
	VkResult r = create(&ci, NULL, &inst);
	if (r != 0) return r;

	vkz_inst* in = calloc(1, sizeof *in);
	if (!in) {
		void (*destroy)(VkInstance, const void*) = (void*)g_gipa(inst, "vkDestroyInstance");
		if (destroy) destroy(inst, NULL);
		return -1; // VK_ERROR_OUT_OF_HOST_MEMORY
	}
	in->instance = inst;
	in->apiVersion = apiVersion;
	LOADI(DestroyInstance, "vkDestroyInstance");
	LOADI(EnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties");
	LOADI(CreateDevice, "vkCreateDevice");
	LOADI(GetDeviceProcAddr, "vkGetDeviceProcAddr");
	if (apiVersion >= ((1u << 22) | (1u << 12))) {
		LOADI(GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2");
		LOADI(GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
	}
	if (!in->GetPhysicalDeviceProperties2) LOADI(GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2KHR");
	if (!in->GetPhysicalDeviceFeatures2) LOADI(GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2KHR");

	const char* req = NULL;
	if (!in->DestroyInstance) req = "vkDestroyInstance";
	else if (!in->EnumerateDeviceExtensionProperties) req = "vkEnumerateDeviceExtensionProperties";
	else if (!in->CreateDevice) req = "vkCreateDevice";
	else if (!in->GetDeviceProcAddr) req = "vkGetDeviceProcAddr";
	if (req) {
		*missing = req;
		if (in->DestroyInstance) in->DestroyInstance(inst, NULL);
		free(in);
		return VKZ_MISSING_ENTRY_POINT;
	}

	if (debugUtils) {
		LOADI(CreateDebugUtilsMessengerEXT, "vkCreateDebugUtilsMessengerEXT");
		LOADI(DestroyDebugUtilsMessengerEXT, "vkDestroyDebugUtilsMessengerEXT");
		if (in->CreateDebugUtilsMessengerEXT && in->DestroyDebugUtilsMessengerEXT) {
			r = in->CreateDebugUtilsMessengerEXT(inst, &mi, NULL, &in->messenger);
			if (r != 0) in->messenger = 0;
		}
	}
	*out = in;
	return 0;
}

void vkz_destroy_instance(vkz_inst* in) {
	if (!in) return;
	if (in->messenger && in->DestroyDebugUtilsMessengerEXT)
		in->DestroyDebugUtilsMessengerEXT(in->instance, in->messenger, NULL);
	in->DestroyInstance(in->instance, NULL);
	free(in);
}

// vkz_query_pdev fills the 1.1+ structs of pd (apiVersion: the device's);
// they need a 1.1 device, so for a 1.0 device haveProps2 stays 0.
void vkz_query_pdev(vkz_inst* in, VkPhysicalDevice pd, uint32_t apiVersion, int driverProps, int sizeControl, int timeline, int execProps, int hostQueryReset, vkz_pdev_info* o) {
	memset(o, 0, sizeof *o);
	if (!in->GetPhysicalDeviceProperties2 || apiVersion < ((1u << 22) | (1u << 12))) return;
	VkPhysicalDeviceProperties2 p2;
	memset(&p2, 0, sizeof p2);
	p2.sType = VKZ_ST_PHYSICAL_DEVICE_PROPERTIES_2;
	o->subgroup.sType = VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
	o->id.sType = VKZ_ST_PHYSICAL_DEVICE_ID_PROPERTIES;
	o->maint3.sType = VKZ_ST_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
	p2.pNext = &o->subgroup;
	o->subgroup.pNext = &o->id;
	o->id.pNext = &o->maint3;
	void** tail = &o->maint3.pNext;
	if (driverProps) {
		o->driver.sType = VKZ_ST_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
		*tail = &o->driver;
		tail = &o->driver.pNext;
	}
	if (sizeControl) {
		o->sizeControl.sType = VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES;
		*tail = &o->sizeControl;
		tail = &o->sizeControl.pNext;
	}
	in->GetPhysicalDeviceProperties2(pd, &p2);
	o->haveProps2 = 1;
	o->haveDriver = driverProps;
	o->haveSizeControl = sizeControl;
	// Clear chain pointers: they point into this struct, which Go copies.
	o->subgroup.pNext = o->id.pNext = o->maint3.pNext = o->driver.pNext = o->sizeControl.pNext = NULL;

	if (in->GetPhysicalDeviceFeatures2 && (sizeControl || timeline || execProps || hostQueryReset)) {
		VkPhysicalDeviceFeatures2 f2;
		memset(&f2, 0, sizeof f2);
		f2.sType = VKZ_ST_PHYSICAL_DEVICE_FEATURES_2;
		void** t = &f2.pNext;
		if (sizeControl) {
			o->sizeControlFeatures.sType = VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
			*t = &o->sizeControlFeatures;
			t = &o->sizeControlFeatures.pNext;
		}
		if (timeline) {
			o->timelineFeatures.sType = VKZ_ST_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
			*t = &o->timelineFeatures;
			t = &o->timelineFeatures.pNext;
		}
		if (execProps) {
			o->execPropsFeatures.sType = VKZ_ST_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
			*t = &o->execPropsFeatures;
			t = &o->execPropsFeatures.pNext;
		}
		if (hostQueryReset) {
			o->hostQueryResetFeatures.sType = VKZ_ST_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES;
			*t = &o->hostQueryResetFeatures;
			t = &o->hostQueryResetFeatures.pNext;
		}
		in->GetPhysicalDeviceFeatures2(pd, &f2);
		o->haveTimeline = timeline;
		o->haveExecProps = execProps;
		o->haveHostQueryReset = hostQueryReset;
		o->sizeControlFeatures.pNext = o->timelineFeatures.pNext = o->execPropsFeatures.pNext = NULL;
		o->hostQueryResetFeatures.pNext = NULL;
	}
}

VkResult vkz_enum_device_extensions(vkz_inst* in, VkPhysicalDevice pd, uint32_t* count, VkExtensionProperties* out) {
	return in->EnumerateDeviceExtensionProperties(pd, NULL, count, out);
}

#define LOADD(field, name) d->field = (void*)in->GetDeviceProcAddr(dev, name)

VkResult vkz_create_device(vkz_inst* in, VkPhysicalDevice pd, const vkz_dev_opts* o, vkz_dev** out, const char** missing) {
	*out = NULL;
	*missing = NULL;
	float prio[VKZ_MAX_QUEUES] = {1, 1, 1, 1, 1, 1, 1, 1};
	uint32_t nq = o->queueCount;
	if (nq < 1) nq = 1;
	if (nq > VKZ_MAX_QUEUES) nq = VKZ_MAX_QUEUES;
	VkDeviceQueueCreateInfo qi;
	memset(&qi, 0, sizeof qi);
	qi.sType = VKZ_ST_DEVICE_QUEUE_CREATE_INFO;
	qi.queueFamilyIndex = o->queueFamily;
	qi.queueCount = nq;
	qi.pQueuePriorities = prio;

	// Core features stay VK_FALSE but shaderInt64 and shaderInt16 when asked for: in particular
	// robustBufferAccess is explicitly disabled (it costs bounds checks on every
	// storage access).
	VkPhysicalDeviceFeatures2 f2;
	memset(&f2, 0, sizeof f2);
	f2.sType = VKZ_ST_PHYSICAL_DEVICE_FEATURES_2;
	if (o->enableInt64) f2.features.rest[VKZ_FEATURE_SHADER_INT64 - 1] = 1;
	if (o->enableInt16) f2.features.rest[VKZ_FEATURE_SHADER_INT16 - 1] = 1;
	void** tail = &f2.pNext;
	VkPhysicalDeviceSubgroupSizeControlFeatures sc;
	memset(&sc, 0, sizeof sc);
	if (o->enableSizeControl || o->enableFullSubgroups) {
		sc.sType = VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
		sc.subgroupSizeControl = o->enableSizeControl ? 1 : 0;
		sc.computeFullSubgroups = o->enableFullSubgroups ? 1 : 0;
		*tail = &sc;
		tail = &sc.pNext;
	}
	VkPhysicalDeviceTimelineSemaphoreFeatures tl;
	memset(&tl, 0, sizeof tl);
	if (o->enableTimeline) {
		tl.sType = VKZ_ST_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES;
		tl.timelineSemaphore = 1;
		*tail = &tl;
		tail = &tl.pNext;
	}
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR ep;
	memset(&ep, 0, sizeof ep);
	if (o->enableExecProps) {
		ep.sType = VKZ_ST_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
		ep.pipelineExecutableInfo = 1;
		*tail = &ep;
		tail = &ep.pNext;
	}

	VkPhysicalDeviceHostQueryResetFeatures hq;
	memset(&hq, 0, sizeof hq);
	if (o->enableHostQueryReset) {
		hq.sType = VKZ_ST_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES;
		hq.hostQueryReset = 1;
		*tail = &hq;
		tail = &hq.pNext;
	}

	VkDeviceCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_DEVICE_CREATE_INFO;
	ci.pNext = &f2;
	ci.queueCreateInfoCount = 1;
	ci.pQueueCreateInfos = &qi;
	ci.enabledExtensionCount = o->extensionCount;
	ci.ppEnabledExtensionNames = o->extensions;
	ci.pEnabledFeatures = NULL; // features come from f2

	VkDevice dev = NULL;
	VkResult r = in->CreateDevice(pd, &ci, NULL, &dev);
	if (r != 0) return r;

	vkz_dev* d = calloc(1, sizeof *d);
	if (!d) return -1;
	d->device = dev;
	d->queueFamily = o->queueFamily;
	LOADD(QueueSubmit, "vkQueueSubmit");
	LOADD(CreateBuffer, "vkCreateBuffer");
	LOADD(AllocateMemory, "vkAllocateMemory");
	LOADD(CreateShaderModule, "vkCreateShaderModule");
	LOADD(DestroyShaderModule, "vkDestroyShaderModule");
	LOADD(CreatePipelineCache, "vkCreatePipelineCache");
	LOADD(CreateDescriptorSetLayout, "vkCreateDescriptorSetLayout");
	LOADD(CreatePipelineLayout, "vkCreatePipelineLayout");
	LOADD(CreateComputePipelines, "vkCreateComputePipelines");
	LOADD(CreateDescriptorPool, "vkCreateDescriptorPool");
	LOADD(AllocateDescriptorSets, "vkAllocateDescriptorSets");
	LOADD(UpdateDescriptorSets, "vkUpdateDescriptorSets");
	LOADD(AllocateCommandBuffers, "vkAllocateCommandBuffers");
	LOADD(ResetCommandPool, "vkResetCommandPool");
	LOADD(BeginCommandBuffer, "vkBeginCommandBuffer");
	LOADD(CreateSemaphore, "vkCreateSemaphore");
	LOADD(CmdPipelineBarrier, "vkCmdPipelineBarrier");
	LOADD(CmdCopyBuffer, "vkCmdCopyBuffer");

	// Check every required pointer: calling a NULL one is a segfault. On a
	// missing one the table is returned anyway (*out), so the Go side can
	// destroy the device through vulkan-go.
	static const char* names[] = {
		"vkQueueSubmit", "vkCreateBuffer",
		"vkAllocateMemory", "vkCreateShaderModule", "vkDestroyShaderModule", "vkCreatePipelineCache",
		"vkCreateDescriptorSetLayout", "vkCreatePipelineLayout", "vkCreateComputePipelines",
		"vkCreateDescriptorPool", "vkAllocateDescriptorSets", "vkUpdateDescriptorSets",
		"vkAllocateCommandBuffers", "vkResetCommandPool", "vkBeginCommandBuffer", "vkCreateSemaphore", "vkCmdPipelineBarrier",
		"vkCmdCopyBuffer",
	};
	void* ptrs[] = {
		d->QueueSubmit, d->CreateBuffer,
		d->AllocateMemory, d->CreateShaderModule, d->DestroyShaderModule, d->CreatePipelineCache,
		d->CreateDescriptorSetLayout, d->CreatePipelineLayout, d->CreateComputePipelines,
		d->CreateDescriptorPool, d->AllocateDescriptorSets, d->UpdateDescriptorSets,
		d->AllocateCommandBuffers, d->ResetCommandPool, d->BeginCommandBuffer, d->CreateSemaphore, d->CmdPipelineBarrier,
		d->CmdCopyBuffer,
	};
	_Static_assert(sizeof names / sizeof names[0] == sizeof ptrs / sizeof ptrs[0], "names and ptrs differ");
	for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
		if (!ptrs[i]) {
			*missing = names[i];
			*out = d;
			return VKZ_MISSING_ENTRY_POINT;
		}
	}

	// Optional entry points; NULL-checked by the Go side before use.
	LOADD(GetMemoryFdKHR, "vkGetMemoryFdKHR");
	LOADD(GetSemaphoreFdKHR, "vkGetSemaphoreFdKHR");
	if (o->enableTimeline) {
		LOADD(GetSemaphoreCounterValue, "vkGetSemaphoreCounterValue");
		if (!d->GetSemaphoreCounterValue) LOADD(GetSemaphoreCounterValue, "vkGetSemaphoreCounterValueKHR");
		LOADD(WaitSemaphores, "vkWaitSemaphores");
		if (!d->WaitSemaphores) LOADD(WaitSemaphores, "vkWaitSemaphoresKHR");
		LOADD(SignalSemaphore, "vkSignalSemaphore");
		if (!d->SignalSemaphore) LOADD(SignalSemaphore, "vkSignalSemaphoreKHR");
	}
	if (o->enableHostQueryReset) {
		LOADD(ResetQueryPool, "vkResetQueryPool");
		if (!d->ResetQueryPool) LOADD(ResetQueryPool, "vkResetQueryPoolEXT");
	}
	if (o->enableExecProps) {
		LOADD(GetPipelineExecutablePropertiesKHR, "vkGetPipelineExecutablePropertiesKHR");
		LOADD(GetPipelineExecutableStatisticsKHR, "vkGetPipelineExecutableStatisticsKHR");
	}

	d->queueCount = nq; // queues[] is filled by the Go side (vkGetDeviceQueue through vulkan-go)
	*out = d;
	return 0;
}

VkResult vkz_create_buffer(vkz_dev* d, VkDeviceSize size, VkFlags usage, VkFlags extHandleTypes, VkBuffer* out) {
	VkExternalMemoryBufferCreateInfo ext;
	memset(&ext, 0, sizeof ext);
	ext.sType = VKZ_ST_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
	ext.handleTypes = extHandleTypes;
	VkBufferCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_BUFFER_CREATE_INFO;
	ci.pNext = extHandleTypes ? &ext : NULL;
	ci.size = size;
	ci.usage = usage;
	ci.sharingMode = 0; // EXCLUSIVE: one queue
	return d->CreateBuffer(d->device, &ci, NULL, out);
}

VkResult vkz_alloc_memory(vkz_dev* d, VkDeviceSize size, uint32_t typeIndex, VkBuffer dedicated, VkFlags exportTypes, int importFd, VkDeviceMemory* out) {
	VkMemoryDedicatedAllocateInfo ded;
	memset(&ded, 0, sizeof ded);
	ded.sType = VKZ_ST_MEMORY_DEDICATED_ALLOCATE_INFO;
	ded.buffer = dedicated;
	VkExportMemoryAllocateInfo exp;
	memset(&exp, 0, sizeof exp);
	exp.sType = VKZ_ST_EXPORT_MEMORY_ALLOCATE_INFO;
	exp.handleTypes = exportTypes;
	VkImportMemoryFdInfoKHR imp;
	memset(&imp, 0, sizeof imp);
	imp.sType = VKZ_ST_IMPORT_MEMORY_FD_INFO_KHR;
	imp.handleType = 0x1; // OPAQUE_FD
	imp.fd = importFd;

	VkMemoryAllocateInfo ai;
	memset(&ai, 0, sizeof ai);
	ai.sType = VKZ_ST_MEMORY_ALLOCATE_INFO;
	ai.allocationSize = size;
	ai.memoryTypeIndex = typeIndex;
	const void** tail = &ai.pNext;
	if (dedicated) {
		*tail = &ded;
		tail = &ded.pNext;
	}
	if (exportTypes) {
		*tail = &exp;
		tail = &exp.pNext;
	}
	if (importFd >= 0) {
		*tail = &imp;
		tail = &imp.pNext;
	}
	return d->AllocateMemory(d->device, &ai, NULL, out);
}

VkResult vkz_get_memory_fd(vkz_dev* d, VkDeviceMemory mem, int* fd) {
	if (!d->GetMemoryFdKHR) return VKZ_MISSING_ENTRY_POINT;
	VkMemoryGetFdInfoKHR gi;
	memset(&gi, 0, sizeof gi);
	gi.sType = VKZ_ST_MEMORY_GET_FD_INFO_KHR;
	gi.memory = mem;
	gi.handleType = 0x1; // OPAQUE_FD
	return d->GetMemoryFdKHR(d->device, &gi, fd);
}

VkResult vkz_create_pipeline_cache(vkz_dev* d, const void* data, size_t size, VkPipelineCache* out) {
	VkPipelineCacheCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_PIPELINE_CACHE_CREATE_INFO;
	ci.initialDataSize = size;
	ci.pInitialData = size ? data : NULL;
	return d->CreatePipelineCache(d->device, &ci, NULL, out);
}

VkResult vkz_create_pipeline(vkz_dev* d, VkPipelineCache cache, const uint32_t* code, size_t codeSize,
	const char* entry, uint32_t bindings, uint32_t pushSize, const uint32_t* specIDs, const uint32_t* specVals,
	uint32_t specCount, uint32_t requiredSubgroupSize, uint32_t stageFlags, VkFlags pipelineFlags,
	VkDescriptorSetLayout* dsl, VkPipelineLayout* layout, VkPipeline* pipe) {
	*dsl = 0;
	*layout = 0;
	*pipe = 0;
	if (bindings > VKZ_MAX_BINDINGS || specCount > VKZ_MAX_BINDINGS) return -3; // INITIALIZATION_FAILED

	VkShaderModuleCreateInfo smi;
	memset(&smi, 0, sizeof smi);
	smi.sType = VKZ_ST_SHADER_MODULE_CREATE_INFO;
	smi.codeSize = codeSize;
	smi.pCode = code;
	VkShaderModule mod = 0;
	VkResult r = d->CreateShaderModule(d->device, &smi, NULL, &mod);
	if (r != 0) return r;

	VkDescriptorSetLayoutBinding b[VKZ_MAX_BINDINGS];
	memset(b, 0, sizeof b);
	for (uint32_t i = 0; i < bindings; i++) {
		b[i].binding = i;
		b[i].descriptorType = 7; // STORAGE_BUFFER
		b[i].descriptorCount = 1;
		b[i].stageFlags = 0x20; // COMPUTE
	}
	VkDescriptorSetLayoutCreateInfo li;
	memset(&li, 0, sizeof li);
	li.sType = VKZ_ST_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
	li.bindingCount = bindings;
	li.pBindings = bindings ? b : NULL;
	r = d->CreateDescriptorSetLayout(d->device, &li, NULL, dsl);
	if (r != 0) goto done;

	VkPushConstantRange pr = {0x20, 0, pushSize};
	VkPipelineLayoutCreateInfo pli;
	memset(&pli, 0, sizeof pli);
	pli.sType = VKZ_ST_PIPELINE_LAYOUT_CREATE_INFO;
	pli.setLayoutCount = 1;
	pli.pSetLayouts = dsl;
	pli.pushConstantRangeCount = pushSize ? 1 : 0;
	pli.pPushConstantRanges = pushSize ? &pr : NULL;
	r = d->CreatePipelineLayout(d->device, &pli, NULL, layout);
	if (r != 0) goto done;

	VkSpecializationMapEntry me[VKZ_MAX_BINDINGS];
	uint32_t vals[VKZ_MAX_BINDINGS];
	for (uint32_t i = 0; i < specCount; i++) {
		me[i].constantID = specIDs[i];
		me[i].offset = i * 4;
		me[i].size = 4;
		vals[i] = specVals[i];
	}
	VkSpecializationInfo si;
	memset(&si, 0, sizeof si);
	si.mapEntryCount = specCount;
	si.pMapEntries = me;
	si.dataSize = specCount * 4;
	si.pData = vals;

	VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs;
	memset(&rs, 0, sizeof rs);
	rs.sType = VKZ_ST_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO;
	rs.requiredSubgroupSize = requiredSubgroupSize;

	VkComputePipelineCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_COMPUTE_PIPELINE_CREATE_INFO;
	ci.flags = pipelineFlags;
	ci.stage.sType = VKZ_ST_PIPELINE_SHADER_STAGE_CREATE_INFO;
	ci.stage.pNext = requiredSubgroupSize ? &rs : NULL;
	ci.stage.flags = stageFlags;
	ci.stage.stage = 0x20; // COMPUTE
	ci.stage.module = mod;
	ci.stage.pName = entry;
	ci.stage.pSpecializationInfo = specCount ? &si : NULL;
	ci.layout = *layout;
	ci.basePipelineIndex = -1;
	r = d->CreateComputePipelines(d->device, cache, 1, &ci, NULL, pipe);
done:
	// On failure *dsl, *layout and *pipe hold what was created (0
	// otherwise); the Go side destroys them through vulkan-go.
	d->DestroyShaderModule(d->device, mod, NULL);
	return r;
}

// vkz_pipeline_executables is one call of the two-call enumeration of
// vkGetPipelineExecutablePropertiesKHR: out == NULL queries the count,
// otherwise out holds *count structs (sType/pNext are set here).
VkResult vkz_pipeline_executables(vkz_dev* d, VkPipeline pipe, uint32_t* count, VkPipelineExecutablePropertiesKHR* out) {
	if (!d->GetPipelineExecutablePropertiesKHR) return VKZ_MISSING_ENTRY_POINT;
	VkPipelineInfoKHR pi;
	memset(&pi, 0, sizeof pi);
	pi.sType = VKZ_ST_PIPELINE_INFO_KHR;
	pi.pipeline = pipe;
	if (out) {
		memset(out, 0, sizeof(*out) * (size_t)*count);
		for (uint32_t i = 0; i < *count; i++) out[i].sType = VKZ_ST_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
	}
	return d->GetPipelineExecutablePropertiesKHR(d->device, &pi, count, out);
}

// vkz_pipeline_statistics is the same for vkGetPipelineExecutableStatisticsKHR
// of one executable.
VkResult vkz_pipeline_statistics(vkz_dev* d, VkPipeline pipe, uint32_t executable, uint32_t* count, VkPipelineExecutableStatisticKHR* out) {
	if (!d->GetPipelineExecutableStatisticsKHR) return VKZ_MISSING_ENTRY_POINT;
	VkPipelineExecutableInfoKHR ei;
	memset(&ei, 0, sizeof ei);
	ei.sType = VKZ_ST_PIPELINE_EXECUTABLE_INFO_KHR;
	ei.pipeline = pipe;
	ei.executableIndex = executable;
	if (out) {
		memset(out, 0, sizeof(*out) * (size_t)*count);
		for (uint32_t i = 0; i < *count; i++) out[i].sType = VKZ_ST_PIPELINE_EXECUTABLE_STATISTIC_KHR;
	}
	return d->GetPipelineExecutableStatisticsKHR(d->device, &ei, count, out);
}

VkResult vkz_create_descriptor_set(vkz_dev* d, VkDescriptorSetLayout dsl, uint32_t bindings, VkDescriptorPool* pool, VkDescriptorSet* set) {
	*pool = 0;
	*set = 0;
	VkDescriptorPoolSize ps = {7, bindings ? bindings : 1};
	VkDescriptorPoolCreateInfo pi;
	memset(&pi, 0, sizeof pi);
	pi.sType = VKZ_ST_DESCRIPTOR_POOL_CREATE_INFO;
	pi.maxSets = 1;
	pi.poolSizeCount = 1;
	pi.pPoolSizes = &ps;
	VkResult r = d->CreateDescriptorPool(d->device, &pi, NULL, pool);
	if (r != 0) return r;
	VkDescriptorSetAllocateInfo ai;
	memset(&ai, 0, sizeof ai);
	ai.sType = VKZ_ST_DESCRIPTOR_SET_ALLOCATE_INFO;
	ai.descriptorPool = *pool;
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &dsl;
	r = d->AllocateDescriptorSets(d->device, &ai, set);
	if (r != 0) *set = 0; // *pool stays for the Go side to destroy
	return r;
}

void vkz_update_descriptor_set(vkz_dev* d, VkDescriptorSet set, uint32_t n, const uint64_t* bufs, const uint64_t* offs, const uint64_t* sizes) {
	VkDescriptorBufferInfo bi[VKZ_MAX_BINDINGS];
	VkWriteDescriptorSet w[VKZ_MAX_BINDINGS];
	if (n > VKZ_MAX_BINDINGS) n = VKZ_MAX_BINDINGS;
	memset(w, 0, sizeof(w[0]) * (n ? n : 1));
	for (uint32_t i = 0; i < n; i++) {
		bi[i].buffer = bufs[i];
		bi[i].offset = offs[i];
		bi[i].range = sizes[i];
		w[i].sType = VKZ_ST_WRITE_DESCRIPTOR_SET;
		w[i].dstSet = set;
		w[i].dstBinding = i;
		w[i].descriptorCount = 1;
		w[i].descriptorType = 7;
		w[i].pBufferInfo = &bi[i];
	}
	if (n) d->UpdateDescriptorSets(d->device, n, w, 0, NULL);
}

// vkz_alloc_command_buffer allocates one primary command buffer from pool.
VkResult vkz_alloc_command_buffer(vkz_dev* d, VkCommandPool pool, VkCommandBuffer* cb) {
	VkCommandBufferAllocateInfo ai;
	memset(&ai, 0, sizeof ai);
	ai.sType = VKZ_ST_COMMAND_BUFFER_ALLOCATE_INFO;
	ai.commandPool = pool;
	ai.level = 0; // PRIMARY
	ai.commandBufferCount = 1;
	return d->AllocateCommandBuffers(d->device, &ai, cb);
}

VkResult vkz_begin(vkz_dev* d, VkCommandPool pool, VkCommandBuffer cb) {
	VkResult r = d->ResetCommandPool(d->device, pool, 0);
	if (r != 0) return r;
	VkCommandBufferBeginInfo bi;
	memset(&bi, 0, sizeof bi);
	bi.sType = VKZ_ST_COMMAND_BUFFER_BEGIN_INFO;
	bi.flags = 0; // no ONE_TIME_SUBMIT: the buffer may be re-submitted
	return d->BeginCommandBuffer(cb, &bi);
}

void vkz_cmd_barrier(vkz_dev* d, VkCommandBuffer cb, VkFlags srcStage, VkFlags dstStage, VkFlags srcAccess, VkFlags dstAccess) {
	VkMemoryBarrier mb;
	mb.sType = VKZ_ST_MEMORY_BARRIER;
	mb.pNext = NULL;
	mb.srcAccessMask = srcAccess;
	mb.dstAccessMask = dstAccess;
	d->CmdPipelineBarrier(cb, srcStage, dstStage, 0, 1, &mb, 0, NULL, 0, NULL);
}

VkResult vkz_submit(vkz_dev* d, uint32_t queue, VkCommandBuffer cb, VkFence fence, uint32_t waitCount, const VkSemaphore* waits, const uint64_t* waitVals,
	uint32_t signalCount, const VkSemaphore* signals, const uint64_t* signalVals) {
	VkFlags stages[8];
	if (waitCount > 8 || signalCount > 8) return -3;
	for (uint32_t i = 0; i < waitCount; i++) stages[i] = 0x800 | 0x1000; // COMPUTE | TRANSFER
	VkTimelineSemaphoreSubmitInfo ts;
	memset(&ts, 0, sizeof ts);
	ts.sType = VKZ_ST_TIMELINE_SEMAPHORE_SUBMIT_INFO;
	ts.waitSemaphoreValueCount = waitVals ? waitCount : 0;
	ts.pWaitSemaphoreValues = waitVals;
	ts.signalSemaphoreValueCount = signalVals ? signalCount : 0;
	ts.pSignalSemaphoreValues = signalVals;
	VkSubmitInfo si;
	memset(&si, 0, sizeof si);
	si.sType = VKZ_ST_SUBMIT_INFO;
	si.pNext = (waitVals || signalVals) ? &ts : NULL;
	si.waitSemaphoreCount = waitCount;
	si.pWaitSemaphores = waits;
	si.pWaitDstStageMask = waitCount ? stages : NULL;
	si.commandBufferCount = 1;
	si.pCommandBuffers = &cb;
	si.signalSemaphoreCount = signalCount;
	si.pSignalSemaphores = signals;
	if (queue >= d->queueCount) return -3;
	return d->QueueSubmit(d->queues[queue], 1, &si, fence);
}

VkResult vkz_create_semaphore(vkz_dev* d, int timeline, uint64_t initial, VkFlags exportTypes, VkSemaphore* out) {
	VkSemaphoreTypeCreateInfo ti;
	memset(&ti, 0, sizeof ti);
	ti.sType = VKZ_ST_SEMAPHORE_TYPE_CREATE_INFO;
	ti.semaphoreType = 1; // TIMELINE
	ti.initialValue = initial;
	VkExportSemaphoreCreateInfo ei;
	memset(&ei, 0, sizeof ei);
	ei.sType = VKZ_ST_EXPORT_SEMAPHORE_CREATE_INFO;
	ei.handleTypes = exportTypes;
	VkSemaphoreCreateInfo ci;
	memset(&ci, 0, sizeof ci);
	ci.sType = VKZ_ST_SEMAPHORE_CREATE_INFO;
	const void** tail = &ci.pNext;
	if (timeline) {
		*tail = &ti;
		tail = &ti.pNext;
	}
	if (exportTypes) {
		*tail = &ei;
		tail = &ei.pNext;
	}
	return d->CreateSemaphore(d->device, &ci, NULL, out);
}

VkResult vkz_reset_query_pool(vkz_dev* d, VkQueryPool qp, uint32_t first, uint32_t count) {
	if (!d->ResetQueryPool) return VKZ_MISSING_ENTRY_POINT;
	d->ResetQueryPool(d->device, qp, first, count);
	return 0;
}

VkResult vkz_semaphore_value(vkz_dev* d, VkSemaphore s, uint64_t* v) {
	if (!d->GetSemaphoreCounterValue) return VKZ_MISSING_ENTRY_POINT;
	return d->GetSemaphoreCounterValue(d->device, s, v);
}

VkResult vkz_semaphore_wait(vkz_dev* d, VkSemaphore s, uint64_t v, uint64_t timeout) {
	if (!d->WaitSemaphores) return VKZ_MISSING_ENTRY_POINT;
	VkSemaphoreWaitInfo wi;
	memset(&wi, 0, sizeof wi);
	wi.sType = VKZ_ST_SEMAPHORE_WAIT_INFO;
	wi.semaphoreCount = 1;
	wi.pSemaphores = &s;
	wi.pValues = &v;
	return d->WaitSemaphores(d->device, &wi, timeout);
}

VkResult vkz_semaphore_signal(vkz_dev* d, VkSemaphore s, uint64_t v) {
	if (!d->SignalSemaphore) return VKZ_MISSING_ENTRY_POINT;
	VkSemaphoreSignalInfo si;
	memset(&si, 0, sizeof si);
	si.sType = VKZ_ST_SEMAPHORE_SIGNAL_INFO;
	si.semaphore = s;
	si.value = v;
	return d->SignalSemaphore(d->device, &si);
}

VkResult vkz_get_semaphore_fd(vkz_dev* d, VkSemaphore s, int* fd) {
	if (!d->GetSemaphoreFdKHR) return VKZ_MISSING_ENTRY_POINT;
	VkSemaphoreGetFdInfoKHR gi;
	memset(&gi, 0, sizeof gi);
	gi.sType = VKZ_ST_SEMAPHORE_GET_FD_INFO_KHR;
	gi.semaphore = s;
	gi.handleType = 0x1; // OPAQUE_FD
	return d->GetSemaphoreFdKHR(d->device, &gi, fd);
}
