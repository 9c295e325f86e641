/*
 * Tests of libvkzip.so through its public header: every entry point, with good and bad input. Bad input must
 * give its status code and a message, never a crash.
 *
 * Build and run (scripts/test.sh does):
 *   cc -std=c11 -Wall -Wextra -Werror -O1 -Icapi/include capi/test/vkzip_test.c -Lbin -lvkzip \
 *      -Wl,-rpath,"$PWD/bin" -lpthread -ldl -o bin/vkzip_test
 *   bin/vkzip_test BACKEND KV.safetensors CLI_PAYLOAD.vkz TMPDIR
 * CLI_PAYLOAD is `vkzip encode --backend cpu` of KV.safetensors: the payloads made here must equal it byte for byte.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vkzip.h"

static int failures, checks;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        checks++;                                                               \
        if (!(cond)) {                                                          \
            failures++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, " (last error: %s)\n", vkzip_last_error());         \
        }                                                                       \
    } while (0)

/* CHECK_ST: a call returns status want, and a failure leaves a message. */
#define CHECK_ST(call, want)                                                                      \
    do {                                                                                          \
        int st_ = (call);                                                                         \
        CHECK(st_ == (want), "%s: got %d (%s), want %d (%s)", #call, st_, vkzip_error_class(st_), \
              (want), vkzip_error_class(want));                                                   \
        if ((want) != VKZIP_OK)                                                                   \
            CHECK(vkzip_last_error()[0] != '\0', "%s: no message", #call);                        \
        else                                                                                      \
            CHECK(vkzip_last_error()[0] == '\0', "%s: message after success", #call);             \
    } while (0)

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static const char *backend;

static vkzip_codec open_codec(const char *formats, const char *prefer) {
    vkzip_options o = VKZIP_OPTIONS_INIT;
    o.backend = backend;
    o.formats = formats;
    o.prefer = prefer;
    vkzip_codec c = 0;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_OK);
    CHECK(c != 0, "handle 0");
    return c;
}

static void test_library(void) {
    CHECK(vkzip_abi_version() == VKZIP_ABI_VERSION, "abi %u", vkzip_abi_version());
    CHECK(strlen(vkzip_version()) > 0, "empty version");
    CHECK(strcmp(vkzip_error_class(VKZIP_OK), "ok") == 0, "ok");
    CHECK(strcmp(vkzip_error_class(VKZIP_E_CHECKSUM), "checksum") == 0, "checksum");
    CHECK(strcmp(vkzip_error_class(VKZIP_E_INTERNAL), "internal") == 0, "internal");
    CHECK(strcmp(vkzip_error_class(12345), "unknown") == 0, "unknown");
    for (int st = VKZIP_E_INVALID_ARGUMENT; st <= VKZIP_E_INTERNAL; st++)
        CHECK(strcmp(vkzip_error_class(st), "unknown") != 0, "status %d has no class", st);
    char *json = NULL;
    CHECK_ST(vkzip_devices(&json), VKZIP_OK);
    CHECK(json != NULL && strstr(json, "\"backends\"") != NULL && strstr(json, "\"cpu\"") != NULL, "devices: %s",
          json ? json : "(null)");
    vkzip_free(json);
    CHECK_ST(vkzip_devices(NULL), VKZIP_E_INVALID_ARGUMENT);
    vkzip_free(NULL);
}

static void test_open_errors(void) {
    vkzip_codec c = 0;
    vkzip_options o = VKZIP_OPTIONS_INIT;
    CHECK_ST(vkzip_open(&o, NULL), VKZIP_E_INVALID_ARGUMENT);
    o.struct_size = 0;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    o = (vkzip_options)VKZIP_OPTIONS_INIT;
    o.backend = "no-such-backend";
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_UNSUPPORTED);
    o = (vkzip_options)VKZIP_OPTIONS_INIT;
    o.prefer = "fastest";
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    o.prefer = "speed";
    o.formats = "tbe3";
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    o = (vkzip_options)VKZIP_OPTIONS_INIT;
    o.formats = "tbe3,nosuchformat";
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_UNSUPPORTED);
    o = (vkzip_options)VKZIP_OPTIONS_INIT;
    o.chunk_size = 1000;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    o = (vkzip_options)VKZIP_OPTIONS_INIT;
    uint8_t cb[16];
    for (int i = 0; i < 16; i++)
        cb[i] = (uint8_t)(120 + i);
    o.codebook = cb;
    o.codebook_len = 15;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    cb[3] = cb[4]; /* a repeated exponent */
    o.codebook_len = 16;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_CORRUPT);
    const char *badjson = "{\"codebook\": 7}";
    o.codebook = (const uint8_t *)badjson;
    o.codebook_len = strlen(badjson);
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    o.codebook = NULL;
    o.codebook_len = 16;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_E_INVALID_ARGUMENT);
    CHECK(c == 0, "handle written on failure");
    /* NULL options: every default. */
    CHECK_ST(vkzip_open(NULL, &c), VKZIP_OK);
    CHECK_ST(vkzip_close(c), VKZIP_OK);
}

