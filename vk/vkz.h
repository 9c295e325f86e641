// Minimal Vulkan ABI declarations used by package vk.
//
// Only the structs, enums and entry-point types this package calls are
// declared; their layout is fixed by the Vulkan specification. We do not
// include system Vulkan headers (users do not have them installed) and
// vulkan-go's bundled 1.1.88 headers lack the 1.2/1.3 structs we need.
// Non-dispatchable handles are uint64_t so Go never holds them in pointer
// typed fields (driver handles need not be valid addresses).
#ifndef VKZ_H
#define VKZ_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t VkFlags;
typedef uint32_t VkBool32;
typedef uint64_t VkDeviceSize;
typedef int32_t VkResult;
typedef int32_t VkStructureType;

typedef struct VkInstance_T* VkInstance;
typedef struct VkPhysicalDevice_T* VkPhysicalDevice;
typedef struct VkDevice_T* VkDevice;
typedef struct VkQueue_T* VkQueue;
typedef struct VkCommandBuffer_T* VkCommandBuffer;

typedef uint64_t VkBuffer;
typedef uint64_t VkImage;
typedef uint64_t VkDeviceMemory;
typedef uint64_t VkShaderModule;
typedef uint64_t VkPipeline;
typedef uint64_t VkPipelineLayout;
typedef uint64_t VkPipelineCache;
typedef uint64_t VkDescriptorSetLayout;
typedef uint64_t VkDescriptorPool;
typedef uint64_t VkDescriptorSet;
typedef uint64_t VkCommandPool;
typedef uint64_t VkFence;
typedef uint64_t VkSemaphore;
typedef uint64_t VkQueryPool;
typedef uint64_t VkSampler;
typedef uint64_t VkDebugUtilsMessengerEXT;

// VkStructureType values.
enum {
	VKZ_ST_APPLICATION_INFO = 0,
	VKZ_ST_INSTANCE_CREATE_INFO = 1,
	VKZ_ST_DEVICE_QUEUE_CREATE_INFO = 2,
	VKZ_ST_DEVICE_CREATE_INFO = 3,
	VKZ_ST_SUBMIT_INFO = 4,
	VKZ_ST_MEMORY_ALLOCATE_INFO = 5,
	VKZ_ST_SEMAPHORE_CREATE_INFO = 9,
	VKZ_ST_BUFFER_CREATE_INFO = 12,
	VKZ_ST_SHADER_MODULE_CREATE_INFO = 16,
	VKZ_ST_PIPELINE_CACHE_CREATE_INFO = 17,
	VKZ_ST_PIPELINE_SHADER_STAGE_CREATE_INFO = 18,
	VKZ_ST_COMPUTE_PIPELINE_CREATE_INFO = 29,
	VKZ_ST_PIPELINE_LAYOUT_CREATE_INFO = 30,
	VKZ_ST_DESCRIPTOR_SET_LAYOUT_CREATE_INFO = 32,
	VKZ_ST_DESCRIPTOR_POOL_CREATE_INFO = 33,
	VKZ_ST_DESCRIPTOR_SET_ALLOCATE_INFO = 34,
	VKZ_ST_WRITE_DESCRIPTOR_SET = 35,
	VKZ_ST_COMMAND_BUFFER_ALLOCATE_INFO = 40,
	VKZ_ST_COMMAND_BUFFER_BEGIN_INFO = 42,
	VKZ_ST_MEMORY_BARRIER = 46,
	VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES = 1000094000,
	VKZ_ST_MEMORY_DEDICATED_ALLOCATE_INFO = 1000127001,
	VKZ_ST_PHYSICAL_DEVICE_FEATURES_2 = 1000059000,
	VKZ_ST_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001,
	VKZ_ST_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004,
	VKZ_ST_EXTERNAL_MEMORY_BUFFER_CREATE_INFO = 1000072000,
	VKZ_ST_EXPORT_MEMORY_ALLOCATE_INFO = 1000072002,
	VKZ_ST_IMPORT_MEMORY_FD_INFO_KHR = 1000074000,
	VKZ_ST_MEMORY_GET_FD_INFO_KHR = 1000074002,
	VKZ_ST_EXPORT_SEMAPHORE_CREATE_INFO = 1000077000,
	VKZ_ST_SEMAPHORE_GET_FD_INFO_KHR = 1000079001,
	VKZ_ST_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT = 1000128004,
	VKZ_ST_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES = 1000168000,
	VKZ_ST_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000,
	VKZ_ST_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES = 1000207000,
	VKZ_ST_SEMAPHORE_TYPE_CREATE_INFO = 1000207002,
	VKZ_ST_TIMELINE_SEMAPHORE_SUBMIT_INFO = 1000207003,
	VKZ_ST_SEMAPHORE_WAIT_INFO = 1000207004,
	VKZ_ST_SEMAPHORE_SIGNAL_INFO = 1000207005,
	VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES = 1000225000,
	VKZ_ST_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO = 1000225001,
	VKZ_ST_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES = 1000225002,
	VKZ_ST_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES = 1000261000,
	VKZ_ST_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR = 1000269000,
	VKZ_ST_PIPELINE_INFO_KHR = 1000269001,
	VKZ_ST_PIPELINE_EXECUTABLE_PROPERTIES_KHR = 1000269002,
	VKZ_ST_PIPELINE_EXECUTABLE_INFO_KHR = 1000269003,
	VKZ_ST_PIPELINE_EXECUTABLE_STATISTIC_KHR = 1000269004,
};

