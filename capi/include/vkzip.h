/*
 * vkzip.h: the C ABI of libvkzip.so, lossless compression of LLM KV caches (BF16, FP16, FP32, FP8).
 *
 * libvkzip.so is built from Go (`go build -buildmode=c-shared ./capi`, or `make python`); this header is
 * hand-written and is the contract. Payloads are the vkzip container format (docs/FORMAT.md): the payload of a
 * buffer or file made here is byte for byte the one `vkzip encode` makes from the same bytes with the same
 * options, and either side decodes the other's.
 *
 * Versioning. VKZIP_ABI_VERSION changes whenever a declaration below changes incompatibly; vkzip_abi_version()
 * is the value the library was built with, so a caller checks `vkzip_abi_version() == VKZIP_ABI_VERSION` once.
 * Structs passed in begin with a struct_size the caller sets to sizeof(the struct): the library reads only that
 * many bytes and takes zero for fields it does not get, so fields are only ever added at the end.
 *
 * Errors. Every function that can fail returns an int status: VKZIP_OK (0) or one VKZIP_E_* code, one per error
 * class of the codec. vkzip_last_error() is the message of the last call made on this thread (thread-local: calls
 * on other threads do not touch it; "" after a call that succeeded). vkzip_error_class() names a status.
 *
 * Threads. Every function is safe to call from any thread. A codec handle is safe for concurrent encode and
 * decode calls; vkzip_close() waits for the handle's calls in flight and makes later calls on it fail with
 * VKZIP_E_INVALID_ARGUMENT (a closed handle is never reused).
 *
 * Memory. The library never keeps a pointer the caller passed beyond the call. Buffers it allocates (the *_alloc
 * functions, JSON strings) are malloc'd and released with vkzip_free(). Output parameters are written only when
 * the call returns VKZIP_OK, except out_len on VKZIP_E_BUFFER_TOO_SMALL, which then holds the size needed.
 *
 * fork(). The Go runtime inside the library does not survive fork(): in a child process forked after the library
 * was loaded every call returns VKZIP_E_FORKED at once, without entering the runtime (it would hang). Load the
 * library in each process (Python: multiprocessing with the "spawn" start method) or exec.
 *
 * dtypes are named as strings, case-insensitively: "bf16", "f16", "f32", "f8_e4m3", "f8_e5m2" are coded;
 * the other safetensors dtypes ("f64", "i32", "u8", "bool", ...) are stored as they are.
 */
#ifndef VKZIP_H
#define VKZIP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. */
#define VKZIP_ABI_VERSION 1

/* The most dimensions vkzip_payload_info reports (a tensor may have up to 255). */
#define VKZIP_MAX_DIMS 32

/* Status codes. Keep in step with vkzip_error_class() and capi/errors.go. */
#define VKZIP_OK 0
#define VKZIP_E_INVALID_ARGUMENT 1 /* NULL where a pointer is needed, unknown dtype, bad shape, closed handle */
#define VKZIP_E_FORMAT 2           /* not a vkzip payload (bad magic) */
#define VKZIP_E_VERSION 3          /* a container version or feature this library does not know */
#define VKZIP_E_TRUNCATED 4        /* the payload ends before the structures it declares */
#define VKZIP_E_CHECKSUM 5         /* a CRC-32C does not match: the data was damaged */
#define VKZIP_E_CORRUPT 6          /* structures that contradict each other */
#define VKZIP_E_NONCANONICAL 7     /* decodable, but never produced by an encoder */
#define VKZIP_E_TOO_LARGE 8        /* sizes beyond the format's or the platform's limits */
#define VKZIP_E_UNSUPPORTED 9      /* a format, dtype, backend or option this build lacks */
#define VKZIP_E_NO_DEVICE 10       /* a backend or CUDA call that needs a device found none */
#define VKZIP_E_DEVICE_LOST 11     /* the GPU was lost during the call */
#define VKZIP_E_IO 12              /* reading or writing a file failed */
#define VKZIP_E_BUFFER_TOO_SMALL 13 /* the caller's output buffer is too small: *out_len holds the size needed */
#define VKZIP_E_FORKED 14          /* called in a child forked after the library was loaded */
#define VKZIP_E_CUDA 15            /* a CUDA driver call failed */
#define VKZIP_E_INTERNAL 16        /* a bug in the library (a recovered Go panic); the message says where */

