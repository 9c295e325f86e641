// cnl.h: vkzip's minimal NCCL layer. libnccl.so.2 is dlopened at run time; no
// NCCL or CUDA header is used, so the few types below are declared here with
// the values and layouts of nccl.h (NCCL 2.7 and later, 64-bit), checked by
// the static assertions after them.
//
// A whole NCCL group (ncclGroupStart, the sends and receives, ncclGroupEnd)
// runs inside one C call: NCCL keeps its group state per thread, and a Go
// goroutine may change threads between cgo calls. Every entry point is
// checked for NULL before it is called (CNL_MISSING instead of a call).
//
// Included only by nccl_cgo.go (build tags cgo && linux).

#ifndef VKZIP_CNL_H
#define VKZIP_CNL_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cnl_comm_opaque* ncclComm_t; // struct ncclComm*
typedef void* cudaStream_t;                 // CUstream: runtime and driver streams are the same objects

// ncclUniqueId: 128 opaque bytes (passed by value to ncclCommInitRank, which
// vkzip does not use: its two ranks live in one process, ncclCommInitAll).
#define CNL_UNIQUE_ID_BYTES 128
typedef struct { char internal[CNL_UNIQUE_ID_BYTES]; } ncclUniqueId;

// ncclResult_t (values of nccl.h; ncclTimeout is NCCL 2.28+).
typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
	ncclTimeout = 8,
} ncclResult_t;

// ncclDataType_t (the values vkzip uses; ncclInt8 = ncclChar = 0).
typedef enum {
	ncclInt8 = 0,
	ncclUint8 = 1,
	ncclInt32 = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6,
	ncclFloat32 = 7,
	ncclFloat64 = 8,
	ncclBfloat16 = 9,
} ncclDataType_t;

#define CNL_MISSING (-1)

// One point-to-point operation of a group; built by Go as a C array.
typedef struct {
	int32_t recv;    // 0: ncclSend, 1: ncclRecv
	int32_t peer;    // the peer's rank
	int32_t dtype;   // ncclDataType_t
	int32_t pad;
	uint64_t buf;    // device address
	uint64_t count;  // elements of dtype
	uintptr_t comm;  // ncclComm_t
	uintptr_t stream; // cudaStream_t
} cnl_op;

_Static_assert(sizeof(void*) == 8, "64-bit only");
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
_Static_assert(sizeof(ncclResult_t) == 4, "ncclResult_t is an int-sized enum");
_Static_assert(sizeof(ncclDataType_t) == 4, "ncclDataType_t is an int-sized enum");
_Static_assert(sizeof(cnl_op) == 48, "cnl_op");

typedef struct {
	void* h;
	ncclResult_t (*ncclGetVersion)(int*);
	const char* (*ncclGetErrorString)(ncclResult_t);
	const char* (*ncclGetLastError)(ncclComm_t);
	ncclResult_t (*ncclGetUniqueId)(ncclUniqueId*);
	ncclResult_t (*ncclCommInitAll)(ncclComm_t*, int, const int*);
	ncclResult_t (*ncclCommDestroy)(ncclComm_t);
	ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t*);
	ncclResult_t (*ncclCommCuDevice)(ncclComm_t, int*);
	ncclResult_t (*ncclCommUserRank)(ncclComm_t, int*);
	ncclResult_t (*ncclGroupStart)(void);
	ncclResult_t (*ncclGroupEnd)(void);
	ncclResult_t (*ncclSend)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
	ncclResult_t (*ncclRecv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
} cnl_lib;