// VkPipelineCreateFlagBits used by package vk.
#define VKZ_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR 0x40

// VkPipelineExecutableStatisticFormatKHR.
enum {
	VKZ_STAT_FORMAT_BOOL32 = 0,
	VKZ_STAT_FORMAT_INT64 = 1,
	VKZ_STAT_FORMAT_UINT64 = 2,
	VKZ_STAT_FORMAT_FLOAT64 = 3,
};

typedef struct VkApplicationInfo {
	VkStructureType sType;
	const void* pNext;
	const char* pApplicationName;
	uint32_t applicationVersion;
	const char* pEngineName;
	uint32_t engineVersion;
	uint32_t apiVersion;
} VkApplicationInfo;

typedef struct VkInstanceCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	const VkApplicationInfo* pApplicationInfo;
	uint32_t enabledLayerCount;
	const char* const* ppEnabledLayerNames;
	uint32_t enabledExtensionCount;
	const char* const* ppEnabledExtensionNames;
} VkInstanceCreateInfo;


typedef struct VkExtensionProperties {
	char extensionName[256];
	uint32_t specVersion;
} VkExtensionProperties;

typedef struct VkDebugUtilsMessengerCallbackDataEXT {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	const char* pMessageIdName;
	int32_t messageIdNumber;
	const char* pMessage;
	uint32_t queueLabelCount;
	const void* pQueueLabels;
	uint32_t cmdBufLabelCount;
	const void* pCmdBufLabels;
	uint32_t objectCount;
	const void* pObjects;
} VkDebugUtilsMessengerCallbackDataEXT;

typedef VkBool32 (*PFN_vkDebugUtilsMessengerCallbackEXT)(
	uint32_t severity, VkFlags types,
	const VkDebugUtilsMessengerCallbackDataEXT* data, void* userData);

typedef struct VkDebugUtilsMessengerCreateInfoEXT {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	VkFlags messageSeverity;
	VkFlags messageType;
	PFN_vkDebugUtilsMessengerCallbackEXT pfnUserCallback;
	void* pUserData;
} VkDebugUtilsMessengerCreateInfoEXT;

