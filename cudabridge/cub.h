// cub.h: vkzip's minimal CUDA driver API layer. libcuda.so.1 is dlopened at
// run time; no CUDA header is used, so every type and struct below is
// declared here with the layout of the CUDA driver API (cuda.h, 64-bit),
// checked by the static assertions at the end of the type section.
//
// Every wrapper takes the context as an integer, pushes it current on the
// calling thread, calls the driver and pops it again, so Go code never
// depends on which OS thread it runs on. A function pointer that is NULL
// (an older driver) gives CUB_MISSING instead of a call.
//
// Included only by driver_cgo.go (build tags cgo && linux).

#ifndef VKZIP_CUB_H
#define VKZIP_CUB_H

#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUexternalMemory;
typedef void* CUexternalSemaphore;
typedef void* CUmodule;
typedef void* CUfunction;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;

#define CUB_MISSING (-1)

// CUuuid
typedef struct { unsigned char bytes[16]; } cub_uuid;

// CUDA_EXTERNAL_MEMORY_HANDLE_DESC (CUDA_EXTERNAL_MEMORY_HANDLE_DESC_v1)
typedef struct {
	int type; // CUexternalMemoryHandleType
	union {
		int fd;
		struct {
			void* handle;
			const void* name;
		} win32;
		const void* nvSciBufObject;
	} handle;
	unsigned long long size;
	unsigned int flags;
	unsigned int reserved[16];
} cub_ext_mem_handle_desc;

// CUDA_EXTERNAL_MEMORY_BUFFER_DESC
typedef struct {
	unsigned long long offset;
	unsigned long long size;
	unsigned int flags;
	unsigned int reserved[16];
} cub_ext_mem_buffer_desc;

// CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC
typedef struct {
	int type; // CUexternalSemaphoreHandleType
	union {
		int fd;
		struct {
			void* handle;
			const void* name;
		} win32;
		const void* nvSciSyncObj;
	} handle;
	unsigned int flags;
	unsigned int reserved[16];
} cub_ext_sem_handle_desc;

// CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS
typedef struct {
	struct {
		struct {
			unsigned long long value;
		} fence;
		union {
			void* fence;
			unsigned long long reserved;
		} nvSciSync;
		struct {
			unsigned long long key;
		} keyedMutex;
		unsigned int reserved[12];
	} params;
	unsigned int flags;
	unsigned int reserved[16];
} cub_ext_sem_signal_params;

// CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS
typedef struct {
	struct {
		struct {
			unsigned long long value;
		} fence;
		union {
			void* fence;
			unsigned long long reserved;
		} nvSciSync;
		struct {
			unsigned long long key;
			unsigned int timeoutMs;
		} keyedMutex;
		unsigned int reserved[10];
	} params;
	unsigned int flags;
	unsigned int reserved[16];
} cub_ext_sem_wait_params;

// CUmemLocation
typedef struct {
	int type; // CUmemLocationType
	int id;
} cub_mem_location;

// CUmemAllocationProp
typedef struct {
	int type;                 // CUmemAllocationType
	int requestedHandleTypes; // CUmemAllocationHandleType
	cub_mem_location location;
	void* win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} cub_mem_alloc_prop;

// CUmemAccessDesc
typedef struct {
	cub_mem_location location;
	int flags; // CUmemAccess_flags
} cub_mem_access_desc;