// cnl_open dlopens path and fetches the entry points. It returns NULL with a
// message in err when the library cannot be opened or lacks an entry point
// vkzip cannot do without (those of NCCL 2.7, which introduced send/recv).
static cnl_lib* cnl_open(const char* path, char* err, size_t errLen) {
	void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char* e = dlerror();
		snprintf(err, errLen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	cnl_lib* L = (cnl_lib*)calloc(1, sizeof(cnl_lib));
	if (!L) {
		snprintf(err, errLen, "out of memory");
		return NULL;
	}
	L->h = h;
#define CNL_LOAD(name) L->name = (typeof(L->name))dlsym(h, #name)
	CNL_LOAD(ncclGetVersion);
	CNL_LOAD(ncclGetErrorString);
	CNL_LOAD(ncclGetLastError);
	CNL_LOAD(ncclGetUniqueId);
	CNL_LOAD(ncclCommInitAll);
	CNL_LOAD(ncclCommDestroy);
	CNL_LOAD(ncclCommGetAsyncError);
	CNL_LOAD(ncclCommCuDevice);
	CNL_LOAD(ncclCommUserRank);
	CNL_LOAD(ncclGroupStart);
	CNL_LOAD(ncclGroupEnd);
	CNL_LOAD(ncclSend);
	CNL_LOAD(ncclRecv);
#undef CNL_LOAD
	const char* missing = NULL;
	if (!L->ncclGetVersion) missing = "ncclGetVersion";
	else if (!L->ncclGetErrorString) missing = "ncclGetErrorString";
	else if (!L->ncclCommInitAll) missing = "ncclCommInitAll";
	else if (!L->ncclCommDestroy) missing = "ncclCommDestroy";
	else if (!L->ncclGroupStart) missing = "ncclGroupStart";
	else if (!L->ncclGroupEnd) missing = "ncclGroupEnd";
	else if (!L->ncclSend) missing = "ncclSend";
	else if (!L->ncclRecv) missing = "ncclRecv";
	if (missing) {
		snprintf(err, errLen, "%s has no %s (not an NCCL library, or one older than NCCL 2.7)", path, missing);
		// The library stays loaded: its constructors may have run.
		free(L);
		return NULL;
	}
	return L;
}

static int cnl_version(cnl_lib* L, int* v) {
	if (!L->ncclGetVersion) return CNL_MISSING;
	return L->ncclGetVersion(v);
}

static const char* cnl_error_string(cnl_lib* L, int r) {
	const char* s = NULL;
	if (L->ncclGetErrorString) s = L->ncclGetErrorString((ncclResult_t)r);
	return s ? s : "";
}

static const char* cnl_last_error(cnl_lib* L, uintptr_t comm) {
	const char* s = NULL;
	if (L->ncclGetLastError) s = L->ncclGetLastError((ncclComm_t)comm);
	return s ? s : "";
}

static int cnl_unique_id(cnl_lib* L, unsigned char* out128) {
	if (!L->ncclGetUniqueId) return CNL_MISSING;
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	int r = L->ncclGetUniqueId(&id);
	memcpy(out128, id.internal, sizeof id.internal);
	return r;
}

// cnl_init_all creates n communicators, one per device of devs, in this
// process (ncclCommInitAll); out receives them in the order of devs.
static int cnl_init_all(cnl_lib* L, int n, const int* devs, uintptr_t* out) {
	if (!L->ncclCommInitAll) return CNL_MISSING;
	if (n <= 0 || n > 64) return ncclInvalidArgument;
	ncclComm_t comms[64];
	memset(comms, 0, sizeof comms);
	int r = L->ncclCommInitAll(comms, n, devs);
	for (int i = 0; i < n; i++) out[i] = (uintptr_t)comms[i];
	return r;
}

static int cnl_destroy(cnl_lib* L, uintptr_t comm) {
	if (!L->ncclCommDestroy) return CNL_MISSING;
	return L->ncclCommDestroy((ncclComm_t)comm);
}

static int cnl_async_error(cnl_lib* L, uintptr_t comm, int* async) {
	if (!L->ncclCommGetAsyncError) return CNL_MISSING;
	ncclResult_t a = ncclSuccess;
	int r = L->ncclCommGetAsyncError((ncclComm_t)comm, &a);
	*async = (int)a;
	return r;
}

static int cnl_cu_device(cnl_lib* L, uintptr_t comm, int* dev) {
	if (!L->ncclCommCuDevice) return CNL_MISSING;
	return L->ncclCommCuDevice((ncclComm_t)comm, dev);
}

static int cnl_user_rank(cnl_lib* L, uintptr_t comm, int* rank) {
	if (!L->ncclCommUserRank) return CNL_MISSING;
	return L->ncclCommUserRank((ncclComm_t)comm, rank);
}

// cnl_group runs ops as one group on this thread. The group is always closed
// (ncclGroupEnd) once opened, even after a failed call inside it; *failed is
// the index of the first op that failed, or -1.
static int cnl_group(cnl_lib* L, const cnl_op* ops, int n, int* failed) {
	*failed = -1;
	if (!L->ncclGroupStart || !L->ncclGroupEnd || !L->ncclSend || !L->ncclRecv) return CNL_MISSING;
	int r = L->ncclGroupStart();
	if (r != ncclSuccess) return r;
	for (int i = 0; i < n; i++) {
		const cnl_op* o = &ops[i];
		int ri;
		if (o->recv)
			ri = L->ncclRecv((void*)(uintptr_t)o->buf, (size_t)o->count, (ncclDataType_t)o->dtype, o->peer,
				(ncclComm_t)o->comm, (cudaStream_t)o->stream);
		else
			ri = L->ncclSend((const void*)(uintptr_t)o->buf, (size_t)o->count, (ncclDataType_t)o->dtype, o->peer,
				(ncclComm_t)o->comm, (cudaStream_t)o->stream);
		if (ri != ncclSuccess && r == ncclSuccess) {
			r = ri;
			*failed = i;
		}
	}
	int re = L->ncclGroupEnd();
	return r != ncclSuccess ? r : re;
}

// cnl_layout reports the sizes and offsets the Go side checks in its tests.
static void cnl_layout(int* out) {
	out[0] = (int)sizeof(ncclUniqueId);
	out[1] = (int)sizeof(ncclResult_t);
	out[2] = (int)sizeof(ncclDataType_t);
	out[3] = (int)sizeof(cnl_op);
	out[4] = (int)offsetof(cnl_op, buf);
	out[5] = (int)offsetof(cnl_op, count);
	out[6] = (int)offsetof(cnl_op, comm);
	out[7] = (int)offsetof(cnl_op, stream);
	out[8] = (int)ncclUint8;
	out[9] = (int)ncclBfloat16;
	out[10] = (int)ncclInProgress;
	out[11] = (int)ncclTimeout;
}

#endif