typedef struct VkPhysicalDeviceLimits {
	uint32_t maxImageDimension1D;
	uint32_t maxImageDimension2D;
	uint32_t maxImageDimension3D;
	uint32_t maxImageDimensionCube;
	uint32_t maxImageArrayLayers;
	uint32_t maxTexelBufferElements;
	uint32_t maxUniformBufferRange;
	uint32_t maxStorageBufferRange;
	uint32_t maxPushConstantsSize;
	uint32_t maxMemoryAllocationCount;
	uint32_t maxSamplerAllocationCount;
	VkDeviceSize bufferImageGranularity;
	VkDeviceSize sparseAddressSpaceSize;
	uint32_t maxBoundDescriptorSets;
	uint32_t maxPerStageDescriptorSamplers;
	uint32_t maxPerStageDescriptorUniformBuffers;
	uint32_t maxPerStageDescriptorStorageBuffers;
	uint32_t maxPerStageDescriptorSampledImages;
	uint32_t maxPerStageDescriptorStorageImages;
	uint32_t maxPerStageDescriptorInputAttachments;
	uint32_t maxPerStageResources;
	uint32_t maxDescriptorSetSamplers;
	uint32_t maxDescriptorSetUniformBuffers;
	uint32_t maxDescriptorSetUniformBuffersDynamic;
	uint32_t maxDescriptorSetStorageBuffers;
	uint32_t maxDescriptorSetStorageBuffersDynamic;
	uint32_t maxDescriptorSetSampledImages;
	uint32_t maxDescriptorSetStorageImages;
	uint32_t maxDescriptorSetInputAttachments;
	uint32_t maxVertexInputAttributes;
	uint32_t maxVertexInputBindings;
	uint32_t maxVertexInputAttributeOffset;
	uint32_t maxVertexInputBindingStride;
	uint32_t maxVertexOutputComponents;
	uint32_t maxTessellationGenerationLevel;
	uint32_t maxTessellationPatchSize;
	uint32_t maxTessellationControlPerVertexInputComponents;
	uint32_t maxTessellationControlPerVertexOutputComponents;
	uint32_t maxTessellationControlPerPatchOutputComponents;
	uint32_t maxTessellationControlTotalOutputComponents;
	uint32_t maxTessellationEvaluationInputComponents;
	uint32_t maxTessellationEvaluationOutputComponents;
	uint32_t maxGeometryShaderInvocations;
	uint32_t maxGeometryInputComponents;
	uint32_t maxGeometryOutputComponents;
	uint32_t maxGeometryOutputVertices;
	uint32_t maxGeometryTotalOutputComponents;
	uint32_t maxFragmentInputComponents;
	uint32_t maxFragmentOutputAttachments;
	uint32_t maxFragmentDualSrcAttachments;
	uint32_t maxFragmentCombinedOutputResources;
	uint32_t maxComputeSharedMemorySize;
	uint32_t maxComputeWorkGroupCount[3];
	uint32_t maxComputeWorkGroupInvocations;
	uint32_t maxComputeWorkGroupSize[3];
	uint32_t subPixelPrecisionBits;
	uint32_t subTexelPrecisionBits;
	uint32_t mipmapPrecisionBits;
	uint32_t maxDrawIndexedIndexValue;
	uint32_t maxDrawIndirectCount;
	float maxSamplerLodBias;
	float maxSamplerAnisotropy;
	uint32_t maxViewports;
	uint32_t maxViewportDimensions[2];
	float viewportBoundsRange[2];
	uint32_t viewportSubPixelBits;
	size_t minMemoryMapAlignment;
	VkDeviceSize minTexelBufferOffsetAlignment;
	VkDeviceSize minUniformBufferOffsetAlignment;
	VkDeviceSize minStorageBufferOffsetAlignment;
	int32_t minTexelOffset;
	uint32_t maxTexelOffset;
	int32_t minTexelGatherOffset;
	uint32_t maxTexelGatherOffset;
	float minInterpolationOffset;
	float maxInterpolationOffset;
	uint32_t subPixelInterpolationOffsetBits;
	uint32_t maxFramebufferWidth;
	uint32_t maxFramebufferHeight;
	uint32_t maxFramebufferLayers;
	VkFlags framebufferColorSampleCounts;
	VkFlags framebufferDepthSampleCounts;
	VkFlags framebufferStencilSampleCounts;
	VkFlags framebufferNoAttachmentsSampleCounts;
	uint32_t maxColorAttachments;
	VkFlags sampledImageColorSampleCounts;
	VkFlags sampledImageIntegerSampleCounts;
	VkFlags sampledImageDepthSampleCounts;
	VkFlags sampledImageStencilSampleCounts;
	VkFlags storageImageSampleCounts;
	uint32_t maxSampleMaskWords;
	VkBool32 timestampComputeAndGraphics;
	float timestampPeriod;
	uint32_t maxClipDistances;
	uint32_t maxCullDistances;
	uint32_t maxCombinedClipAndCullDistances;
	uint32_t discreteQueuePriorities;
	float pointSizeRange[2];
	float lineWidthRange[2];
	float pointSizeGranularity;
	float lineWidthGranularity;
	VkBool32 strictLines;
	VkBool32 standardSampleLocations;
	VkDeviceSize optimalBufferCopyOffsetAlignment;
	VkDeviceSize optimalBufferCopyRowPitchAlignment;
	VkDeviceSize nonCoherentAtomSize;
} VkPhysicalDeviceLimits;

typedef struct VkPhysicalDeviceSparseProperties {
	VkBool32 residencyStandard2DBlockShape;
	VkBool32 residencyStandard2DMultisampleBlockShape;
	VkBool32 residencyStandard3DBlockShape;
	VkBool32 residencyAlignedMipSize;
	VkBool32 residencyNonResidentStrict;
} VkPhysicalDeviceSparseProperties;

typedef struct VkPhysicalDeviceProperties {
	uint32_t apiVersion;
	uint32_t driverVersion;
	uint32_t vendorID;
	uint32_t deviceID;
	uint32_t deviceType;
	char deviceName[256];
	uint8_t pipelineCacheUUID[16];
	VkPhysicalDeviceLimits limits;
	VkPhysicalDeviceSparseProperties sparseProperties;
} VkPhysicalDeviceProperties;

typedef struct VkPhysicalDeviceProperties2 {
	VkStructureType sType;
	void* pNext;
	VkPhysicalDeviceProperties properties;
} VkPhysicalDeviceProperties2;

typedef struct VkPhysicalDeviceSubgroupProperties {
	VkStructureType sType;
	void* pNext;
	uint32_t subgroupSize;
	VkFlags supportedStages;
	VkFlags supportedOperations;
	VkBool32 quadOperationsInAllStages;
} VkPhysicalDeviceSubgroupProperties;

typedef struct VkPhysicalDeviceDriverProperties {
	VkStructureType sType;
	void* pNext;
	uint32_t driverID;
	char driverName[256];
	char driverInfo[256];
	uint8_t conformanceVersion[4];
} VkPhysicalDeviceDriverProperties;

typedef struct VkPhysicalDeviceIDProperties {
	VkStructureType sType;
	void* pNext;
	uint8_t deviceUUID[16];
	uint8_t driverUUID[16];
	uint8_t deviceLUID[8];
	uint32_t deviceNodeMask;
	VkBool32 deviceLUIDValid;
} VkPhysicalDeviceIDProperties;