/* A codec: a backend opened with its options. 0 is never a valid handle. */
typedef uint64_t vkzip_codec;

/* Options of vkzip_open. Zero (VKZIP_OPTIONS_INIT) means the default of every field. */
typedef struct vkzip_options {
    uint32_t struct_size;  /* sizeof(vkzip_options) */
    const char *backend;   /* "auto" (NULL or ""): a usable GPU, else the Go CPU backend; "cpu"; "vulkan" */
    const char *device;    /* device selector of GPU backends (`vkzip devices`); NULL or "": the backend's choice */
    const char *formats;   /* format list as `vkzip encode --format`, e.g. "tbe3,xw3"; NULL or "": splitzip4,xw3 */
    const char *prefer;    /* "speed", "balanced" or "ratio" as `vkzip encode --prefer`; excludes formats */
    const uint8_t *codebook; /* SplitZip-4 codebook: 16 distinct exponent bytes (vkzip_calibrate), or the JSON
                                of `vkzip calibrate -o`; NULL: each encode calibrates on its own BF16 input */
    size_t codebook_len;   /* bytes at codebook */
    int32_t no_checksums;  /* nonzero: leave chunk checksums out (faster; corruption of tensor data undetected) */
    uint32_t chunk_size;   /* values per chunk, a power of two 1024..65536; 0: the format's default */
} vkzip_options;

#define VKZIP_OPTIONS_INIT { sizeof(vkzip_options), NULL, NULL, NULL, NULL, NULL, 0, 0, 0 }

/* What vkzip_payload_info reads from a payload's headers (the bodies are not checked). */
typedef struct vkzip_info {
    uint32_t struct_size;  /* sizeof(vkzip_info), set by the caller */
    uint32_t containers;   /* containers in the payload (a file: 1; a stream: its frames) */
    uint64_t decoded_size; /* bytes vkzip_decode writes */
    uint32_t tensors;      /* tensor records */
    uint32_t blobs;        /* verbatim byte records (file headers) */
    int32_t checksums;     /* 1 when every container carries checksums */
    /* The first tensor record (when tensors > 0): a buffer from vkzip_encode is exactly one tensor, no blob. */
    char dtype[16];        /* lower-case dtype name, "bf16"; "opaque" for bytes of an unknown dtype */
    char format[16];       /* the format it is coded in, "splitzip4"; "stored" */
    int32_t ndim;          /* its rank (may exceed VKZIP_MAX_DIMS: then shape holds the first ones) */
    uint64_t shape[VKZIP_MAX_DIMS];
} vkzip_info;

/* How CUDA tensor data moved (process-wide; the counts only ever grow). vkzip_encode_cuda and vkzip_decode_cuda
 * take the shared path where they can: one device-to-device copy between the caller's memory and a buffer shared
 * by CUDA and Vulkan (device_copy_bytes), the codec working in place there (zero_copy_bytes), no value through
 * host memory (host_staged_bytes does not move; the payload itself is host memory either way). Otherwise they
 * stage the values through host memory (host_staged_bytes), and last_path says why. */
typedef struct vkzip_cuda_counters {
    uint32_t struct_size;        /* sizeof(vkzip_cuda_counters), set by the caller (an older, shorter struct gets
                                    the fields it has) */
    uint64_t host_staged_bytes;  /* value bytes that crossed host memory, each hop counted */
    uint64_t device_copy_bytes;  /* bytes copied device to device */
    uint64_t zero_copy_bytes;    /* bytes read or written in place in memory shared by CUDA and Vulkan */
    uint64_t shared_calls;       /* CUDA encodes and decodes that took the shared path */
    uint64_t staged_calls;       /* those that staged through host memory */
    int32_t last_shared;         /* 1: the process's last CUDA encode or decode took the shared path */
    char last_path[128];         /* that call's path: "shared: <Vulkan device>" or "staged: <why>"; "" before any */
} vkzip_cuda_counters;

