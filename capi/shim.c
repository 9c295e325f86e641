/*
 * The public entry points of libvkzip.so (include/vkzip.h). Each one runs in C first: it clears this thread's
 * error message and refuses calls in a child forked after the library was loaded (the Go runtime's threads do
 * not exist there, so entering it could hang forever), then forwards to the Go export vkzipgo_NAME with the same
 * parameters. Functions that need no Go (messages, class names, free) are C only.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vkzip.h"
#include "shim.h"
#include "_cgo_export.h"

static volatile int forked;

static void on_fork_child(void) { forked = 1; }

__attribute__((constructor)) static void shim_init(void) { pthread_atfork(NULL, NULL, on_fork_child); }

/* This thread's last-error message (malloc'd), or NULL for "". */
static __thread char *last_msg;

void vkzip__set_error(char *msg) {
    free(last_msg);
    last_msg = msg;
}

static void clear_error(void) {
    if (last_msg != NULL) {
        free(last_msg);
        last_msg = NULL;
    }
}

static int fail_forked(void) {
    vkzip__set_error(strdup("vkzip: the library was loaded before this process forked: the Go runtime inside it "
                            "does not survive fork(), so it cannot be used in the child (load it after fork, or "
                            "use a spawn/exec start method)"));
    return VKZIP_E_FORKED;
}

#define ENTER()                    \
    do {                           \
        clear_error();             \
        if (forked)                \
            return fail_forked();  \
    } while (0)

const char *vkzip_last_error(void) { return last_msg != NULL ? last_msg : ""; }

uint32_t vkzip_abi_version(void) { return VKZIP_ABI_VERSION; }

const char *vkzip_error_class(int status) {
    switch (status) {
    case VKZIP_OK: return "ok";
    case VKZIP_E_INVALID_ARGUMENT: return "invalid_argument";
    case VKZIP_E_FORMAT: return "format";
    case VKZIP_E_VERSION: return "version";
    case VKZIP_E_TRUNCATED: return "truncated";
    case VKZIP_E_CHECKSUM: return "checksum";
    case VKZIP_E_CORRUPT: return "corrupt";
    case VKZIP_E_NONCANONICAL: return "noncanonical";
    case VKZIP_E_TOO_LARGE: return "too_large";
    case VKZIP_E_UNSUPPORTED: return "unsupported";
    case VKZIP_E_NO_DEVICE: return "no_device";
    case VKZIP_E_DEVICE_LOST: return "device_lost";
    case VKZIP_E_IO: return "io";
    case VKZIP_E_BUFFER_TOO_SMALL: return "buffer_too_small";
    case VKZIP_E_FORKED: return "forked";
    case VKZIP_E_CUDA: return "cuda";
    case VKZIP_E_INTERNAL: return "internal";
    }
    return "unknown";
}

void vkzip_free(void *p) { free(p); }

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static const char *version_str;

static void load_version(void) { version_str = vkzipgo_version(); }

const char *vkzip_version(void) {
    clear_error();
    if (forked && version_str == NULL)
        return "unknown (library used after fork)";
    pthread_once(&version_once, load_version);
    return version_str;
}

int vkzip_devices(char **json_out) {
    ENTER();
    return vkzipgo_devices(json_out);
}

int vkzip_open(const vkzip_options *opts, vkzip_codec *out) {
    ENTER();
    return vkzipgo_open((vkzip_options *)opts, out);
}

int vkzip_close(vkzip_codec codec) {
    ENTER();
    return vkzipgo_close(codec);
}

int vkzip_codec_info(vkzip_codec codec, char **json_out) {
    ENTER();
    return vkzipgo_codec_info(codec, json_out);
}

size_t vkzip_encode_bound(const char *dtype, size_t nbytes, int32_t ndim) {
    clear_error();
    if (forked) {
        fail_forked();
        return 0;
    }
    return vkzipgo_encode_bound((char *)dtype, nbytes, ndim);
}

int vkzip_encode(vkzip_codec codec, const char *dtype, const void *src, size_t nbytes, const uint64_t *shape,
                 int32_t ndim, void *dst, size_t dst_cap, size_t *out_len) {
    ENTER();
    return vkzipgo_encode(codec, (char *)dtype, (void *)src, nbytes, (uint64_t *)shape, ndim, dst, dst_cap, out_len);
}

int vkzip_encode_alloc(vkzip_codec codec, const char *dtype, const void *src, size_t nbytes,
                       const uint64_t *shape, int32_t ndim, void **out, size_t *out_len) {
    ENTER();
    return vkzipgo_encode_alloc(codec, (char *)dtype, (void *)src, nbytes, (uint64_t *)shape, ndim, out, out_len);
}