typedef struct VkPhysicalDeviceMaintenance3Properties {
	VkStructureType sType;
	void* pNext;
	uint32_t maxPerSetDescriptors;
	VkDeviceSize maxMemoryAllocationSize;
} VkPhysicalDeviceMaintenance3Properties;

typedef struct VkPhysicalDeviceSubgroupSizeControlProperties {
	VkStructureType sType;
	void* pNext;
	uint32_t minSubgroupSize;
	uint32_t maxSubgroupSize;
	uint32_t maxComputeWorkgroupSubgroups;
	VkFlags requiredSubgroupSizeStages;
} VkPhysicalDeviceSubgroupSizeControlProperties;

// VkPhysicalDeviceFeatures has 55 VkBool32 members; only the first
// (robustBufferAccess) is touched by name, shaderInt64 (member 40) by index.
#define VKZ_FEATURE_COUNT 55
#define VKZ_FEATURE_SHADER_INT64 40
#define VKZ_FEATURE_SHADER_INT16 41
typedef struct VkPhysicalDeviceFeatures {
	VkBool32 robustBufferAccess;
	VkBool32 rest[VKZ_FEATURE_COUNT - 1];
} VkPhysicalDeviceFeatures;

typedef struct VkPhysicalDeviceFeatures2 {
	VkStructureType sType;
	void* pNext;
	VkPhysicalDeviceFeatures features;
} VkPhysicalDeviceFeatures2;

typedef struct VkPhysicalDeviceTimelineSemaphoreFeatures {
	VkStructureType sType;
	void* pNext;
	VkBool32 timelineSemaphore;
} VkPhysicalDeviceTimelineSemaphoreFeatures;

typedef struct VkPhysicalDeviceHostQueryResetFeatures {
	VkStructureType sType;
	void* pNext;
	VkBool32 hostQueryReset;
} VkPhysicalDeviceHostQueryResetFeatures;

typedef struct VkPhysicalDeviceSubgroupSizeControlFeatures {
	VkStructureType sType;
	void* pNext;
	VkBool32 subgroupSizeControl;
	VkBool32 computeFullSubgroups;
} VkPhysicalDeviceSubgroupSizeControlFeatures;

typedef struct VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR {
	VkStructureType sType;
	void* pNext;
	VkBool32 pipelineExecutableInfo;
} VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR;






typedef struct VkDeviceQueueCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t queueFamilyIndex;
	uint32_t queueCount;
	const float* pQueuePriorities;
} VkDeviceQueueCreateInfo;

typedef struct VkDeviceCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t queueCreateInfoCount;
	const VkDeviceQueueCreateInfo* pQueueCreateInfos;
	uint32_t enabledLayerCount;
	const char* const* ppEnabledLayerNames;
	uint32_t enabledExtensionCount;
	const char* const* ppEnabledExtensionNames;
	const VkPhysicalDeviceFeatures* pEnabledFeatures;
} VkDeviceCreateInfo;

typedef struct VkBufferCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	VkDeviceSize size;
	VkFlags usage;
	uint32_t sharingMode;
	uint32_t queueFamilyIndexCount;
	const uint32_t* pQueueFamilyIndices;
} VkBufferCreateInfo;


typedef struct VkMemoryAllocateInfo {
	VkStructureType sType;
	const void* pNext;
	VkDeviceSize allocationSize;
	uint32_t memoryTypeIndex;
} VkMemoryAllocateInfo;

typedef struct VkMemoryDedicatedAllocateInfo {
	VkStructureType sType;
	const void* pNext;
	VkImage image;
	VkBuffer buffer;
} VkMemoryDedicatedAllocateInfo;

typedef struct VkExternalMemoryBufferCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags handleTypes;
} VkExternalMemoryBufferCreateInfo;

typedef struct VkExportMemoryAllocateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags handleTypes;
} VkExportMemoryAllocateInfo;

typedef struct VkImportMemoryFdInfoKHR {
	VkStructureType sType;
	const void* pNext;
	uint32_t handleType;
	int fd;
} VkImportMemoryFdInfoKHR;

typedef struct VkMemoryGetFdInfoKHR {
	VkStructureType sType;
	const void* pNext;
	VkDeviceMemory memory;
	uint32_t handleType;
} VkMemoryGetFdInfoKHR;

typedef struct VkSemaphoreCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
} VkSemaphoreCreateInfo;

typedef struct VkSemaphoreTypeCreateInfo {
	VkStructureType sType;
	const void* pNext;
	uint32_t semaphoreType;
	uint64_t initialValue;
} VkSemaphoreTypeCreateInfo;

typedef struct VkExportSemaphoreCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags handleTypes;
} VkExportSemaphoreCreateInfo;

typedef struct VkSemaphoreGetFdInfoKHR {
	VkStructureType sType;
	const void* pNext;
	VkSemaphore semaphore;
	uint32_t handleType;
} VkSemaphoreGetFdInfoKHR;

typedef struct VkSemaphoreWaitInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t semaphoreCount;
	const VkSemaphore* pSemaphores;
	const uint64_t* pValues;
} VkSemaphoreWaitInfo;