/* ---- library ---- */

/* VKZIP_ABI_VERSION as the library was built. Never fails. */
uint32_t vkzip_abi_version(void);
/* The library version ("v1.2.3", or "(devel) rev abc123"): a static string. Never fails. */
const char *vkzip_version(void);
/* The message of the last call on this thread ("" after success). Valid until the next vkzip call on it. */
const char *vkzip_last_error(void);
/* The class name of a status: "ok", "invalid_argument", "format", "version", "truncated", "checksum", "corrupt",
 * "noncanonical", "too_large", "unsupported", "no_device", "device_lost", "io", "buffer_too_small", "forked",
 * "cuda", "internal"; "unknown" for any other value. A static string. */
const char *vkzip_error_class(int status);
/* Releases memory the library allocated (NULL is ignored). */
void vkzip_free(void *p);
/* The backends and devices as a JSON object, in *json_out (NUL-terminated, vkzip_free it):
 * {"backends": [...], "cpu": "...", "vulkan_devices": [{"index", "name", "type", "vendor", "driver", "usable",
 * "reason", "auto_picks"}...], "vulkan_error": "..." (when Vulkan is unavailable)}. */
int vkzip_devices(char **json_out);

/* ---- codecs ---- */

/* Opens a codec (opts NULL: every default) into *out. Unknown backend: VKZIP_E_UNSUPPORTED; a GPU backend asked
 * for by name with no usable device: VKZIP_E_NO_DEVICE; a bad format list, prefer mode, chunk size or codebook:
 * VKZIP_E_UNSUPPORTED / VKZIP_E_INVALID_ARGUMENT / VKZIP_E_CORRUPT (a codebook repeating an exponent). */
int vkzip_open(const vkzip_options *opts, vkzip_codec *out);
/* Closes a codec and its backend. Closing 0 or a closed handle is VKZIP_E_INVALID_ARGUMENT. */
int vkzip_close(vkzip_codec codec);
/* The codec as a JSON object in *json_out (vkzip_free it): {"backend", "device", "note", "formats",
 * "checksums", "abi_version", "version"}; note says what backend "auto" picked and why. */
int vkzip_codec_info(vkzip_codec codec, char **json_out);

/* ---- host buffers ---- */

/* The largest payload vkzip_encode makes from nbytes of dtype with ndim dimensions (ndim -1: flat), whatever the
 * codec's formats, plus the 15 bytes vkzip_encode_cuda_to_cuda_aligned may start a payload into its buffer: a dst of
 * this size never gets VKZIP_E_BUFFER_TOO_SMALL. 0 on bad arguments (see vkzip_last_error). */
size_t vkzip_encode_bound(const char *dtype, size_t nbytes, int32_t ndim);

/* Encodes one tensor: nbytes of little-endian dtype values at src, of shape shape[0..ndim) (ndim -1 and shape NULL:
 * flat, one dimension of nbytes / element size; ndim 0: a scalar). The payload is one container holding one tensor
 * record with an empty name: with ndim -1, byte for byte `vkzip encode --kind raw --dtype DTYPE -` of the same
 * bytes. vkzip_encode writes it to dst (dst_cap bytes; vkzip_encode_bound is always enough) and its length to
 * *out_len; vkzip_encode_alloc allocates it (*out, vkzip_free it). Bad dtype, nbytes not a multiple of the
 * element size, shape not matching nbytes: VKZIP_E_INVALID_ARGUMENT. */
int vkzip_encode(vkzip_codec codec, const char *dtype, const void *src, size_t nbytes, const uint64_t *shape,
                 int32_t ndim, void *dst, size_t dst_cap, size_t *out_len);
int vkzip_encode_alloc(vkzip_codec codec, const char *dtype, const void *src, size_t nbytes,
                       const uint64_t *shape, int32_t ndim, void **out, size_t *out_len);

/* Reads a payload's headers into *info (set info->struct_size first). Damaged headers give their error class;
 * damaged bodies are only found by decoding. */
int vkzip_payload_info(const void *src, size_t len, vkzip_info *info);