_Static_assert(sizeof(void*) == 8, "64-bit only");
_Static_assert(sizeof(cub_uuid) == 16, "CUuuid");
_Static_assert(offsetof(cub_ext_mem_handle_desc, handle) == 8, "HANDLE_DESC.handle");
_Static_assert(offsetof(cub_ext_mem_handle_desc, size) == 24, "HANDLE_DESC.size");
_Static_assert(offsetof(cub_ext_mem_handle_desc, flags) == 32, "HANDLE_DESC.flags");
_Static_assert(offsetof(cub_ext_mem_handle_desc, reserved) == 36, "HANDLE_DESC.reserved");
_Static_assert(sizeof(cub_ext_mem_handle_desc) == 104, "CUDA_EXTERNAL_MEMORY_HANDLE_DESC");
_Static_assert(offsetof(cub_ext_mem_buffer_desc, flags) == 16, "BUFFER_DESC.flags");
_Static_assert(sizeof(cub_ext_mem_buffer_desc) == 88, "CUDA_EXTERNAL_MEMORY_BUFFER_DESC");
_Static_assert(offsetof(cub_ext_sem_handle_desc, handle) == 8, "SEM_HANDLE_DESC.handle");
_Static_assert(offsetof(cub_ext_sem_handle_desc, flags) == 24, "SEM_HANDLE_DESC.flags");
_Static_assert(sizeof(cub_ext_sem_handle_desc) == 96, "CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC");
_Static_assert(sizeof(((cub_ext_sem_signal_params*)0)->params) == 72, "SIGNAL_PARAMS.params");
_Static_assert(offsetof(cub_ext_sem_signal_params, flags) == 72, "SIGNAL_PARAMS.flags");
_Static_assert(sizeof(cub_ext_sem_signal_params) == 144, "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS");
_Static_assert(sizeof(((cub_ext_sem_wait_params*)0)->params) == 72, "WAIT_PARAMS.params");
_Static_assert(offsetof(cub_ext_sem_wait_params, flags) == 72, "WAIT_PARAMS.flags");
_Static_assert(sizeof(cub_ext_sem_wait_params) == 144, "CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS");
_Static_assert(offsetof(cub_mem_alloc_prop, location) == 8, "CUmemAllocationProp.location");
_Static_assert(offsetof(cub_mem_alloc_prop, win32HandleMetaData) == 16, "CUmemAllocationProp.win32HandleMetaData");
_Static_assert(offsetof(cub_mem_alloc_prop, allocFlags) == 24, "CUmemAllocationProp.allocFlags");
_Static_assert(sizeof(cub_mem_alloc_prop) == 32, "CUmemAllocationProp");
_Static_assert(sizeof(cub_mem_access_desc) == 12, "CUmemAccessDesc");

// Enum values used (cuda.h).
#define CUB_EXT_MEM_OPAQUE_FD 1              // CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
#define CUB_EXT_MEM_DEDICATED 1              // CUDA_EXTERNAL_MEMORY_DEDICATED
#define CUB_EXT_SEM_OPAQUE_FD 1              // CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
#define CUB_EXT_SEM_TIMELINE_FD 9            // CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
#define CUB_MEM_ALLOCATION_TYPE_PINNED 1     // CU_MEM_ALLOCATION_TYPE_PINNED
#define CUB_MEM_HANDLE_TYPE_POSIX_FD 1       // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
#define CUB_MEM_LOCATION_TYPE_DEVICE 1       // CU_MEM_LOCATION_TYPE_DEVICE
#define CUB_MEM_ACCESS_READWRITE 3           // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
#define CUB_STREAM_NON_BLOCKING 1            // CU_STREAM_NON_BLOCKING