typedef struct VkSemaphoreSignalInfo {
	VkStructureType sType;
	const void* pNext;
	VkSemaphore semaphore;
	uint64_t value;
} VkSemaphoreSignalInfo;

typedef struct VkTimelineSemaphoreSubmitInfo {
	VkStructureType sType;
	const void* pNext;
	uint32_t waitSemaphoreValueCount;
	const uint64_t* pWaitSemaphoreValues;
	uint32_t signalSemaphoreValueCount;
	const uint64_t* pSignalSemaphoreValues;
} VkTimelineSemaphoreSubmitInfo;

typedef struct VkShaderModuleCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	size_t codeSize;
	const uint32_t* pCode;
} VkShaderModuleCreateInfo;

typedef struct VkPipelineCacheCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	size_t initialDataSize;
	const void* pInitialData;
} VkPipelineCacheCreateInfo;

typedef struct VkSpecializationMapEntry {
	uint32_t constantID;
	uint32_t offset;
	size_t size;
} VkSpecializationMapEntry;

typedef struct VkSpecializationInfo {
	uint32_t mapEntryCount;
	const VkSpecializationMapEntry* pMapEntries;
	size_t dataSize;
	const void* pData;
} VkSpecializationInfo;

typedef struct VkPipelineShaderStageCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t stage;
	VkShaderModule module;
	const char* pName;
	const VkSpecializationInfo* pSpecializationInfo;
} VkPipelineShaderStageCreateInfo;

typedef struct VkPipelineShaderStageRequiredSubgroupSizeCreateInfo {
	VkStructureType sType;
	void* pNext;
	uint32_t requiredSubgroupSize;
} VkPipelineShaderStageRequiredSubgroupSizeCreateInfo;

typedef struct VkComputePipelineCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	VkPipelineShaderStageCreateInfo stage;
	VkPipelineLayout layout;
	VkPipeline basePipelineHandle;
	int32_t basePipelineIndex;
} VkComputePipelineCreateInfo;

// VK_KHR_pipeline_executable_properties. On LP64 (checked in vkz.c):
// VkPipelineExecutablePropertiesKHR is sType@0 pNext@8 stages@16
// name@20 description@276 subgroupSize@532, 536 bytes (char arrays need
// no alignment, so there is no padding after stages);
// VkPipelineExecutableStatisticKHR is sType@0 pNext@8 name@16
// description@272 format@528 (4 bytes padding) value@536, 544 bytes.
typedef struct VkPipelineInfoKHR {
	VkStructureType sType;
	const void* pNext;
	VkPipeline pipeline;
} VkPipelineInfoKHR;

typedef struct VkPipelineExecutablePropertiesKHR {
	VkStructureType sType;
	void* pNext;
	VkFlags stages;
	char name[256];
	char description[256];
	uint32_t subgroupSize;
} VkPipelineExecutablePropertiesKHR;

typedef struct VkPipelineExecutableInfoKHR {
	VkStructureType sType;
	const void* pNext;
	VkPipeline pipeline;
	uint32_t executableIndex;
} VkPipelineExecutableInfoKHR;

typedef union VkPipelineExecutableStatisticValueKHR {
	VkBool32 b32;
	int64_t i64;
	uint64_t u64;
	double f64;
} VkPipelineExecutableStatisticValueKHR;

typedef struct VkPipelineExecutableStatisticKHR {
	VkStructureType sType;
	void* pNext;
	char name[256];
	char description[256];
	int32_t format; // VkPipelineExecutableStatisticFormatKHR
	VkPipelineExecutableStatisticValueKHR value;
} VkPipelineExecutableStatisticKHR;

typedef struct VkDescriptorSetLayoutBinding {
	uint32_t binding;
	uint32_t descriptorType;
	uint32_t descriptorCount;
	VkFlags stageFlags;
	const VkSampler* pImmutableSamplers;
} VkDescriptorSetLayoutBinding;

typedef struct VkDescriptorSetLayoutCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t bindingCount;
	const VkDescriptorSetLayoutBinding* pBindings;
} VkDescriptorSetLayoutCreateInfo;

typedef struct VkPushConstantRange {
	VkFlags stageFlags;
	uint32_t offset;
	uint32_t size;
} VkPushConstantRange;

typedef struct VkPipelineLayoutCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t setLayoutCount;
	const VkDescriptorSetLayout* pSetLayouts;
	uint32_t pushConstantRangeCount;
	const VkPushConstantRange* pPushConstantRanges;
} VkPipelineLayoutCreateInfo;

typedef struct VkDescriptorPoolSize {
	uint32_t type;
	uint32_t descriptorCount;
} VkDescriptorPoolSize;

typedef struct VkDescriptorPoolCreateInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	uint32_t maxSets;
	uint32_t poolSizeCount;
	const VkDescriptorPoolSize* pPoolSizes;
} VkDescriptorPoolCreateInfo;

typedef struct VkDescriptorSetAllocateInfo {
	VkStructureType sType;
	const void* pNext;
	VkDescriptorPool descriptorPool;
	uint32_t descriptorSetCount;
	const VkDescriptorSetLayout* pSetLayouts;
} VkDescriptorSetAllocateInfo;