/* Decodes a whole payload (every container, every record in order: a buffer's tensor bytes, or a file byte for
 * byte) after verifying it. vkzip_decode writes to dst (dst_cap bytes; info.decoded_size is enough) and the length
 * to *out_len; vkzip_decode_alloc allocates (*out, vkzip_free it). A damaged payload gives its error class and
 * leaves dst's content unspecified. */
int vkzip_decode(vkzip_codec codec, const void *src, size_t len, void *dst, size_t dst_cap, size_t *out_len);
int vkzip_decode_alloc(vkzip_codec codec, const void *src, size_t len, void **out, size_t *out_len);

/* ---- tensor files ---- */

/* Encodes a safetensors (or .npy) file held in memory into a library-allocated payload: byte for byte what
 * `vkzip encode` writes for that file; `vkzip decode` (or vkzip_decode) gives the file back byte for byte. */
int vkzip_encode_tensorfile(vkzip_codec codec, const void *src, size_t len, void **out, size_t *out_len);
/* Encodes the file at in_path (safetensors or .npy) into out_path: the payload `vkzip encode -o OUT IN` writes.
 * The output appears only once complete (written beside it, mode 0644, and renamed into place); an existing one is
 * replaced. */
int vkzip_encode_file(vkzip_codec codec, const char *in_path, const char *out_path);
/* Decodes the payload at in_path into out_path, as `vkzip decode -o OUT IN` does: nothing appears unless the
 * whole payload verified; an existing output is replaced. */
int vkzip_decode_file(vkzip_codec codec, const char *in_path, const char *out_path);

/* ---- calibration ---- */

/* A SplitZip-4 codebook for data like src (nbytes of BF16; dtype must be "bf16"): the 16 most frequent exponents,
 * as `vkzip calibrate` picks them, written to codebook[0..16). Pass them as vkzip_options.codebook. */
int vkzip_calibrate(const char *dtype, const void *src, size_t nbytes, uint8_t codebook[16]);

/* ---- CUDA memory (NVIDIA; libcuda.so.1 loaded at run time) ---- */

/* Encodes nbytes of dtype at device address dev_ptr on CUDA device cuda_device (an ordinal, in the primary context
 * PyTorch and the CUDA runtime use) into a host payload (*out, vkzip_free it), equal byte for byte to vkzip_encode's
 * of the same bytes. stream is the CUstream that produced the data (0: the whole context is synchronized first).
 * The shared path (see vkzip_cuda_counters): the values are copied once, device to device, after stream's work
 * into a buffer shared with Vulkan on the same GPU, coded there by the Vulkan codec (a per-encode codebook is
 * calibrated there too), and only the body comes back to the host, as the payload. It needs a Vulkan device that
 * is that GPU with external memory, a tensor of at most 2 GiB, and a format list that codes it on the device (not
 * auto, not stored); otherwise the tensor is staged through host memory (one device-to-host copy). The codec
 * handle keeps its Vulkan backend and shared buffers for the calls that follow (released by vkzip_close);
 * calls on one handle take turns on them. Without a CUDA driver or device: VKZIP_E_NO_DEVICE. */
int vkzip_encode_cuda(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                      const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream, void **out,
                      size_t *out_len);
/* Decodes a host payload into device memory at dev_ptr (dst_cap bytes) on cuda_device, after stream's work
 * (0: the whole context) and before the call returns; *out_len is the decoded length. The shared path (a payload
 * of one container holding one tensor in a format with a device decoder): the body is uploaded, decoded and
 * verified by the Vulkan codec into the shared buffer, then copied once device to device into dev_ptr; a damaged
 * payload leaves dev_ptr untouched. Otherwise the payload is decoded and verified in host memory and copied once
 * host-to-device (counted in host_staged_bytes). */
int vkzip_decode_cuda(vkzip_codec codec, const void *src, size_t len, uint64_t dev_ptr, size_t dst_cap,
                      int32_t cuda_device, uint64_t stream, size_t *out_len);