int vkzip_payload_info(const void *src, size_t len, vkzip_info *info) {
    ENTER();
    return vkzipgo_payload_info((void *)src, len, info);
}

int vkzip_decode(vkzip_codec codec, const void *src, size_t len, void *dst, size_t dst_cap, size_t *out_len) {
    ENTER();
    return vkzipgo_decode(codec, (void *)src, len, dst, dst_cap, out_len);
}

int vkzip_decode_alloc(vkzip_codec codec, const void *src, size_t len, void **out, size_t *out_len) {
    ENTER();
    return vkzipgo_decode_alloc(codec, (void *)src, len, out, out_len);
}

int vkzip_encode_tensorfile(vkzip_codec codec, const void *src, size_t len, void **out, size_t *out_len) {
    ENTER();
    return vkzipgo_encode_tensorfile(codec, (void *)src, len, out, out_len);
}

int vkzip_encode_file(vkzip_codec codec, const char *in_path, const char *out_path) {
    ENTER();
    return vkzipgo_encode_file(codec, (char *)in_path, (char *)out_path);
}

int vkzip_decode_file(vkzip_codec codec, const char *in_path, const char *out_path) {
    ENTER();
    return vkzipgo_decode_file(codec, (char *)in_path, (char *)out_path);
}

int vkzip_calibrate(const char *dtype, const void *src, size_t nbytes, uint8_t codebook[16]) {
    ENTER();
    return vkzipgo_calibrate((char *)dtype, (void *)src, nbytes, codebook);
}

int vkzip_encode_cuda(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                      const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream, void **out,
                      size_t *out_len) {
    ENTER();
    return vkzipgo_encode_cuda(codec, (char *)dtype, dev_ptr, nbytes, (uint64_t *)shape, ndim, cuda_device, stream,
                               out, out_len);
}

int vkzip_decode_cuda(vkzip_codec codec, const void *src, size_t len, uint64_t dev_ptr, size_t dst_cap,
                      int32_t cuda_device, uint64_t stream, size_t *out_len) {
    ENTER();
    return vkzipgo_decode_cuda(codec, (void *)src, len, dev_ptr, dst_cap, cuda_device, stream, out_len);
}

int vkzip_encode_cuda_to_cuda(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                              const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream,
                              uint64_t dst_ptr, size_t dst_cap, size_t *out_len) {
    ENTER();
    return vkzipgo_encode_cuda_to_cuda(codec, (char *)dtype, dev_ptr, nbytes, (uint64_t *)shape, ndim, cuda_device,
                                       stream, dst_ptr, dst_cap, out_len);
}

int vkzip_encode_cuda_to_cuda_aligned(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                                      const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream,
                                      uint64_t dst_ptr, size_t dst_cap, size_t *out_off, size_t *out_len) {
    ENTER();
    return vkzipgo_encode_cuda_to_cuda_aligned(codec, (char *)dtype, dev_ptr, nbytes, (uint64_t *)shape, ndim,
                                               cuda_device, stream, dst_ptr, dst_cap, out_off, out_len);
}

int vkzip_decode_cuda_to_cuda(vkzip_codec codec, uint64_t src_ptr, size_t len, uint64_t dev_ptr, size_t dst_cap,
                              int32_t cuda_device, uint64_t stream, size_t *out_len) {
    ENTER();
    return vkzipgo_decode_cuda_to_cuda(codec, src_ptr, len, dev_ptr, dst_cap, cuda_device, stream, out_len);
}

int vkzip_payload_info_cuda(uint64_t src_ptr, size_t len, int32_t cuda_device, uint64_t stream, vkzip_info *info) {
    ENTER();
    return vkzipgo_payload_info_cuda(src_ptr, len, cuda_device, stream, info);
}

int vkzip_cuda_alloc(vkzip_codec codec, int32_t cuda_device, size_t nbytes, uint64_t *dev_ptr) {
    ENTER();
    return vkzipgo_cuda_alloc(codec, cuda_device, nbytes, dev_ptr);
}

int vkzip_cuda_free(vkzip_codec codec, int32_t cuda_device, uint64_t dev_ptr) {
    ENTER();
    return vkzipgo_cuda_free(codec, cuda_device, dev_ptr);
}

int vkzip_cuda_get_counters(vkzip_cuda_counters *out) {
    ENTER();
    return vkzipgo_cuda_get_counters(out);
}