typedef struct VkDescriptorBufferInfo {
	VkBuffer buffer;
	VkDeviceSize offset;
	VkDeviceSize range;
} VkDescriptorBufferInfo;

typedef struct VkWriteDescriptorSet {
	VkStructureType sType;
	const void* pNext;
	VkDescriptorSet dstSet;
	uint32_t dstBinding;
	uint32_t dstArrayElement;
	uint32_t descriptorCount;
	uint32_t descriptorType;
	const void* pImageInfo;
	const VkDescriptorBufferInfo* pBufferInfo;
	const void* pTexelBufferView;
} VkWriteDescriptorSet;



typedef struct VkCommandBufferAllocateInfo {
	VkStructureType sType;
	const void* pNext;
	VkCommandPool commandPool;
	uint32_t level;
	uint32_t commandBufferCount;
} VkCommandBufferAllocateInfo;

typedef struct VkCommandBufferBeginInfo {
	VkStructureType sType;
	const void* pNext;
	VkFlags flags;
	const void* pInheritanceInfo;
} VkCommandBufferBeginInfo;

typedef struct VkSubmitInfo {
	VkStructureType sType;
	const void* pNext;
	uint32_t waitSemaphoreCount;
	const VkSemaphore* pWaitSemaphores;
	const VkFlags* pWaitDstStageMask;
	uint32_t commandBufferCount;
	const VkCommandBuffer* pCommandBuffers;
	uint32_t signalSemaphoreCount;
	const VkSemaphore* pSignalSemaphores;
} VkSubmitInfo;



typedef struct VkMemoryBarrier {
	VkStructureType sType;
	const void* pNext;
	VkFlags srcAccessMask;
	VkFlags dstAccessMask;
} VkMemoryBarrier;

typedef struct VkBufferCopy {
	VkDeviceSize srcOffset;
	VkDeviceSize dstOffset;
	VkDeviceSize size;
} VkBufferCopy;

typedef void (*PFN_vkVoidFunction)(void);
typedef PFN_vkVoidFunction (*PFN_vkGetInstanceProcAddr)(VkInstance, const char*);
typedef PFN_vkVoidFunction (*PFN_vkGetDeviceProcAddr)(VkDevice, const char*);

// Instance-level function table (C memory, one per Instance): only the
// entry points doc.go lists for the C layer; vulkan-go calls the rest.
typedef struct vkz_inst {
	VkInstance instance;
	uint32_t apiVersion;
	VkDebugUtilsMessengerEXT messenger;
	void (*DestroyInstance)(VkInstance, const void*);
	void (*GetPhysicalDeviceProperties2)(VkPhysicalDevice, VkPhysicalDeviceProperties2*);
	void (*GetPhysicalDeviceFeatures2)(VkPhysicalDevice, VkPhysicalDeviceFeatures2*);
	VkResult (*EnumerateDeviceExtensionProperties)(VkPhysicalDevice, const char*, uint32_t*, VkExtensionProperties*);
	VkResult (*CreateDevice)(VkPhysicalDevice, const VkDeviceCreateInfo*, const void*, VkDevice*);
	PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
	VkResult (*CreateDebugUtilsMessengerEXT)(VkInstance, const VkDebugUtilsMessengerCreateInfoEXT*, const void*, VkDebugUtilsMessengerEXT*);
	void (*DestroyDebugUtilsMessengerEXT)(VkInstance, VkDebugUtilsMessengerEXT, const void*);
} vkz_inst;

// Device-level function table (C memory, one per Device): only the
// entry points doc.go lists for the C layer, fetched with
// vkGetDeviceProcAddr so calls skip the loader trampoline. The device is
// destroyed through vulkan-go and the table freed with free().
#define VKZ_MAX_QUEUES 8