// The driver entry points vkzip uses. Versioned names (_v2) are the ABI that
// cuda.h maps the plain names to since CUDA 3.2/4.0/11; multicast functions
// are deliberately absent.
typedef struct {
	void* h;
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDriverGetVersion)(int*);
	CUresult (*cuGetErrorName)(CUresult, const char**);
	CUresult (*cuGetErrorString)(CUresult, const char**);
	CUresult (*cuDeviceGetCount)(int*);
	CUresult (*cuDeviceGet)(CUdevice*, int);
	CUresult (*cuDeviceGetName)(char*, int, CUdevice);
	CUresult (*cuDeviceGetUuid)(cub_uuid*, CUdevice);
	CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxPushCurrent)(CUcontext);
	CUresult (*cuCtxPopCurrent)(CUcontext*);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuStreamCreate)(CUstream*, unsigned int);
	CUresult (*cuStreamDestroy)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuStreamQuery)(CUstream);
	CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
	CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
	CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*cuImportExternalMemory)(CUexternalMemory*, const cub_ext_mem_handle_desc*);
	CUresult (*cuExternalMemoryGetMappedBuffer)(CUdeviceptr*, CUexternalMemory, const cub_ext_mem_buffer_desc*);
	CUresult (*cuDestroyExternalMemory)(CUexternalMemory);
	CUresult (*cuImportExternalSemaphore)(CUexternalSemaphore*, const cub_ext_sem_handle_desc*);
	CUresult (*cuSignalExternalSemaphoresAsync)(const CUexternalSemaphore*, const cub_ext_sem_signal_params*, unsigned int, CUstream);
	CUresult (*cuWaitExternalSemaphoresAsync)(const CUexternalSemaphore*, const cub_ext_sem_wait_params*, unsigned int, CUstream);
	CUresult (*cuDestroyExternalSemaphore)(CUexternalSemaphore);
	CUresult (*cuMemGetAllocationGranularity)(size_t*, const cub_mem_alloc_prop*, int);
	CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const cub_mem_alloc_prop*, unsigned long long);
	CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
	CUresult (*cuMemExportToShareableHandle)(void*, CUmemGenericAllocationHandle, int, unsigned long long);
	CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle*, void*, int);
	CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
	CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const cub_mem_access_desc*, size_t);
	CUresult (*cuModuleLoadData)(CUmodule*, const void*);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
		unsigned int, unsigned int, CUstream, void**, void**);
} cub_lib;

static void* cub_sym(void* h, const char* name) { return dlsym(h, name); }