/* Payloads in CUDA memory. Encodes as vkzip_encode_cuda, but writes the payload to device memory at dst_ptr
 * (dst_cap bytes; vkzip_encode_bound gives enough) on cuda_device and sets *out_len to its length, after stream's
 * work and before the call returns. The payload equals vkzip_encode's byte for byte. On the shared path the body goes
 * from the Vulkan codec to dst_ptr by one device copy; only the header, the chunk table (the seal's input, a few
 * bytes per 65,536 values) and the seal pass through host memory, never a value; where dst_ptr is memory from
 * vkzip_cuda_alloc with room for the largest body, the body is written there in place, with no copy. A payload
 * larger than dst_cap gives VKZIP_E_BUFFER_TOO_SMALL with *out_len the length needed (dst_ptr's contents are then
 * unspecified). Where the shared path is not available the values are staged through host memory (counted) and the
 * payload copied up. */
int vkzip_encode_cuda_to_cuda(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                              const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream,
                              uint64_t dst_ptr, size_t dst_cap, size_t *out_len);
/* As vkzip_encode_cuda_to_cuda, but the payload starts *out_off bytes into dst_ptr (0 to 15; set with *out_len):
 * where the body is written in place, the offset that puts the body 16-byte aligned, where the device encoder
 * stores whole vectors (faster than at a 4-byte offset); else 0. The bytes from dst_ptr + *out_off on are the same
 * payload as vkzip_encode_cuda_to_cuda's. vkzip_encode_bound leaves room for the offset. */
int vkzip_encode_cuda_to_cuda_aligned(vkzip_codec codec, const char *dtype, uint64_t dev_ptr, size_t nbytes,
                                      const uint64_t *shape, int32_t ndim, int32_t cuda_device, uint64_t stream,
                                      uint64_t dst_ptr, size_t dst_cap, size_t *out_off, size_t *out_len);
/* Decodes the payload of len bytes at device address src_ptr into device memory at dev_ptr (dst_cap bytes), as
 * vkzip_decode_cuda does a host payload: after stream's work, done when the call returns, *out_len the decoded
 * length (or, with VKZIP_E_BUFFER_TOO_SMALL, the length needed). The header, chunk table and seal are read to the
 * host and checked there; the body is copied once device to device to the Vulkan codec (decoded where it lies when
 * the payload is in memory from vkzip_cuda_alloc), decoded and verified. */
int vkzip_decode_cuda_to_cuda(vkzip_codec codec, uint64_t src_ptr, size_t len, uint64_t dev_ptr, size_t dst_cap,
                              int32_t cuda_device, uint64_t stream, size_t *out_len);
/* vkzip_payload_info of a payload of len bytes at device address src_ptr on cuda_device, after stream's work (0: the
 * whole context): only the headers are read to the host (through the codec's Vulkan device for a payload in memory
 * from vkzip_cuda_alloc). */
int vkzip_payload_info_cuda(uint64_t src_ptr, size_t len, int32_t cuda_device, uint64_t stream, vkzip_info *info);
/* Memory the codec works on in place: nbytes (1 B to 2 GiB) of device memory on cuda_device, shared by CUDA and the
 * codec's Vulkan device, owned by the codec handle. A tensor there, at a 256-byte aligned offset from an allocation's
 * start (and, as a decode's destination, of a multiple of 4 bytes), is encoded and decoded without any copy
 * (zero_copy_bytes only): use it for KV blocks that are compressed or restored often. A decode into it writes the
 * destination while verifying, so a damaged payload leaves it unspecified (elsewhere the destination is written only
 * once the body verified). Free it with vkzip_cuda_free (it waits for the context's work, as cuMemFree does);
 * vkzip_close frees what is left, so no tensor over it may outlive the handle. While a handle holds allocations its
 * CUDA calls stay on that device. VKZIP_E_UNSUPPORTED where memory cannot be shared on that GPU. */
int vkzip_cuda_alloc(vkzip_codec codec, int32_t cuda_device, size_t nbytes, uint64_t *dev_ptr);
int vkzip_cuda_free(vkzip_codec codec, int32_t cuda_device, uint64_t dev_ptr);
/* The process's CUDA data-movement counters (set out->struct_size first). */
int vkzip_cuda_get_counters(vkzip_cuda_counters *out);

#ifdef __cplusplus
}
#endif

#endif /* VKZIP_H */