typedef struct vkz_dev {
	VkDevice device;
	VkQueue queues[VKZ_MAX_QUEUES];
	uint32_t queueCount;
	uint32_t queueFamily;
	VkResult (*QueueSubmit)(VkQueue, uint32_t, const VkSubmitInfo*, VkFence);
	VkResult (*CreateBuffer)(VkDevice, const VkBufferCreateInfo*, const void*, VkBuffer*);
	VkResult (*AllocateMemory)(VkDevice, const VkMemoryAllocateInfo*, const void*, VkDeviceMemory*);
	VkResult (*CreateShaderModule)(VkDevice, const VkShaderModuleCreateInfo*, const void*, VkShaderModule*);
	void (*DestroyShaderModule)(VkDevice, VkShaderModule, const void*);
	VkResult (*CreatePipelineCache)(VkDevice, const VkPipelineCacheCreateInfo*, const void*, VkPipelineCache*);
	VkResult (*CreateDescriptorSetLayout)(VkDevice, const VkDescriptorSetLayoutCreateInfo*, const void*, VkDescriptorSetLayout*);
	VkResult (*CreatePipelineLayout)(VkDevice, const VkPipelineLayoutCreateInfo*, const void*, VkPipelineLayout*);
	VkResult (*CreateComputePipelines)(VkDevice, VkPipelineCache, uint32_t, const VkComputePipelineCreateInfo*, const void*, VkPipeline*);
	VkResult (*CreateDescriptorPool)(VkDevice, const VkDescriptorPoolCreateInfo*, const void*, VkDescriptorPool*);
	VkResult (*AllocateDescriptorSets)(VkDevice, const VkDescriptorSetAllocateInfo*, VkDescriptorSet*);
	void (*UpdateDescriptorSets)(VkDevice, uint32_t, const VkWriteDescriptorSet*, uint32_t, const void*);
	VkResult (*AllocateCommandBuffers)(VkDevice, const VkCommandBufferAllocateInfo*, VkCommandBuffer*);
	VkResult (*ResetCommandPool)(VkDevice, VkCommandPool, VkFlags);
	VkResult (*BeginCommandBuffer)(VkCommandBuffer, const VkCommandBufferBeginInfo*);
	VkResult (*CreateSemaphore)(VkDevice, const VkSemaphoreCreateInfo*, const void*, VkSemaphore*);
	void (*CmdPipelineBarrier)(VkCommandBuffer, VkFlags, VkFlags, VkFlags, uint32_t, const VkMemoryBarrier*, uint32_t, const void*, uint32_t, const void*);
	void (*CmdCopyBuffer)(VkCommandBuffer, VkBuffer, VkBuffer, uint32_t, const VkBufferCopy*);
	// Optional (extension / newer core); NULL when unavailable.
	VkResult (*GetMemoryFdKHR)(VkDevice, const VkMemoryGetFdInfoKHR*, int*);
	VkResult (*GetSemaphoreFdKHR)(VkDevice, const VkSemaphoreGetFdInfoKHR*, int*);
	VkResult (*GetSemaphoreCounterValue)(VkDevice, VkSemaphore, uint64_t*);
	VkResult (*WaitSemaphores)(VkDevice, const VkSemaphoreWaitInfo*, uint64_t);
	VkResult (*SignalSemaphore)(VkDevice, const VkSemaphoreSignalInfo*);
	void (*ResetQueryPool)(VkDevice, VkQueryPool, uint32_t, uint32_t);
	VkResult (*GetPipelineExecutablePropertiesKHR)(VkDevice, const VkPipelineInfoKHR*, uint32_t*, VkPipelineExecutablePropertiesKHR*);
	VkResult (*GetPipelineExecutableStatisticsKHR)(VkDevice, const VkPipelineExecutableInfoKHR*, uint32_t*, VkPipelineExecutableStatisticKHR*);
} vkz_dev;

// Results of one query of the 1.1+ physical-device structs, filled in C
// (the 1.0 properties, features, memory and queue families come through
// vulkan-go).
typedef struct vkz_pdev_info {
	int haveProps2;
	VkPhysicalDeviceSubgroupProperties subgroup;
	int haveDriver;
	VkPhysicalDeviceDriverProperties driver;
	VkPhysicalDeviceIDProperties id;
	VkPhysicalDeviceMaintenance3Properties maint3;
	int haveSizeControl;
	VkPhysicalDeviceSubgroupSizeControlProperties sizeControl;
	VkPhysicalDeviceSubgroupSizeControlFeatures sizeControlFeatures;
	int haveTimeline;
	VkPhysicalDeviceTimelineSemaphoreFeatures timelineFeatures;
	int haveExecProps;
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR execPropsFeatures;
	int haveHostQueryReset;
	VkPhysicalDeviceHostQueryResetFeatures hostQueryResetFeatures;
} vkz_pdev_info;

// Options for device creation, filled in Go.
typedef struct vkz_dev_opts {
	uint32_t queueFamily;
	uint32_t queueCount;           // queues to create in queueFamily, 1..VKZ_MAX_QUEUES
	uint32_t enableSizeControl;    // 1: enable the subgroupSizeControl feature
	uint32_t enableFullSubgroups;  // 1: enable computeFullSubgroups
	uint32_t enableTimeline;       // 1: enable timelineSemaphore feature
	uint32_t enableExecProps;      // 1: enable pipelineExecutableInfo (VK_KHR_pipeline_executable_properties)
	uint32_t enableInt64;          // 1: enable the core feature shaderInt64
	uint32_t enableInt16;          // 1: enable the core feature shaderInt16
	uint32_t enableHostQueryReset; // 1: enable hostQueryReset (core 1.2, VK_EXT_host_query_reset)
	uint32_t extensionCount;
	const char* extensions[16];
} vkz_dev_opts;

// Result used when a required entry point is NULL (not a VkResult value).
#define VKZ_MISSING_ENTRY_POINT (-2147480000)