// cub_open dlopens path and fetches the entry points. It returns NULL with
// a message in err when the library cannot be opened or lacks the core
// entry points (those of CUDA 10.0); newer ones may stay NULL.
static cub_lib* cub_open(const char* path, char* err, size_t errLen) {
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		snprintf(err, errLen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	cub_lib* L = (cub_lib*)calloc(1, sizeof(cub_lib));
	if (!L) {
		snprintf(err, errLen, "out of memory");
		return NULL;
	}
	L->h = h;
#define CUB_LOAD(field, name) L->field = (typeof(L->field))cub_sym(h, name)
	CUB_LOAD(cuInit, "cuInit");
	CUB_LOAD(cuDriverGetVersion, "cuDriverGetVersion");
	CUB_LOAD(cuGetErrorName, "cuGetErrorName");
	CUB_LOAD(cuGetErrorString, "cuGetErrorString");
	CUB_LOAD(cuDeviceGetCount, "cuDeviceGetCount");
	CUB_LOAD(cuDeviceGet, "cuDeviceGet");
	CUB_LOAD(cuDeviceGetName, "cuDeviceGetName");
	CUB_LOAD(cuDeviceGetUuid, "cuDeviceGetUuid");
	CUB_LOAD(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	CUB_LOAD(cuDeviceGetAttribute, "cuDeviceGetAttribute");
	CUB_LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	CUB_LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	if (!L->cuDevicePrimaryCtxRelease) CUB_LOAD(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
	CUB_LOAD(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
	CUB_LOAD(cuCtxPopCurrent, "cuCtxPopCurrent_v2");
	CUB_LOAD(cuCtxSynchronize, "cuCtxSynchronize");
	CUB_LOAD(cuStreamCreate, "cuStreamCreate");
	CUB_LOAD(cuStreamDestroy, "cuStreamDestroy_v2");
	CUB_LOAD(cuStreamSynchronize, "cuStreamSynchronize");
	CUB_LOAD(cuStreamQuery, "cuStreamQuery");
	CUB_LOAD(cuMemAlloc, "cuMemAlloc_v2");
	CUB_LOAD(cuMemFree, "cuMemFree_v2");
	CUB_LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	CUB_LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	CUB_LOAD(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
	CUB_LOAD(cuMemsetD8Async, "cuMemsetD8Async");
	CUB_LOAD(cuImportExternalMemory, "cuImportExternalMemory");
	CUB_LOAD(cuExternalMemoryGetMappedBuffer, "cuExternalMemoryGetMappedBuffer");
	CUB_LOAD(cuDestroyExternalMemory, "cuDestroyExternalMemory");
	CUB_LOAD(cuImportExternalSemaphore, "cuImportExternalSemaphore");
	CUB_LOAD(cuSignalExternalSemaphoresAsync, "cuSignalExternalSemaphoresAsync");
	CUB_LOAD(cuWaitExternalSemaphoresAsync, "cuWaitExternalSemaphoresAsync");
	CUB_LOAD(cuDestroyExternalSemaphore, "cuDestroyExternalSemaphore");
	CUB_LOAD(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
	CUB_LOAD(cuMemCreate, "cuMemCreate");
	CUB_LOAD(cuMemRelease, "cuMemRelease");
	CUB_LOAD(cuMemExportToShareableHandle, "cuMemExportToShareableHandle");
	CUB_LOAD(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle");
	CUB_LOAD(cuMemAddressReserve, "cuMemAddressReserve");
	CUB_LOAD(cuMemAddressFree, "cuMemAddressFree");
	CUB_LOAD(cuMemMap, "cuMemMap");
	CUB_LOAD(cuMemUnmap, "cuMemUnmap");
	CUB_LOAD(cuMemSetAccess, "cuMemSetAccess");
	CUB_LOAD(cuModuleLoadData, "cuModuleLoadData");
	CUB_LOAD(cuModuleUnload, "cuModuleUnload");
	CUB_LOAD(cuModuleGetFunction, "cuModuleGetFunction");
	CUB_LOAD(cuLaunchKernel, "cuLaunchKernel");
#undef CUB_LOAD
	const char* missing = NULL;
	if (!L->cuInit) missing = "cuInit";
	else if (!L->cuDeviceGetCount) missing = "cuDeviceGetCount";
	else if (!L->cuDeviceGet) missing = "cuDeviceGet";
	else if (!L->cuDeviceGetUuid) missing = "cuDeviceGetUuid";
	else if (!L->cuDevicePrimaryCtxRetain) missing = "cuDevicePrimaryCtxRetain";
	else if (!L->cuDevicePrimaryCtxRelease) missing = "cuDevicePrimaryCtxRelease";
	else if (!L->cuCtxPushCurrent) missing = "cuCtxPushCurrent_v2";
	else if (!L->cuCtxPopCurrent) missing = "cuCtxPopCurrent_v2";
	if (missing) {
		snprintf(err, errLen, "%s has no %s (not a CUDA driver library, or one older than CUDA 10)", path, missing);
		// The library stays loaded: unloading a driver is never safe.
		free(L);
		return NULL;
	}
	return L;
}

static CUresult cub_init(cub_lib* L) { return L->cuInit(0); }

static CUresult cub_driver_version(cub_lib* L, int* v) {
	if (!L->cuDriverGetVersion) return CUB_MISSING;
	return L->cuDriverGetVersion(v);
}

static const char* cub_error_name(cub_lib* L, CUresult r) {
	const char* s = NULL;
	if (L->cuGetErrorName && L->cuGetErrorName(r, &s) == 0 && s) return s;
	return "";
}

static const char* cub_error_string(cub_lib* L, CUresult r) {
	const char* s = NULL;
	if (L->cuGetErrorString && L->cuGetErrorString(r, &s) == 0 && s) return s;
	return "";
}

static CUresult cub_device_count(cub_lib* L, int* n) { return L->cuDeviceGetCount(n); }

static CUresult cub_device_get(cub_lib* L, int ordinal, int* dev) { return L->cuDeviceGet(dev, ordinal); }

static CUresult cub_device_name(cub_lib* L, int dev, char* buf, int len) {
	if (!L->cuDeviceGetName) return CUB_MISSING;
	return L->cuDeviceGetName(buf, len, dev);
}

static CUresult cub_device_uuid(cub_lib* L, int dev, unsigned char* out16) {
	cub_uuid u;
	memset(&u, 0, sizeof u);
	CUresult r = L->cuDeviceGetUuid(&u, dev);
	memcpy(out16, u.bytes, 16);
	return r;
}

static CUresult cub_device_total_mem(cub_lib* L, int dev, uint64_t* out) {
	if (!L->cuDeviceTotalMem) return CUB_MISSING;
	size_t n = 0;
	CUresult r = L->cuDeviceTotalMem(&n, dev);
	*out = n;
	return r;
}

static CUresult cub_device_attribute(cub_lib* L, int dev, int attr, int* out) {
	if (!L->cuDeviceGetAttribute) return CUB_MISSING;
	return L->cuDeviceGetAttribute(out, attr, dev);
}

static CUresult cub_primary_retain(cub_lib* L, int dev, uintptr_t* ctx) {
	CUcontext c = NULL;
	CUresult r = L->cuDevicePrimaryCtxRetain(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}

static CUresult cub_primary_release(cub_lib* L, int dev) { return L->cuDevicePrimaryCtxRelease(dev); }

// CUB_IN(ctx) pushes ctx for the rest of the wrapper; CUB_OUT pops it and returns r.
#define CUB_IN(ctx)                                             \
	CUresult r = L->cuCtxPushCurrent((CUcontext)(ctx));         \
	if (r != 0) return r;
#define CUB_OUT                                                 \
	do {                                                        \
		CUcontext popped_;                                      \
		L->cuCtxPopCurrent(&popped_);                           \
		return r;                                               \
	} while (0)
#define CUB_NEED(fn) \
	if (!L->fn) return CUB_MISSING;

static CUresult cub_ctx_synchronize(cub_lib* L, uintptr_t ctx) {
	CUB_NEED(cuCtxSynchronize)
	CUB_IN(ctx)
	r = L->cuCtxSynchronize();
	CUB_OUT;
}

static CUresult cub_stream_create(cub_lib* L, uintptr_t ctx, uintptr_t* out) {
	CUB_NEED(cuStreamCreate)
	CUB_IN(ctx)
	CUstream s = NULL;
	r = L->cuStreamCreate(&s, CUB_STREAM_NON_BLOCKING);
	*out = (uintptr_t)s;
	CUB_OUT;
}

static CUresult cub_stream_destroy(cub_lib* L, uintptr_t ctx, uintptr_t s) {
	CUB_NEED(cuStreamDestroy)
	CUB_IN(ctx)
	r = L->cuStreamDestroy((CUstream)s);
	CUB_OUT;
}

static CUresult cub_stream_synchronize(cub_lib* L, uintptr_t ctx, uintptr_t s) {
	CUB_NEED(cuStreamSynchronize)
	CUB_IN(ctx)
	r = L->cuStreamSynchronize((CUstream)s);
	CUB_OUT;
}

static CUresult cub_stream_query(cub_lib* L, uintptr_t ctx, uintptr_t s) {
	CUB_NEED(cuStreamQuery)
	CUB_IN(ctx)
	r = L->cuStreamQuery((CUstream)s);
	CUB_OUT;
}

static CUresult cub_mem_alloc(cub_lib* L, uintptr_t ctx, uint64_t size, uint64_t* out) {
	CUB_NEED(cuMemAlloc)
	CUB_IN(ctx)
	CUdeviceptr p = 0;
	r = L->cuMemAlloc(&p, (size_t)size);
	*out = p;
	CUB_OUT;
}

static CUresult cub_mem_free(cub_lib* L, uintptr_t ctx, uint64_t p) {
	CUB_NEED(cuMemFree)
	CUB_IN(ctx)
	r = L->cuMemFree((CUdeviceptr)p);
	CUB_OUT;
}

static CUresult cub_memcpy_htod(cub_lib* L, uintptr_t ctx, uint64_t dst, const void* src, uint64_t n) {
	CUB_NEED(cuMemcpyHtoD)
	CUB_IN(ctx)
	r = L->cuMemcpyHtoD((CUdeviceptr)dst, src, (size_t)n);
	CUB_OUT;
}

static CUresult cub_memcpy_dtoh(cub_lib* L, uintptr_t ctx, void* dst, uint64_t src, uint64_t n) {
	CUB_NEED(cuMemcpyDtoH)
	CUB_IN(ctx)
	r = L->cuMemcpyDtoH(dst, (CUdeviceptr)src, (size_t)n);
	CUB_OUT;
}

static CUresult cub_memcpy_dtod_async(cub_lib* L, uintptr_t ctx, uint64_t dst, uint64_t src, uint64_t n, uintptr_t s) {
	CUB_NEED(cuMemcpyDtoDAsync)
	CUB_IN(ctx)
	r = L->cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)n, (CUstream)s);
	CUB_OUT;
}

static CUresult cub_memset_d8_async(cub_lib* L, uintptr_t ctx, uint64_t dst, unsigned char v, uint64_t n, uintptr_t s) {
	CUB_NEED(cuMemsetD8Async)
	CUB_IN(ctx)
	r = L->cuMemsetD8Async((CUdeviceptr)dst, v, (size_t)n, (CUstream)s);
	CUB_OUT;
}

// cub_import_memory imports an opaque fd (CUDA owns it on success).
static CUresult cub_import_memory(cub_lib* L, uintptr_t ctx, int fd, uint64_t size, int dedicated, uintptr_t* out) {
	CUB_NEED(cuImportExternalMemory)
	CUB_IN(ctx)
	cub_ext_mem_handle_desc d;
	memset(&d, 0, sizeof d);
	d.type = CUB_EXT_MEM_OPAQUE_FD;
	d.handle.fd = fd;
	d.size = size;
	d.flags = dedicated ? CUB_EXT_MEM_DEDICATED : 0;
	CUexternalMemory m = NULL;
	r = L->cuImportExternalMemory(&m, &d);
	*out = (uintptr_t)m;
	CUB_OUT;
}

static CUresult cub_mapped_buffer(cub_lib* L, uintptr_t ctx, uintptr_t mem, uint64_t offset, uint64_t size, uint64_t* out) {
	CUB_NEED(cuExternalMemoryGetMappedBuffer)
	CUB_IN(ctx)
	cub_ext_mem_buffer_desc d;
	memset(&d, 0, sizeof d);
	d.offset = offset;
	d.size = size;
	CUdeviceptr p = 0;
	r = L->cuExternalMemoryGetMappedBuffer(&p, (CUexternalMemory)mem, &d);
	*out = p;
	CUB_OUT;
}

static CUresult cub_destroy_memory(cub_lib* L, uintptr_t ctx, uintptr_t mem) {
	CUB_NEED(cuDestroyExternalMemory)
	CUB_IN(ctx)
	r = L->cuDestroyExternalMemory((CUexternalMemory)mem);
	CUB_OUT;
}

static CUresult cub_import_semaphore(cub_lib* L, uintptr_t ctx, int fd, int timeline, uintptr_t* out) {
	CUB_NEED(cuImportExternalSemaphore)
	CUB_IN(ctx)
	cub_ext_sem_handle_desc d;
	memset(&d, 0, sizeof d);
	d.type = timeline ? CUB_EXT_SEM_TIMELINE_FD : CUB_EXT_SEM_OPAQUE_FD;
	d.handle.fd = fd;
	CUexternalSemaphore s = NULL;
	r = L->cuImportExternalSemaphore(&s, &d);
	*out = (uintptr_t)s;
	CUB_OUT;
}

static CUresult cub_signal_semaphore(cub_lib* L, uintptr_t ctx, uintptr_t sem, uint64_t value, uintptr_t stream) {
	CUB_NEED(cuSignalExternalSemaphoresAsync)
	CUB_IN(ctx)
	cub_ext_sem_signal_params p;
	memset(&p, 0, sizeof p);
	p.params.fence.value = value;
	CUexternalSemaphore s = (CUexternalSemaphore)sem;
	r = L->cuSignalExternalSemaphoresAsync(&s, &p, 1, (CUstream)stream);
	CUB_OUT;
}

static CUresult cub_wait_semaphore(cub_lib* L, uintptr_t ctx, uintptr_t sem, uint64_t value, uintptr_t stream) {
	CUB_NEED(cuWaitExternalSemaphoresAsync)
	CUB_IN(ctx)
	cub_ext_sem_wait_params p;
	memset(&p, 0, sizeof p);
	p.params.fence.value = value;
	CUexternalSemaphore s = (CUexternalSemaphore)sem;
	r = L->cuWaitExternalSemaphoresAsync(&s, &p, 1, (CUstream)stream);
	CUB_OUT;
}

static CUresult cub_destroy_semaphore(cub_lib* L, uintptr_t ctx, uintptr_t sem) {
	CUB_NEED(cuDestroyExternalSemaphore)
	CUB_IN(ctx)
	r = L->cuDestroyExternalSemaphore((CUexternalSemaphore)sem);
	CUB_OUT;
}

static void cub_vmm_prop(cub_mem_alloc_prop* p, int dev) {
	memset(p, 0, sizeof *p);
	p->type = CUB_MEM_ALLOCATION_TYPE_PINNED;
	p->requestedHandleTypes = CUB_MEM_HANDLE_TYPE_POSIX_FD;
	p->location.type = CUB_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = dev;
}

static CUresult cub_vmm_granularity(cub_lib* L, uintptr_t ctx, int dev, int recommended, uint64_t* out) {
	CUB_NEED(cuMemGetAllocationGranularity)
	CUB_IN(ctx)
	cub_mem_alloc_prop p;
	cub_vmm_prop(&p, dev);
	size_t g = 0;
	r = L->cuMemGetAllocationGranularity(&g, &p, recommended ? 1 : 0);
	*out = g;
	CUB_OUT;
}

static CUresult cub_vmm_create(cub_lib* L, uintptr_t ctx, int dev, uint64_t size, uint64_t* out) {
	CUB_NEED(cuMemCreate)
	CUB_IN(ctx)
	cub_mem_alloc_prop p;
	cub_vmm_prop(&p, dev);
	CUmemGenericAllocationHandle h = 0;
	r = L->cuMemCreate(&h, (size_t)size, &p, 0);
	*out = h;
	CUB_OUT;
}

static CUresult cub_vmm_release(cub_lib* L, uintptr_t ctx, uint64_t h) {
	CUB_NEED(cuMemRelease)
	CUB_IN(ctx)
	r = L->cuMemRelease((CUmemGenericAllocationHandle)h);
	CUB_OUT;
}

static CUresult cub_vmm_export_fd(cub_lib* L, uintptr_t ctx, uint64_t h, int* fd) {
	CUB_NEED(cuMemExportToShareableHandle)
	CUB_IN(ctx)
	int f = -1;
	r = L->cuMemExportToShareableHandle(&f, (CUmemGenericAllocationHandle)h, CUB_MEM_HANDLE_TYPE_POSIX_FD, 0);
	*fd = f;
	CUB_OUT;
}

static CUresult cub_vmm_import_fd(cub_lib* L, uintptr_t ctx, int fd, uint64_t* out) {
	CUB_NEED(cuMemImportFromShareableHandle)
	CUB_IN(ctx)
	CUmemGenericAllocationHandle h = 0;
	r = L->cuMemImportFromShareableHandle(&h, (void*)(uintptr_t)fd, CUB_MEM_HANDLE_TYPE_POSIX_FD);
	*out = h;
	CUB_OUT;
}

static CUresult cub_vmm_reserve(cub_lib* L, uintptr_t ctx, uint64_t size, uint64_t align, uint64_t* out) {
	CUB_NEED(cuMemAddressReserve)
	CUB_IN(ctx)
	CUdeviceptr p = 0;
	r = L->cuMemAddressReserve(&p, (size_t)size, (size_t)align, 0, 0);
	*out = p;
	CUB_OUT;
}

static CUresult cub_vmm_free_address(cub_lib* L, uintptr_t ctx, uint64_t p, uint64_t size) {
	CUB_NEED(cuMemAddressFree)
	CUB_IN(ctx)
	r = L->cuMemAddressFree((CUdeviceptr)p, (size_t)size);
	CUB_OUT;
}

static CUresult cub_vmm_map(cub_lib* L, uintptr_t ctx, uint64_t p, uint64_t size, uint64_t h) {
	CUB_NEED(cuMemMap)
	CUB_IN(ctx)
	r = L->cuMemMap((CUdeviceptr)p, (size_t)size, 0, (CUmemGenericAllocationHandle)h, 0);
	CUB_OUT;
}

static CUresult cub_vmm_unmap(cub_lib* L, uintptr_t ctx, uint64_t p, uint64_t size) {
	CUB_NEED(cuMemUnmap)
	CUB_IN(ctx)
	r = L->cuMemUnmap((CUdeviceptr)p, (size_t)size);
	CUB_OUT;
}

static CUresult cub_vmm_set_access(cub_lib* L, uintptr_t ctx, uint64_t p, uint64_t size, int dev) {
	CUB_NEED(cuMemSetAccess)
	CUB_IN(ctx)
	cub_mem_access_desc a;
	memset(&a, 0, sizeof a);
	a.location.type = CUB_MEM_LOCATION_TYPE_DEVICE;
	a.location.id = dev;
	a.flags = CUB_MEM_ACCESS_READWRITE;
	r = L->cuMemSetAccess((CUdeviceptr)p, (size_t)size, &a, 1);
	CUB_OUT;
}

static CUresult cub_module_load(cub_lib* L, uintptr_t ctx, const char* image, uintptr_t* out) {
	CUB_NEED(cuModuleLoadData)
	CUB_IN(ctx)
	CUmodule m = NULL;
	r = L->cuModuleLoadData(&m, image);
	*out = (uintptr_t)m;
	CUB_OUT;
}

static CUresult cub_module_unload(cub_lib* L, uintptr_t ctx, uintptr_t m) {
	CUB_NEED(cuModuleUnload)
	CUB_IN(ctx)
	r = L->cuModuleUnload((CUmodule)m);
	CUB_OUT;
}

static CUresult cub_module_function(cub_lib* L, uintptr_t ctx, uintptr_t m, const char* name, uintptr_t* out) {
	CUB_NEED(cuModuleGetFunction)
	CUB_IN(ctx)
	CUfunction f = NULL;
	r = L->cuModuleGetFunction(&f, (CUmodule)m, name);
	*out = (uintptr_t)f;
	CUB_OUT;
}

// cub_launch_u64 launches fn<<<1, 1, 0, stream>>>(arg).
static CUresult cub_launch_u64(cub_lib* L, uintptr_t ctx, uintptr_t fn, uintptr_t stream, uint64_t arg) {
	CUB_NEED(cuLaunchKernel)
	CUB_IN(ctx)
	unsigned long long a = arg;
	void* params[1] = {&a};
	r = L->cuLaunchKernel((CUfunction)fn, 1, 1, 1, 1, 1, 1, 0, (CUstream)stream, params, NULL);
	CUB_OUT;
}

#endif