/* The BF16 tensor data of a safetensors file: everything after its header. */
static const unsigned char *st_data(const unsigned char *file, size_t len, size_t *n) {
    uint64_t h = 0;
    memcpy(&h, file, 8);
    *n = len - 8 - (size_t)h;
    return file + 8 + h;
}

static void test_buffers(vkzip_codec c, const unsigned char *kv, size_t kvlen) {
    size_t n;
    const unsigned char *data = st_data(kv, kvlen, &n);
    n &= ~(size_t)63; /* a whole number of [.., 4, 8] rows */
    size_t bound = vkzip_encode_bound("bf16", n, -1);
    CHECK(bound > n / 2, "bound %zu for %zu bytes", bound, n);
    unsigned char *payload = malloc(bound);
    memset(payload, 0xAB, bound);
    size_t plen = 0;
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, -1, payload, bound, &plen), VKZIP_OK);
    CHECK(plen > 0 && plen < n, "payload %zu bytes for %zu", plen, n);

    void *alloc = NULL;
    size_t alen = 0;
    CHECK_ST(vkzip_encode_alloc(c, "BF16", data, n, NULL, -1, &alloc, &alen), VKZIP_OK);
    CHECK(alen == plen && memcmp(alloc, payload, plen) == 0, "alloc payload differs (%zu vs %zu)", alen, plen);
    vkzip_free(alloc);

    vkzip_info info;
    memset(&info, 0x5A, sizeof info);
    info.struct_size = sizeof info;
    CHECK_ST(vkzip_payload_info(payload, plen, &info), VKZIP_OK);
    CHECK(info.containers == 1 && info.tensors == 1 && info.blobs == 0 && info.decoded_size == n, "info counts");
    CHECK(strcmp(info.dtype, "bf16") == 0 && info.ndim == 1 && info.shape[0] == n / 2 && info.checksums == 1,
          "info dtype %s ndim %d", info.dtype, info.ndim);
    info.struct_size = 8;
    CHECK_ST(vkzip_payload_info(payload, plen, &info), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_payload_info(payload, plen, NULL), VKZIP_E_INVALID_ARGUMENT);

    unsigned char *back = malloc(n);
    memset(back, 0xCD, n);
    size_t blen = 0;
    CHECK_ST(vkzip_decode(c, payload, plen, back, n, &blen), VKZIP_OK);
    CHECK(blen == n && memcmp(back, data, n) == 0, "decode not bit-exact");
    void *dalloc = NULL;
    size_t dlen = 0;
    CHECK_ST(vkzip_decode_alloc(c, payload, plen, &dalloc, &dlen), VKZIP_OK);
    CHECK(dlen == n && memcmp(dalloc, data, n) == 0, "decode_alloc not bit-exact");
    vkzip_free(dalloc);

    /* Short outputs: the size needed comes back, nothing else. */
    size_t need = 0;
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, -1, payload, 64, &need), VKZIP_E_BUFFER_TOO_SMALL);
    CHECK(need == plen, "needed %zu, payload %zu", need, plen);
    need = 0;
    CHECK_ST(vkzip_decode(c, payload, plen, back, n - 2, &need), VKZIP_E_BUFFER_TOO_SMALL);
    CHECK(need == n, "needed %zu, decoded %zu", need, n);

    /* A shape is recorded and read back; a wrong one is refused. */
    uint64_t shape[3] = {n / 64, 4, 8};
    CHECK_ST(vkzip_encode_alloc(c, "bf16", data, n, shape, 3, &alloc, &alen), VKZIP_OK);
    info.struct_size = sizeof info;
    CHECK_ST(vkzip_payload_info(alloc, alen, &info), VKZIP_OK);
    CHECK(info.ndim == 3 && info.shape[0] == n / 64 && info.shape[1] == 4 && info.shape[2] == 8, "shape");
    vkzip_free(alloc);
    shape[0]++;
    CHECK_ST(vkzip_encode_alloc(c, "bf16", data, n, shape, 3, &alloc, &alen), VKZIP_E_INVALID_ARGUMENT);
    uint64_t scalar_shape[1] = {0};
    CHECK_ST(vkzip_encode_alloc(c, "f32", data, 4, scalar_shape, 0, &alloc, &alen), VKZIP_OK);
    vkzip_free(alloc);

    /* Every coded dtype round-trips. */
    const char *dtypes[] = {"f16", "f32", "f8_e4m3", "f8_e5m2", "i32", "u8"};
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
        void *p = NULL;
        size_t pl = 0;
        CHECK_ST(vkzip_encode_alloc(c, dtypes[i], data, n, NULL, -1, &p, &pl), VKZIP_OK);
        CHECK(pl <= vkzip_encode_bound(dtypes[i], n, -1), "%s over its bound", dtypes[i]);
        memset(back, 0xCD, n);
        CHECK_ST(vkzip_decode(c, p, pl, back, n, &blen), VKZIP_OK);
        CHECK(blen == n && memcmp(back, data, n) == 0, "%s not bit-exact", dtypes[i]);
        info.struct_size = sizeof info;
        CHECK_ST(vkzip_payload_info(p, pl, &info), VKZIP_OK);
        CHECK(strcmp(info.dtype, dtypes[i]) == 0, "info dtype %s for %s", info.dtype, dtypes[i]);
        vkzip_free(p);
    }

    /* Bad arguments: a status, never a crash. */
    CHECK_ST(vkzip_encode(c, "bf17", data, n, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, NULL, data, n, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", data, 3, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "f32", data, 6, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", NULL, n, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, 2, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, -2, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, -1, NULL, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(c, "bf16", data, n, NULL, -1, payload, bound, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode(0, "bf16", data, n, NULL, -1, payload, bound, &plen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_alloc(c, "bf16", data, n, NULL, -1, NULL, &alen), VKZIP_E_INVALID_ARGUMENT);
    CHECK(vkzip_encode_bound("bf17", n, -1) == 0 && vkzip_last_error()[0] != '\0', "bound of a bad dtype");
    CHECK(vkzip_encode_bound(NULL, n, -1) == 0, "bound of NULL");
    CHECK(vkzip_encode_bound("f32", 6, -1) == 0, "bound of a partial value");
    CHECK(vkzip_encode_bound("u8", SIZE_MAX, -1) == 0, "bound of SIZE_MAX bytes");
    CHECK_ST(vkzip_decode(c, NULL, plen, back, n, &blen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode(c, payload, plen, NULL, n, &blen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode(c, payload, plen, back, n, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode_alloc(c, payload, plen, NULL, &dlen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode(0, payload, plen, back, n, &blen), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode(c, payload, 0, back, n, &blen), VKZIP_E_TRUNCATED);

    /* Damaged payloads, made as scripts/corrupt-check.sh makes them: bit flips, overwritten bytes, truncations and
     * splices. Each must be refused with a payload error class. */
    unsigned char *bad = malloc(plen);
    unsigned seed = 20261201;
    int refused = 0, tries = 400;
    for (int i = 0; i < tries; i++) {
        memcpy(bad, payload, plen);
        size_t blen2 = plen;
        switch (i % 4) {
        case 0:
            for (int k = 0; k <= (int)(rand_r(&seed) % 4); k++) {
                size_t p = (size_t)rand_r(&seed) % plen;
                bad[p] ^= (unsigned char)(1u << (rand_r(&seed) % 8));
            }
            break;
        case 1:
            for (int k = 0; k <= (int)(rand_r(&seed) % 8); k++)
                bad[(size_t)rand_r(&seed) % plen] = (unsigned char)rand_r(&seed);
            break;
        case 2:
            blen2 = (size_t)rand_r(&seed) % plen;
            break;
        default: {
            size_t a = (size_t)rand_r(&seed) % plen, l = 1 + (size_t)rand_r(&seed) % 256,
                   d = (size_t)rand_r(&seed) % plen;
            if (a + l > plen)
                l = plen - a;
            if (d + l > plen)
                l = plen - d;
            memmove(bad + d, payload + a, l);
        }
        }
        if (blen2 == plen && memcmp(bad, payload, plen) == 0)
            bad[(size_t)rand_r(&seed) % plen] ^= 0xFF;
        size_t got = 0;
        int st = vkzip_decode(c, bad, blen2, back, n, &got);
        const char *cls = vkzip_error_class(st);
        int payload_class = st == VKZIP_E_FORMAT || st == VKZIP_E_VERSION || st == VKZIP_E_TRUNCATED ||
                            st == VKZIP_E_CHECKSUM || st == VKZIP_E_CORRUPT || st == VKZIP_E_NONCANONICAL ||
                            st == VKZIP_E_TOO_LARGE || st == VKZIP_E_UNSUPPORTED;
        CHECK(payload_class, "damaged payload %d: status %d (%s)", i, st, cls);
        refused += payload_class;
        void *p = NULL;
        size_t pl = 0;
        st = vkzip_decode_alloc(c, bad, blen2, &p, &pl);
        CHECK(st != VKZIP_OK && p == NULL, "damaged payload %d decoded by decode_alloc", i);
        info.struct_size = sizeof info;
        (void)vkzip_payload_info(bad, blen2, &info); /* any status; it must return */
    }
    printf("  %d of %d damaged payloads refused with a payload error class\n", refused, tries);
    free(bad);
    free(back);
    free(payload);
}

static void test_files(vkzip_codec c, const char *kvpath, const unsigned char *kv, size_t kvlen,
                       const char *clipath, const char *tmp) {
    size_t clen;
    unsigned char *cli = read_file(clipath, &clen);
    void *p = NULL;
    size_t pl = 0;
    CHECK_ST(vkzip_encode_tensorfile(c, kv, kvlen, &p, &pl), VKZIP_OK);
    CHECK(pl == clen && memcmp(p, cli, clen) == 0, "tensorfile payload differs from the CLI's (%zu vs %zu bytes)", pl,
          clen);
    printf("  safetensors file: %zu -> %zu bytes, ratio %.4f, equal to the CLI's payload\n", kvlen, pl,
           (double)kvlen / (double)pl);
    void *d = NULL;
    size_t dl = 0;
    CHECK_ST(vkzip_decode_alloc(c, p, pl, &d, &dl), VKZIP_OK);
    CHECK(dl == kvlen && memcmp(d, kv, kvlen) == 0, "file not given back byte for byte");
    vkzip_free(d);
    vkzip_free(p);
    const char *garbage = "this is not a tensor file at all";
    CHECK(vkzip_encode_tensorfile(c, garbage, strlen(garbage), &p, &pl) != VKZIP_OK, "garbage encoded");

    char enc[4096], dec[4096], missing[4096], badp[4096], badout[4096];
    snprintf(enc, sizeof enc, "%s/c.vkz", tmp);
    snprintf(dec, sizeof dec, "%s/c.safetensors", tmp);
    snprintf(missing, sizeof missing, "%s/no-such-file.safetensors", tmp);
    snprintf(badp, sizeof badp, "%s/bad.vkz", tmp);
    snprintf(badout, sizeof badout, "%s/bad.out", tmp);
    CHECK_ST(vkzip_encode_file(c, kvpath, enc), VKZIP_OK);
    size_t el;
    unsigned char *e = read_file(enc, &el);
    CHECK(el == clen && memcmp(e, cli, clen) == 0, "encode_file differs from the CLI's payload");
    CHECK_ST(vkzip_decode_file(c, enc, dec), VKZIP_OK);
    size_t dl2;
    unsigned char *d2 = read_file(dec, &dl2);
    CHECK(dl2 == kvlen && memcmp(d2, kv, kvlen) == 0, "decode_file not byte for byte");
    free(d2);
    CHECK_ST(vkzip_encode_file(c, missing, enc), VKZIP_E_IO);
    CHECK_ST(vkzip_encode_file(c, NULL, enc), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode_file(c, enc, NULL), VKZIP_E_INVALID_ARGUMENT);
    e[el / 2] ^= 0x10;
    FILE *f = fopen(badp, "wb");
    fwrite(e, 1, el, f);
    fclose(f);
    int st = vkzip_decode_file(c, badp, badout);
    CHECK(st == VKZIP_E_CHECKSUM || st == VKZIP_E_CORRUPT, "corrupt file: %d (%s)", st, vkzip_error_class(st));
    CHECK(!file_exists(badout), "a failed decode left %s", badout);
    free(e);
    free(cli);
}

static void test_calibrate(const unsigned char *kv, size_t kvlen) {
    size_t n;
    const unsigned char *data = st_data(kv, kvlen, &n);
    uint8_t cb[16];
    memset(cb, 0, sizeof cb);
    CHECK_ST(vkzip_calibrate("bf16", data, n, cb), VKZIP_OK);
    int seen[256] = {0}, distinct = 1;
    for (int i = 0; i < 16; i++)
        distinct &= seen[cb[i]]++ == 0;
    CHECK(distinct, "codebook entries repeat");
    CHECK_ST(vkzip_calibrate("f16", data, n, cb), VKZIP_E_UNSUPPORTED);
    CHECK_ST(vkzip_calibrate("bf16", data, 3, cb), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_calibrate("bf16", data, n, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_calibrate("bf16", NULL, n, cb), VKZIP_E_INVALID_ARGUMENT);

    vkzip_options o = VKZIP_OPTIONS_INIT;
    o.backend = backend;
    o.codebook = cb;
    o.codebook_len = 16;
    vkzip_codec c = 0;
    CHECK_ST(vkzip_open(&o, &c), VKZIP_OK);
    void *p = NULL, *d = NULL;
    size_t pl = 0, dl = 0;
    CHECK_ST(vkzip_encode_alloc(c, "bf16", data, n, NULL, -1, &p, &pl), VKZIP_OK);
    CHECK_ST(vkzip_decode_alloc(c, p, pl, &d, &dl), VKZIP_OK);
    CHECK(dl == n && memcmp(d, data, n) == 0, "fixed codebook round trip");
    vkzip_free(p);
    vkzip_free(d);
    CHECK_ST(vkzip_close(c), VKZIP_OK);
}

static void test_cuda(vkzip_codec c) {
    vkzip_cuda_counters k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    CHECK_ST(vkzip_cuda_get_counters(&k), VKZIP_OK);
    CHECK(memchr(k.last_path, 0, sizeof k.last_path) != NULL && (k.last_shared == 0 || k.last_shared == 1),
          "counters: last_path terminated, last_shared 0 or 1");
    /* A caller built against the first header passes the struct as it was then: only its fields are written. */
    memset(&k, 0xA5, sizeof k);
    k.struct_size = offsetof(vkzip_cuda_counters, shared_calls);
    CHECK_ST(vkzip_cuda_get_counters(&k), VKZIP_OK);
    CHECK(k.struct_size == offsetof(vkzip_cuda_counters, shared_calls) && k.shared_calls == 0xA5A5A5A5A5A5A5A5ull &&
              k.last_path[0] == (char)0xA5,
          "a short counters struct gets only its fields");
    k.struct_size = 4;
    CHECK_ST(vkzip_cuda_get_counters(&k), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_cuda_get_counters(NULL), VKZIP_E_INVALID_ARGUMENT);
    void *p = NULL;
    size_t pl = 0;
    uint64_t dp = 1;
    CHECK_ST(vkzip_encode_cuda(c, "bf16", 0, 64, NULL, -1, 0, 0, &p, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda(c, "bf17", 4096, 64, NULL, -1, 0, 0, &p, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda(c, "bf16", 4096, 63, NULL, -1, 0, 0, &p, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda(c, "bf16", 4096, 64, NULL, -1, -1, 0, &p, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode_cuda(c, NULL, 10, 4096, 64, 0, 0, &pl), VKZIP_E_INVALID_ARGUMENT);
    /* Payloads in device memory and the codec's own allocations: bad arguments before any device work. */
    CHECK_ST(vkzip_encode_cuda_to_cuda(c, "bf16", 4096, 64, NULL, -1, 0, 0, 0, 256, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda_to_cuda(c, "bf16", 4096, 64, NULL, -1, 0, 0, 8192, 256, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda_to_cuda(c, "bf16", 4096, 63, NULL, -1, 0, 0, 8192, 256, &pl), VKZIP_E_INVALID_ARGUMENT);
    size_t off = 99;
    CHECK_ST(vkzip_encode_cuda_to_cuda_aligned(c, "bf16", 4096, 64, NULL, -1, 0, 0, 8192, 256, NULL, &pl),
             VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda_to_cuda_aligned(c, "bf16", 4096, 64, NULL, -1, 0, 0, 8192, 256, &off, NULL),
             VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_encode_cuda_to_cuda_aligned(c, "bf16", 4096, 64, NULL, -1, 0, 0, 0, 256, &off, &pl),
             VKZIP_E_INVALID_ARGUMENT);
    CHECK(off == 99, "a refused call leaves *out_off alone, got %zu", off);
    CHECK_ST(vkzip_decode_cuda_to_cuda(c, 0, 10, 4096, 64, 0, 0, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode_cuda_to_cuda(c, 8192, 10, 4096, 64, -1, 0, &pl), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_decode_cuda_to_cuda(c, 8192, 10, 4096, 64, 0, 0, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_cuda_alloc(c, 0, 1024, NULL), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_cuda_alloc(c, -1, 1024, &dp), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_payload_info_cuda(8192, 64, 0, 0, NULL), VKZIP_E_INVALID_ARGUMENT);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == NULL) {
        /* No driver: the device entry points say so (a made-up pointer is never touched). */
        CHECK_ST(vkzip_encode_cuda(c, "bf16", 4096, 64, NULL, -1, 0, 0, &p, &pl), VKZIP_E_NO_DEVICE);
        unsigned char tiny[4] = {0};
        CHECK(vkzip_decode_cuda(c, tiny, sizeof tiny, 4096, 64, 0, 0, &pl) != VKZIP_OK, "decode_cuda");
        CHECK_ST(vkzip_encode_cuda_to_cuda(c, "bf16", 4096, 64, NULL, -1, 0, 0, 8192, 256, &pl), VKZIP_E_NO_DEVICE);
        CHECK_ST(vkzip_encode_cuda_to_cuda_aligned(c, "bf16", 4096, 64, NULL, -1, 0, 0, 8192, 256, &off, &pl),
                 VKZIP_E_NO_DEVICE);
        CHECK_ST(vkzip_decode_cuda_to_cuda(c, 8192, 10, 4096, 64, 0, 0, &pl), VKZIP_E_NO_DEVICE);
        CHECK_ST(vkzip_cuda_alloc(c, 0, 1024, &dp), VKZIP_E_NO_DEVICE);
        CHECK(dp == 0, "a failed allocation leaves *dev_ptr 0, got %llu", (unsigned long long)dp);
        CHECK_ST(vkzip_cuda_free(c, 0, 8192), VKZIP_E_NO_DEVICE);
        vkzip_info inf;
        memset(&inf, 0, sizeof inf);
        inf.struct_size = sizeof inf;
        CHECK_ST(vkzip_payload_info_cuda(8192, 64, 0, 0, &inf), VKZIP_E_NO_DEVICE);
        printf("  CUDA: no driver here; entry points answer VKZIP_E_NO_DEVICE\n");
    } else {
        dlclose(cuda);
        printf("  CUDA: a driver is present; device tests are in python/tests (torch)\n");
    }
}

struct worker {
    vkzip_codec c;
    const unsigned char *data;
    size_t n;
    int ok;
};

static void *work(void *arg) {
    struct worker *w = arg;
    w->ok = 1;
    for (int i = 0; i < 8; i++) {
        void *p = NULL, *d = NULL;
        size_t pl = 0, dl = 0;
        if (vkzip_encode_alloc(w->c, "bf16", w->data, w->n, NULL, -1, &p, &pl) != VKZIP_OK ||
            vkzip_decode_alloc(w->c, p, pl, &d, &dl) != VKZIP_OK || dl != w->n || memcmp(d, w->data, dl) != 0)
            w->ok = 0;
        vkzip_free(p);
        vkzip_free(d);
    }
    return NULL;
}

static void *fail_once(void *arg) {
    (void)arg;
    vkzip_codec c = 0;
    vkzip_options o = VKZIP_OPTIONS_INIT;
    o.prefer = "no-such-mode";
    int st = vkzip_open(&o, &c);
    char *msg = strdup(vkzip_last_error());
    return (void *)(intptr_t)(st == VKZIP_E_INVALID_ARGUMENT && strstr(msg, "no-such-mode") != NULL);
}

static void test_threads(vkzip_codec c, const unsigned char *kv, size_t kvlen) {
    size_t n;
    const unsigned char *data = st_data(kv, kvlen, &n);
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){c, data, n & ~(size_t)1, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].ok, "thread %d round trip", i);
    }
    /* Messages are per thread: another thread's failure leaves this thread's message alone. */
    CHECK_ST(vkzip_encode(c, "bf17", data, 2, NULL, -1, NULL, 0, &n), VKZIP_E_INVALID_ARGUMENT);
    char *mine = strdup(vkzip_last_error());
    pthread_t other;
    void *res = NULL;
    pthread_create(&other, NULL, fail_once, NULL);
    pthread_join(other, &res);
    CHECK(res != NULL, "the other thread's message");
    CHECK(strcmp(mine, vkzip_last_error()) == 0, "message changed by another thread: %s", vkzip_last_error());
    free(mine);
}

static void test_fork(vkzip_codec c) {
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); /* a hang would be the bug: fail by signal rather than wait forever */
        int st = vkzip_close(c);
        void *p = NULL;
        size_t pl = 0;
        int st2 = vkzip_encode_alloc(c, "bf16", "ab", 2, NULL, -1, &p, &pl);
        int ok = st == VKZIP_E_FORKED && st2 == VKZIP_E_FORKED && strstr(vkzip_last_error(), "fork") != NULL &&
                 vkzip_encode_bound("bf16", 2, -1) == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child: status %d", status);
    /* The parent is unaffected. */
    void *p = NULL;
    size_t pl = 0;
    CHECK_ST(vkzip_encode_alloc(c, "bf16", "ab", 2, NULL, -1, &p, &pl), VKZIP_OK);
    vkzip_free(p);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s BACKEND KV.safetensors CLI_PAYLOAD.vkz TMPDIR\n", argv[0]);
        return 2;
    }
    backend = argv[1];
    size_t kvlen;
    unsigned char *kv = read_file(argv[2], &kvlen);
    printf("vkzip C API test: libvkzip %s, ABI %u, backend %s\n", vkzip_version(), vkzip_abi_version(), backend);
    test_library();
    test_open_errors();
    vkzip_codec c = open_codec(NULL, NULL);
    char *json = NULL;
    CHECK_ST(vkzip_codec_info(c, &json), VKZIP_OK);
    CHECK(json != NULL && strstr(json, backend) != NULL, "codec info %s", json ? json : "(null)");
    printf("  codec: %s\n", json ? json : "(null)");
    vkzip_free(json);
    CHECK_ST(vkzip_codec_info(c, NULL), VKZIP_E_INVALID_ARGUMENT);
    test_buffers(c, kv, kvlen);
    test_files(c, argv[2], kv, kvlen, argv[3], argv[4]);
    test_calibrate(kv, kvlen);
    test_cuda(c);
    test_threads(c, kv, kvlen);
    test_fork(c);
    for (int i = 0; i < 3; i++) {
        const char *prefer = (const char *[]){"speed", "balanced", "ratio"}[i];
        vkzip_codec pc = open_codec(NULL, prefer);
        size_t n;
        const unsigned char *data = st_data(kv, kvlen, &n);
        void *p = NULL, *d = NULL;
        size_t pl = 0, dl = 0;
        CHECK_ST(vkzip_encode_alloc(pc, "bf16", data, n, NULL, -1, &p, &pl), VKZIP_OK);
        CHECK_ST(vkzip_decode_alloc(pc, p, pl, &d, &dl), VKZIP_OK);
        CHECK(dl == n && memcmp(d, data, n) == 0, "prefer %s round trip", prefer);
        printf("  prefer %-8s: %zu -> %zu bytes\n", prefer, n, pl);
        vkzip_free(p);
        vkzip_free(d);
        CHECK_ST(vkzip_close(pc), VKZIP_OK);
    }
    CHECK_ST(vkzip_close(c), VKZIP_OK);
    CHECK_ST(vkzip_close(c), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_codec_info(c, &json), VKZIP_E_INVALID_ARGUMENT);
    CHECK_ST(vkzip_close(0), VKZIP_E_INVALID_ARGUMENT);
    free(kv);
    printf("%d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