// Implemented in vkz.c.
int vkz_load(const char* path, char* err, size_t errLen);
int vkz_try_load(const char* path, char* err, size_t errLen);
void vkz_pin_libraries(void);
void* vkz_gipa_ptr(void);
void vkz_resolve(VkInstance inst, const char* const* names, uint32_t n, uintptr_t* out);
uint32_t vkz_instance_version(void);
VkResult vkz_enum_instance_extensions(uint32_t* count, VkExtensionProperties* out);
VkResult vkz_create_instance(const char* appName, uint32_t apiVersion, uint32_t flags,
	const char** layers, uint32_t layerCount, const char** exts, uint32_t extCount,
	int debugUtils, uintptr_t userData, vkz_inst** out, const char** missing);
void vkz_destroy_instance(vkz_inst* in);
void vkz_query_pdev(vkz_inst* in, VkPhysicalDevice pd, uint32_t apiVersion, int driverProps, int sizeControl, int timeline, int execProps, int hostQueryReset, vkz_pdev_info* out);
VkResult vkz_enum_device_extensions(vkz_inst* in, VkPhysicalDevice pd, uint32_t* count, VkExtensionProperties* out);
VkResult vkz_create_device(vkz_inst* in, VkPhysicalDevice pd, const vkz_dev_opts* o, vkz_dev** out, const char** missing);

VkResult vkz_create_buffer(vkz_dev* d, VkDeviceSize size, VkFlags usage, VkFlags extHandleTypes, VkBuffer* out);
VkResult vkz_alloc_memory(vkz_dev* d, VkDeviceSize size, uint32_t typeIndex, VkBuffer dedicated, VkFlags exportTypes, int importFd, VkDeviceMemory* out);
VkResult vkz_get_memory_fd(vkz_dev* d, VkDeviceMemory mem, int* fd);

VkResult vkz_create_pipeline_cache(vkz_dev* d, const void* data, size_t size, VkPipelineCache* out);
VkResult vkz_create_pipeline(vkz_dev* d, VkPipelineCache cache, const uint32_t* code, size_t codeSize,
	const char* entry, uint32_t bindings, uint32_t pushSize, const uint32_t* specIDs, const uint32_t* specVals,
	uint32_t specCount, uint32_t requiredSubgroupSize, uint32_t stageFlags, VkFlags pipelineFlags,
	VkDescriptorSetLayout* dsl, VkPipelineLayout* layout, VkPipeline* pipe);
VkResult vkz_pipeline_executables(vkz_dev* d, VkPipeline pipe, uint32_t* count, VkPipelineExecutablePropertiesKHR* out);
VkResult vkz_pipeline_statistics(vkz_dev* d, VkPipeline pipe, uint32_t executable, uint32_t* count, VkPipelineExecutableStatisticKHR* out);
VkResult vkz_create_descriptor_set(vkz_dev* d, VkDescriptorSetLayout dsl, uint32_t bindings, VkDescriptorPool* pool, VkDescriptorSet* set);
void vkz_update_descriptor_set(vkz_dev* d, VkDescriptorSet set, uint32_t n, const uint64_t* bufs, const uint64_t* offs, const uint64_t* sizes);

VkResult vkz_alloc_command_buffer(vkz_dev* d, VkCommandPool pool, VkCommandBuffer* cb);
VkResult vkz_begin(vkz_dev* d, VkCommandPool pool, VkCommandBuffer cb);
void vkz_cmd_barrier(vkz_dev* d, VkCommandBuffer cb, VkFlags srcStage, VkFlags dstStage, VkFlags srcAccess, VkFlags dstAccess);
VkResult vkz_submit(vkz_dev* d, uint32_t queue, VkCommandBuffer cb, VkFence fence, uint32_t waitCount, const VkSemaphore* waits, const uint64_t* waitVals,
	uint32_t signalCount, const VkSemaphore* signals, const uint64_t* signalVals);
VkResult vkz_create_semaphore(vkz_dev* d, int timeline, uint64_t initial, VkFlags exportTypes, VkSemaphore* out);
VkResult vkz_semaphore_value(vkz_dev* d, VkSemaphore s, uint64_t* v);
VkResult vkz_reset_query_pool(vkz_dev* d, VkQueryPool qp, uint32_t first, uint32_t count);
VkResult vkz_semaphore_wait(vkz_dev* d, VkSemaphore s, uint64_t v, uint64_t timeout);
VkResult vkz_semaphore_signal(vkz_dev* d, VkSemaphore s, uint64_t v);
VkResult vkz_get_semaphore_fd(vkz_dev* d, VkSemaphore s, int* fd);

// Small wrappers the Go side calls directly.
static inline void vkz_cmd_copy(vkz_dev* d, VkCommandBuffer cb, VkBuffer src, VkBuffer dst, VkDeviceSize so, VkDeviceSize dof, VkDeviceSize size) {
	VkBufferCopy r = {so, dof, size};
	d->CmdCopyBuffer(cb, src, dst, 1, &r);
}
// Union members of a statistic value (cgo sees the union as bytes): b32
// for format BOOL32, u64 (bit pattern, converted in Go) for the others.
static inline VkBool32 vkz_stat_b32(const VkPipelineExecutableStatisticKHR* s) { return s->value.b32; }
static inline uint64_t vkz_stat_u64(const VkPipelineExecutableStatisticKHR* s) { return s->value.u64; }

#endif
