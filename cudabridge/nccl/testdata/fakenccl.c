// A stand-in for libnccl.so.2 that moves no data: it logs every call and
// its arguments to $FAKE_NCCL_LOG, so that tests can check what the cgo layer
// passes (argument order, widths, the group bracket, the environment NCCL
// would read) on machines without NCCL. Built by nccl_test.go with cc; the
// NCCL types are declared here as nccl.h declares them.
//
// -DFAKE_VERSION=N sets ncclGetVersion's code; -DFAKE_NO_SEND leaves ncclSend
// out (a library that is not a usable NCCL).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 22803
#endif

typedef struct { char internal[128]; } ncclUniqueId;
typedef int ncclResult_t;
typedef int ncclDataType_t;
struct fake_comm { int rank, dev; };
typedef struct fake_comm* ncclComm_t;
typedef void* cudaStream_t;

static struct fake_comm comms[8];

static void logf_(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logf_(const char* fmt, ...) {
	const char* p = getenv("FAKE_NCCL_LOG");
	if (!p) return;
	FILE* f = fopen(p, "a");
	if (!f) return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static const char* env(const char* k) {
	const char* v = getenv(k);
	return v ? v : "<unset>";
}

ncclResult_t ncclGetVersion(int* v) { *v = FAKE_VERSION; return 0; }

const char* ncclGetErrorString(ncclResult_t r) {
	static char buf[64];
	snprintf(buf, sizeof buf, "fake description of %d", r);
	return buf;
}

const char* ncclGetLastError(ncclComm_t c) { return c ? "fake last error of a communicator" : "fake last error"; }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
	for (int i = 0; i < 128; i++) id->internal[i] = (char)(i ^ 0x5a);
	return 0;
}

ncclResult_t ncclCommInitAll(ncclComm_t* out, int n, const int* devs) {
	logf_("initall n=%d devs=%d,%d NCCL_NVLS_ENABLE=%s NCCL_P2P_DIRECT_DISABLE=%s TORCH_SYMM_MEM_DISABLE_MULTICAST=%s "
	      "NVSHMEM_DISABLE_NVLS=%s", n, devs[0], n > 1 ? devs[1] : -1, env("NCCL_NVLS_ENABLE"),
	      env("NCCL_P2P_DIRECT_DISABLE"), env("TORCH_SYMM_MEM_DISABLE_MULTICAST"), env("NVSHMEM_DISABLE_NVLS"));
	if (n > 8) return 4;
	for (int i = 0; i < n; i++) {
		comms[i].rank = i;
		comms[i].dev = devs[i];
		out[i] = &comms[i];
	}
	return 0;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) { logf_("destroy rank=%d", c->rank); return 0; }

// Rank 1 reports a remote error when FAKE_NCCL_ASYNC is set.
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* a) {
	*a = (getenv("FAKE_NCCL_ASYNC") && c->rank == 1) ? 6 : 0;
	return 0;
}

ncclResult_t ncclCommCuDevice(ncclComm_t c, int* d) {
	// FAKE_NCCL_WRONG_DEV: claim another device than the one asked for.
	*d = c->dev + (getenv("FAKE_NCCL_WRONG_DEV") ? 1 : 0);
	return 0;
}

ncclResult_t ncclCommUserRank(ncclComm_t c, int* r) { *r = c->rank; return 0; }

ncclResult_t ncclGroupStart(void) { logf_("groupstart"); return 0; }

ncclResult_t ncclGroupEnd(void) { logf_("groupend"); return 0; }

#ifndef FAKE_NO_SEND
// A count of 7 fails (a bad call inside a group).
ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
	logf_("send buf=%#llx count=%zu type=%d peer=%d rank=%d stream=%#llx", (unsigned long long)(uintptr_t)buf, count, t,
	      peer, c->rank, (unsigned long long)(uintptr_t)s);
	return count == 7 ? 4 : 0;
}
#endif

ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
	logf_("recv buf=%#llx count=%zu type=%d peer=%d rank=%d stream=%#llx", (unsigned long long)(uintptr_t)buf, count, t,
	      peer, c->rank, (unsigned long long)(uintptr_t)s);
	return 0;
}
