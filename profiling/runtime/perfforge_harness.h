/* perfforge_harness.h: the harness side of the perfforge task protocol (C, C++ and CUDA).
 *
 * A task's harness includes this header, registers its buffers, and wraps each kernel call in
 * pf_begin/pf_end. perfforge runs the built harness in one of three modes; the harness code is the same:
 *
 *   check    --calls C: C calls, each on fresh inputs drawn from (seed, call); every output is poisoned
 *            (all bytes 0xFF: NaN for floats, -1 for integers) before each call; after each call every
 *            output is written to OUT/<name>.<call>.npy, every input's digest to OUT/<name>.<call>.digest,
 *            and every buffer's guard zones are checked.
 *   time     --warmup W --trials T: inputs drawn once; before each call the cache is flushed (CPU: a
 *            write over a buffer twice the last-level cache, capped; CUDA: a memset twice the L2); each
 *            call is timed (CPU: CLOCK_MONOTONIC; CUDA: events, after synchronising the whole device so
 *            that work on other streams cannot escape the timer). OUT/timing.json holds the times.
 *   profile  one warm-up call, then one call inside the NVTX range "pf_profile" (CUDA) for the profiler.
 *   serve    --channel FD: the verdict's mode (profiling/served.py). This process is untrusted: the candidate's code
 *            is linked into it. It draws, times and checks nothing. Each buffer it declares is shared memory the
 *            judge made (a sealed memfd passed over the channel, a unix seqpacket socket); before the first call it
 *            installs a system-call filter (seccomp, every thread) and says "ready"; then it waits for "call",
 *            runs the loop body once on whatever the judge wrote into the buffers, and says "done". The judge
 *            writes the inputs, times the call with its own clock, stops this process and reads the outputs from
 *            its own mapping. "exit" (or the channel closing) ends the loop.
 *            CUDA ("ready ... staged"): every buffer also lives on the device (fixed ones copied up once, before
 *            the filter). On "call" the harness copies the judge's inputs (guards included) up, poisons the
 *            outputs with the byte the word names ("call a5": 0xA5; plain "call": 0xFF) and re-arms their guards on the
 *            device, flushes the L2 and says "start"; after the body, the
 *            launch check and a whole-device synchronisation it says "synced", then "done". On "fetch" it copies
 *            every buffer back into the judge's memory and says "fetched": the judge asks only for the calls it
 *            checks, after the call. No code of the candidate's runs outside the body: its filter refuses new
 *            threads and executable mappings, and the judge's clock also runs from "call" to "done", so work
 *            moved outside "start"-"synced" shows (profiling/validate.py).
 *            CPU ("ready ... windowed"): "start" right before the body and "synced" right after it too, so the
 *            judge, polling the channel while a call runs, times the body alone: a call of a few microseconds is
 *            not lost in what resuming this process costs.
 *
 * Arguments: MODE --seed N --out DIR [--calls C] [--warmup W] [--trials T] [--no-flush] [--dump-inputs]
 *            [--channel FD] [key=value ...] (--dump-inputs: inputs written whole as .npy too, for debugging).
 * The key=value pairs are the task's configuration (shapes); read them with pf_param_int/pf_param_double.
 *
 * Exit status: 0 done; 2 bad arguments; 3 a buffer was written outside its bounds; 4 a CUDA error
 * (a launch that failed has not run); 5 an I/O error writing results; 6 the judge's channel failed (serve).
 *
 * Every function is static: the kernel's translation unit cannot call or replace them.
 */
#ifndef PERFFORGE_HARNESS_H
#define PERFFORGE_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#define PF_HAVE_SERVE 1
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define PF_HAVE_NVTX 1
#endif
#endif

#define PF_MAX_BUFS 32
#define PF_MAX_PARAMS 32
#define PF_MAX_TIMES 100000
#define PF_MAX_SAVED_CALLS 16  /* timed calls whose outputs a time run writes (--save-call) */
/* Input sets a time run alternates between: no two consecutive calls share inputs, so a kernel that keeps its last
 * result and returns it when the inputs repeat never can; two copies of each input is all the memory it costs. */
#define PF_INPUT_SETS 2
/* Bytes of guard zone before and after every buffer. 256 keeps the data 256-byte aligned (float4, AVX-512,
 * CUDA's own allocation alignment) and catches the off-by-a-row writes that real kernels make. */
#define PF_GUARD_BYTES 256
#define PF_GUARD_BYTE 0xA5
#define PF_POISON_BYTE 0xFF
/* CPU cache flush: twice the last-level cache evicts it under LRU; capped because virtual machines report the
 * host's whole L3 (hundreds of MB) and a flush that size would dominate short trials. */
#define PF_CPU_FLUSH_CAP_BYTES (64u << 20)

typedef enum { PF_F32, PF_F64, PF_F16, PF_BF16, PF_I32, PF_I64, PF_U8 } pf_dtype;
typedef enum { PF_INPUT, PF_OUTPUT, PF_INOUT, PF_FIXED } pf_role;
typedef enum { PF_MODE_CHECK, PF_MODE_TIME, PF_MODE_PROFILE, PF_MODE_SERVE } pf_mode;

typedef struct {
    const char *name;
    pf_dtype dtype;
    pf_role role;
    size_t count;
    double lo, hi;       /* inputs: uniform in [lo, hi); integers in [lo, hi) too */
    unsigned char *raw;  /* host allocation with guard zones */
    unsigned char *host; /* raw + PF_GUARD_BYTES */
#ifdef __CUDACC__
    unsigned char *draw; /* device allocation with guard zones */
    unsigned char *dev;  /* draw + PF_GUARD_BYTES */
#endif
    unsigned char *sets[PF_INPUT_SETS]; /* time mode: the inputs of calls 0 and 1 (device memory under CUDA) */
#ifdef __CUDACC__
    unsigned char *stage; /* serve: pinned host memory between the judge's shared mapping and the device */
#endif
} pf_buf;

typedef struct {
    pf_mode mode;
    uint64_t seed;
    const char *out_dir;
    int calls, warmup, trials, flush, dump_inputs;
    int save_calls[PF_MAX_SAVED_CALLS], nsave; /* time mode: calls whose outputs are written (--save-call) */
    int nparams;
    const char *keys[PF_MAX_PARAMS];
    const char *vals[PF_MAX_PARAMS];
    pf_buf bufs[PF_MAX_BUFS];
    int nbufs;
    int iter;       /* index of the call in progress */
    int ntimes;
    double *times_ms;
    unsigned char *flush_buf;
    size_t flush_bytes;
    struct timespec t0;
    int channel;    /* serve: the judge's socket */
    int ready;      /* serve: the filter is installed and "ready" was said */
    unsigned char poison;  /* serve: the byte this call's outputs are poisoned with (the judge's word) */
    unsigned fp_control;   /* serve: the FP control registers as the harness set out (pf_fp_control) */
#ifdef __CUDACC__
    cudaEvent_t ev0, ev1;
#endif
} pf_run;

static void pf_fail(int status, const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "perfforge harness: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(status);
}

#ifdef __CUDACC__
static void pf_cuda_check(cudaError_t err, const char *what) {
    if (err != cudaSuccess) pf_fail(4, "CUDA error in %s: %s", what, cudaGetErrorString(err));
}
#endif

static size_t pf_dtype_size(pf_dtype t) {
    switch (t) {
    case PF_F64: case PF_I64: return 8;
    case PF_F16: case PF_BF16: return 2;
    case PF_U8: return 1;
    default: return 4;
    }
}

/* numpy's dtype strings; bfloat16 travels as raw uint16 and the reader widens it. */
static const char *pf_dtype_descr(pf_dtype t) {
    switch (t) {
    case PF_F64: return "<f8";
    case PF_F16: return "<f2";
    case PF_BF16: return "<u2";
    case PF_I32: return "<i4";
    case PF_I64: return "<i8";
    case PF_U8: return "|u1";
    default: return "<f4";
    }
}

/* splitmix64: small, fast, and the same stream on every compiler and machine. */
static uint64_t pf_mix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double pf_uniform(uint64_t *state) { return (double)(pf_mix(state) >> 11) * (1.0 / 9007199254740992.0); }

static uint16_t pf_float_to_half(float f) {
    uint32_t x; memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u; int exp = (int)((x >> 23) & 0xFF) - 127 + 15; uint32_t man = x & 0x7FFFFFu;
    if (exp <= 0) return (uint16_t)sign;             /* inputs are drawn well inside half's normal range */
    if (exp >= 31) return (uint16_t)(sign | 0x7C00u);
    /* + not |: a mantissa that rounds up past 1023 carries into the exponent (0.49999 -> 0.5, not 0.25) */
    return (uint16_t)(sign | (((uint32_t)exp << 10) + ((man + 0x1000u) >> 13)));
}

/* floor without libm, so harnesses link without -lm. */
static double pf_floor(double v) {
    double t = (double)(long long)v;
    return t > v ? t - 1.0 : t;
}

static void pf_fill(pf_buf *b, uint64_t seed, int call, int index) {
    uint64_t state = seed * 0x100000001B3ull + (uint64_t)call * 0x9E3779B1ull + (uint64_t)index * 0x85EBCA77ull;
    for (size_t i = 0; i < b->count; i++) {
        /* volatile: no fused multiply-add, so every build (-O2, -O3 -march=native, nvcc) and the Python twin
         * draw bit-identical inputs */
        volatile double scaled = (b->hi - b->lo) * pf_uniform(&state);
        double v = b->lo + scaled;
        unsigned char *p = b->host + i * pf_dtype_size(b->dtype);
        switch (b->dtype) {
        case PF_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
        case PF_F64: memcpy(p, &v, 8); break;
        case PF_F16: { uint16_t h = pf_float_to_half((float)v); memcpy(p, &h, 2); break; }
        case PF_BF16: { float f = (float)v; uint32_t x; memcpy(&x, &f, 4); uint16_t h = (uint16_t)(x >> 16); memcpy(p, &h, 2); break; }
        case PF_I32: { int32_t k = (int32_t)pf_floor(v); memcpy(p, &k, 4); break; }
        case PF_I64: { int64_t k = (int64_t)pf_floor(v); memcpy(p, &k, 8); break; }
        case PF_U8: { *p = (unsigned char)pf_floor(v); break; }
        }
    }
}

static size_t pf_bytes(const pf_buf *b) { return b->count * pf_dtype_size(b->dtype); }

static const char *pf_arg_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) pf_fail(2, "option %s needs a value%s", argv[*i], "");
    return argv[++*i];
}

static void pf_init(pf_run *r, int argc, char **argv) {
    memset(r, 0, sizeof *r);
    r->calls = 2; r->warmup = 3; r->trials = 20; r->flush = 1; r->out_dir = "."; r->channel = -1;
    if (argc < 2) pf_fail(2, "usage: %s check|time|profile|serve --seed N --out DIR [key=value ...]%s", argv[0], "");
    if (!strcmp(argv[1], "check")) r->mode = PF_MODE_CHECK;
    else if (!strcmp(argv[1], "time")) r->mode = PF_MODE_TIME;
    else if (!strcmp(argv[1], "profile")) r->mode = PF_MODE_PROFILE;
    else if (!strcmp(argv[1], "serve")) r->mode = PF_MODE_SERVE;
    else pf_fail(2, "unknown mode %s; expected check, time, profile or serve%s", argv[1], "");
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--seed")) r->seed = strtoull(pf_arg_value(argc, argv, &i), NULL, 10);
        else if (!strcmp(argv[i], "--out")) r->out_dir = pf_arg_value(argc, argv, &i);
        else if (!strcmp(argv[i], "--calls")) r->calls = atoi(pf_arg_value(argc, argv, &i));
        else if (!strcmp(argv[i], "--warmup")) r->warmup = atoi(pf_arg_value(argc, argv, &i));
        else if (!strcmp(argv[i], "--trials")) r->trials = atoi(pf_arg_value(argc, argv, &i));
        else if (!strcmp(argv[i], "--no-flush")) r->flush = 0;
        else if (!strcmp(argv[i], "--dump-inputs")) r->dump_inputs = 1;
        else if (!strcmp(argv[i], "--channel")) r->channel = atoi(pf_arg_value(argc, argv, &i));
        else if (!strcmp(argv[i], "--save-call") && r->nsave < PF_MAX_SAVED_CALLS)
            r->save_calls[r->nsave++] = atoi(pf_arg_value(argc, argv, &i));
        else if (strchr(argv[i], '=') && r->nparams < PF_MAX_PARAMS) {
            char *eq = strchr(argv[i], '=');
            *eq = '\0';
            r->keys[r->nparams] = argv[i];
            r->vals[r->nparams++] = eq + 1;
        } else pf_fail(2, "unknown argument %s%s", argv[i], "");
    }
    if (r->mode == PF_MODE_PROFILE) { r->warmup = 1; r->trials = 1; }
    if (r->mode == PF_MODE_SERVE && r->channel < 0) pf_fail(2, "serve needs --channel FD%s%s", "", "");
    if (r->trials < 1 || r->trials > PF_MAX_TIMES || r->calls < 1 || r->warmup < 0)
        pf_fail(2, "calls and trials must be at least 1 (trials at most 100000), warmup at least 0%s%s", "", "");
    r->times_ms = (double *)calloc((size_t)r->trials, sizeof(double));
#ifdef __CUDACC__
    pf_cuda_check(cudaEventCreate(&r->ev0), "cudaEventCreate");
    pf_cuda_check(cudaEventCreate(&r->ev1), "cudaEventCreate");
#endif
}

static const char *pf_param(pf_run *r, const char *key) {
    for (int i = 0; i < r->nparams; i++)
        if (!strcmp(r->keys[i], key)) return r->vals[i];
    return NULL;
}

static long pf_param_int(pf_run *r, const char *key, long fallback) {
    const char *v = pf_param(r, key);
    return v ? strtol(v, NULL, 10) : fallback;
}

static double pf_param_double(pf_run *r, const char *key, double fallback) {
    const char *v = pf_param(r, key);
    return v ? strtod(v, NULL) : fallback;
}

static void pf_upload(pf_buf *b) {
#ifdef __CUDACC__
    pf_cuda_check(cudaMemcpy(b->dev, b->host, pf_bytes(b), cudaMemcpyHostToDevice), b->name);
#else
    (void)b;
#endif
}

/* Guards around the data; the data itself poisoned (outputs) or left for filling (inputs). */
static void pf_arm(pf_buf *b) {
    size_t bytes = pf_bytes(b);
    memset(b->raw, PF_GUARD_BYTE, PF_GUARD_BYTES);
    memset(b->host + bytes, PF_GUARD_BYTE, PF_GUARD_BYTES);
    if (b->role == PF_OUTPUT) memset(b->host, PF_POISON_BYTE, bytes);
#ifdef __CUDACC__
    pf_cuda_check(cudaMemset(b->draw, PF_GUARD_BYTE, bytes + 2 * PF_GUARD_BYTES), b->name);
    if (b->role == PF_OUTPUT) pf_cuda_check(cudaMemset(b->dev, PF_POISON_BYTE, bytes), b->name);
    else pf_upload(b);
#endif
}

static void pf_serve_map(pf_run *r, pf_buf *b);

static pf_buf *pf_add(pf_run *r, const char *name, pf_dtype dtype, pf_role role, size_t count, double lo, double hi) {
    if (r->nbufs == PF_MAX_BUFS) pf_fail(2, "more than 32 buffers (at %s)%s", name, "");
    pf_buf *b = &r->bufs[r->nbufs++];
    b->name = name; b->dtype = dtype; b->role = role; b->count = count; b->lo = lo; b->hi = hi;
    if (r->mode == PF_MODE_SERVE) {  /* the judge's memory: it draws, poisons and guards; a fixed buffer starts 0 */
        pf_serve_map(r, b);
        return b;
    }
    size_t total = pf_bytes(b) + 2 * PF_GUARD_BYTES;
    b->raw = (unsigned char *)aligned_alloc(PF_GUARD_BYTES, (total + PF_GUARD_BYTES - 1) / PF_GUARD_BYTES * PF_GUARD_BYTES);
    if (!b->raw) pf_fail(2, "cannot allocate buffer %s%s", name, "");
    b->host = b->raw + PF_GUARD_BYTES;
#ifdef __CUDACC__
    pf_cuda_check(cudaMalloc((void **)&b->draw, total), name);
    b->dev = b->draw + PF_GUARD_BYTES;
#endif
    if (role == PF_INPUT || role == PF_INOUT) pf_fill(b, r->seed, 0, r->nbufs - 1);
    else if (role == PF_FIXED) memset(b->host, 0, pf_bytes(b));
    pf_arm(b);
    return b;
}

/* A random input, redrawn for every checked call. */
static pf_buf *pf_input(pf_run *r, const char *name, pf_dtype dtype, size_t count, double lo, double hi) {
    return pf_add(r, name, dtype, PF_INPUT, count, lo, hi);
}

/* An output: poisoned before every call, compared after it. */
static pf_buf *pf_output(pf_run *r, const char *name, pf_dtype dtype, size_t count) {
    return pf_add(r, name, dtype, PF_OUTPUT, count, 0, 0);
}

/* Updated in place: drawn like an input before each call, compared like an output after it. */
static pf_buf *pf_inout(pf_run *r, const char *name, pf_dtype dtype, size_t count, double lo, double hi) {
    return pf_add(r, name, dtype, PF_INOUT, count, lo, hi);
}

/* An input the harness fills itself (structure, indices): write pf_host(b), then pf_upload(b). Never redrawn. */
static pf_buf *pf_fixed(pf_run *r, const char *name, pf_dtype dtype, size_t count) {
    return pf_add(r, name, dtype, PF_FIXED, count, 0, 0);
}

static void *pf_host(pf_buf *b) { return b->host; }

/* The pointer the kernel gets: device memory under CUDA, host memory otherwise. */
static void *pf_ptr(pf_buf *b) {
#ifdef __CUDACC__
    return b->dev;
#else
    return b->host;
#endif
}

static void pf_flush_cache(pf_run *r) {
    if (!r->flush) return;
#ifdef __CUDACC__
    if (!r->flush_buf) {
        int device = 0, l2_bytes = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device);
        r->flush_bytes = 2 * (size_t)(l2_bytes > 0 ? l2_bytes : (64 << 20));
        pf_cuda_check(cudaMalloc((void **)&r->flush_buf, r->flush_bytes), "L2 flush buffer");
    }
    pf_cuda_check(cudaMemset(r->flush_buf, r->iter & 0xFF, r->flush_bytes), "L2 flush");
#else
    if (!r->flush_buf) {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
        size_t bytes = 2 * (size_t)(llc > 0 ? llc : (8 << 20));
        r->flush_bytes = bytes > PF_CPU_FLUSH_CAP_BYTES ? PF_CPU_FLUSH_CAP_BYTES : bytes;
        r->flush_buf = (unsigned char *)malloc(r->flush_bytes);
    }
    memset(r->flush_buf, r->iter & 0xFF, r->flush_bytes);
    __asm__ __volatile__("" : : "r"(r->flush_buf) : "memory");
#endif
}

/* Time and profile modes: copy input set `k` into the buffer, making the sets on first use (drawn as checked calls
 * 0, 1, ... draw theirs). A device-to-device or host copy: fast, so the device does not idle between calls. */
static void pf_use_input_set(pf_run *r, pf_buf *b, int index, int k) {
    size_t bytes = pf_bytes(b);
    if (!b->sets[0]) {
        for (int set = 0; set < PF_INPUT_SETS; set++) {
            pf_fill(b, r->seed, set, index);
#ifdef __CUDACC__
            pf_cuda_check(cudaMalloc((void **)&b->sets[set], bytes), b->name);
            pf_cuda_check(cudaMemcpy(b->sets[set], b->host, bytes, cudaMemcpyHostToDevice), b->name);
#else
            b->sets[set] = (unsigned char *)malloc(bytes);
            if (!b->sets[set]) pf_fail(2, "cannot allocate the input sets of %s%s", b->name, "");
            memcpy(b->sets[set], b->host, bytes);
#endif
        }
    }
#ifdef __CUDACC__
    pf_cuda_check(cudaMemcpy(b->dev, b->sets[k], bytes, cudaMemcpyDeviceToDevice), b->name);
#else
    memcpy(b->host, b->sets[k], bytes);
#endif
}

/* Start of one call. Returns 0 when every call of the mode has been made.
 * A checked call draws fresh inputs from (seed, call); a timed one alternates between two input sets (no two
 * consecutive calls share inputs: nothing answers from a result it kept). Either way outputs are poisoned
 * before it, outside the timer, so a kernel cannot tell a timed call from a checked one by its buffers; the
 * validator compares the outputs of timed calls it picks at random (--save-call) with the original's. */
static int pf_serve_begin(pf_run *r);
static void pf_serve_end(pf_run *r);

static int pf_begin(pf_run *r) {
    if (r->mode == PF_MODE_SERVE) return pf_serve_begin(r);
    int total = r->mode == PF_MODE_CHECK ? r->calls : r->warmup + r->trials;
    if (r->iter >= total) return 0;
    for (int i = 0; i < r->nbufs; i++) {
        pf_buf *b = &r->bufs[i];
        int drawn = b->role == PF_INPUT || b->role == PF_INOUT;
        if (r->mode == PF_MODE_CHECK) {
            if (r->iter > 0 && drawn) pf_fill(b, r->seed, r->iter, i);
            pf_arm(b);
        } else if (drawn) {
            pf_use_input_set(r, b, i, r->iter % PF_INPUT_SETS);
        } else if (b->role == PF_OUTPUT) {
            pf_arm(b);  /* a fixed buffer needs nothing: checked calls prove the kernel leaves it unchanged */
        }
    }
    if (r->mode == PF_MODE_CHECK) {
#ifdef __CUDACC__
        pf_cuda_check(cudaDeviceSynchronize(), "set-up before the call");
#endif
        return 1;
    }
    if (r->mode == PF_MODE_PROFILE && r->iter == r->warmup) {
#ifdef PF_HAVE_NVTX
        nvtxRangePushA("pf_profile");
#endif
    }
    if (r->mode == PF_MODE_TIME) pf_flush_cache(r);
#ifdef __CUDACC__
    pf_cuda_check(cudaDeviceSynchronize(), "set-up before the call");
    pf_cuda_check(cudaEventRecord(r->ev0, 0), "cudaEventRecord");
#else
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
#endif
    return 1;
}

static int pf_saved_call(const pf_run *r) {
    for (int i = 0; i < r->nsave; i++)
        if (r->save_calls[i] == r->iter) return 1;
    return 0;
}

static void pf_write_npy(pf_run *r, pf_buf *b, const unsigned char *data) {
    char path[4096], header[256];
    snprintf(path, sizeof path, "%s/%s.%d.npy", r->out_dir, b->name, r->iter);
    FILE *f = fopen(path, "wb");
    if (!f) pf_fail(5, "cannot write %s%s", path, "");
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                       pf_dtype_descr(b->dtype), b->count);
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    uint16_t hlen = (uint16_t)(len + pad + 1);
    magic[8] = (unsigned char)(hlen & 0xFF); magic[9] = (unsigned char)(hlen >> 8);
    fwrite(magic, 1, 10, f);
    fwrite(header, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    if (fwrite(data, 1, pf_bytes(b), f) != pf_bytes(b) || fclose(f) != 0) pf_fail(5, "cannot write %s%s", path, "");
}

/* A 64-bit digest of an input's bytes: sum of each 8-byte word times an odd, position-dependent multiplier
 * (splitmix64 of its index). Any change to one word changes it. Inputs are compared by digest, not written
 * whole: a task's inputs can be gigabytes. perfforge_harness.py computes the same digest. */
static uint64_t pf_digest(const unsigned char *data, size_t bytes) {
    uint64_t h = 0;
    size_t words = bytes / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w, s = (uint64_t)i;
        memcpy(&w, data + 8 * i, 8);
        h += w * (pf_mix(&s) | 1u);
    }
    for (size_t i = words * 8; i < bytes; i++) {
        uint64_t s = (uint64_t)i;
        h += (uint64_t)data[i] * (pf_mix(&s) | 1u);
    }
    return h;
}

static void pf_write_digest(pf_run *r, pf_buf *b, const unsigned char *data) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d.digest", r->out_dir, b->name, r->iter);
    FILE *f = fopen(path, "w");
    if (!f) pf_fail(5, "cannot write %s%s", path, "");
    fprintf(f, "%016llx\n", (unsigned long long)pf_digest(data, pf_bytes(b)));
    if (fclose(f) != 0) pf_fail(5, "cannot write %s%s", path, "");
}

static void pf_check_guards(pf_run *r, pf_buf *b, const unsigned char *raw) {
    size_t bytes = pf_bytes(b);
    for (size_t i = 0; i < PF_GUARD_BYTES; i++) {
        if (raw[i] != PF_GUARD_BYTE || raw[PF_GUARD_BYTES + bytes + i] != PF_GUARD_BYTE) {
            char where[128];
            snprintf(where, sizeof where, "%s (call %d)", raw[i] != PF_GUARD_BYTE ? "before its start" : "past its end",
                     r->iter);
            pf_fail(3, "buffer '%s' was written out of bounds: %s", b->name, where);
        }
    }
}

/* Every buffer after the call: guards checked, outputs written as BUF.CALL.npy; with digests, a digest of every
 * input as BUF.CALL.digest (check mode; a saved timed call writes its outputs only). */
static void pf_save_buffers(pf_run *r, int digests) {
    for (int i = 0; i < r->nbufs; i++) {
        pf_buf *b = &r->bufs[i];
        int is_output = b->role == PF_OUTPUT || b->role == PF_INOUT;
        if (!is_output && !digests) continue;
        unsigned char *raw = b->raw;
#ifdef __CUDACC__
        raw = (unsigned char *)malloc(pf_bytes(b) + 2 * PF_GUARD_BYTES);
        pf_cuda_check(cudaMemcpy(raw, b->draw, pf_bytes(b) + 2 * PF_GUARD_BYTES, cudaMemcpyDeviceToHost), b->name);
#endif
        pf_check_guards(r, b, raw);
        if (is_output || r->dump_inputs) pf_write_npy(r, b, raw + PF_GUARD_BYTES);
        if (!is_output) pf_write_digest(r, b, raw + PF_GUARD_BYTES);
#ifdef __CUDACC__
        free(raw);
#endif
    }
}

/* End of one call: check mode saves and checks every buffer; time mode records the duration (and saves the
 * outputs of the calls named by --save-call). */
static void pf_end(pf_run *r) {
#ifdef __CUDACC__
    pf_cuda_check(cudaGetLastError(), "the kernel launch");
    pf_cuda_check(cudaDeviceSynchronize(), "the kernel");  /* every stream, so no work escapes the timer */
#endif
    if (r->mode == PF_MODE_SERVE) { pf_serve_end(r); return; }
    if (r->mode == PF_MODE_CHECK) {
        pf_save_buffers(r, 1);
        r->iter++;
        return;
    }
    double ms;
#ifdef __CUDACC__
    float event_ms = 0;
    pf_cuda_check(cudaEventRecord(r->ev1, 0), "cudaEventRecord");
    pf_cuda_check(cudaEventSynchronize(r->ev1), "cudaEventSynchronize");
    pf_cuda_check(cudaEventElapsedTime(&event_ms, r->ev0, r->ev1), "cudaEventElapsedTime");
    ms = event_ms;
#else
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - r->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - r->t0.tv_nsec) * 1e-6;
#endif
    if (r->iter >= r->warmup) r->times_ms[r->ntimes++] = ms;
    if (r->mode == PF_MODE_PROFILE && r->iter == r->warmup) {
#ifdef PF_HAVE_NVTX
        nvtxRangePop();
#endif
    }
    if (r->mode == PF_MODE_TIME && pf_saved_call(r)) pf_save_buffers(r, 0);
    r->iter++;
}

/* Writes OUT/timing.json (time and profile modes) and returns the process's exit status. */
static int pf_finish(pf_run *r) {
    if (r->mode == PF_MODE_CHECK || r->mode == PF_MODE_SERVE) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/timing.json", r->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) pf_fail(5, "cannot write %s%s", path, "");
    fprintf(f, "{\"method\": \"%s\", \"flush_bytes\": %zu, \"times_ms\": [",
#ifdef __CUDACC__
            "cuda_events",
#else
            "monotonic_clock",
#endif
            r->flush ? r->flush_bytes : (size_t)0);
    for (int i = 0; i < r->ntimes; i++) fprintf(f, "%s%.9g", i ? ", " : "", r->times_ms[i]);
    fprintf(f, "]");
    fprintf(f, ", \"saved_calls\": [");
    for (int i = 0; i < r->nsave; i++) fprintf(f, "%s%d", i ? ", " : "", r->save_calls[i]);
    fprintf(f, "]");
#ifdef __CUDACC__
    {
        cudaDeviceProp prop;
        int device = 0, driver = 0, runtime = 0;
        cudaGetDevice(&device);
        cudaGetDeviceProperties(&prop, device);
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        fprintf(f, ", \"device\": \"%s\", \"sm_count\": %d, \"l2_bytes\": %d, \"cuda_driver\": %d, \"cuda_runtime\": %d",
                prop.name, prop.multiProcessorCount, prop.l2CacheSize, driver, runtime);
    }
#endif
    fprintf(f, "}\n");
    if (fclose(f) != 0) pf_fail(5, "cannot write %s%s", path, "");
    return 0;
}


/* ---- serve mode: the untrusted side of the judge's protocol (profiling/served.py) --------------------------- */

#if defined(PF_HAVE_SERVE)
static void pf_serve_send(pf_run *r, const char *text) {
    if (send(r->channel, text, strlen(text), MSG_NOSIGNAL) < 0) _exit(6);
}

/* Declare the buffer, receive the judge's sealed memfd, map it: [guard | data | guard], the judge's layout. */
static void pf_serve_map(pf_run *r, pf_buf *b) {
    char text[512], reply[64], control[CMSG_SPACE(sizeof(int))];
    snprintf(text, sizeof text, "buf %s %d %d %zu %.17g %.17g", b->name, (int)b->dtype, (int)b->role, b->count,
             b->lo, b->hi);
    pf_serve_send(r, text);
    struct iovec iov = {reply, sizeof reply - 1};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov; msg.msg_iovlen = 1; msg.msg_control = control; msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(r->channel, &msg, 0);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    if (n <= 0 || !cmsg || cmsg->cmsg_type != SCM_RIGHTS) _exit(6);
    int fd;
    memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
    reply[n] = '\0';
    size_t total = (size_t)strtoull(reply + 3, NULL, 10);  /* "ok <bytes>" */
    void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) pf_fail(2, "cannot map buffer %s%s", b->name, "");
    b->raw = (unsigned char *)map;
    b->host = b->raw + PF_GUARD_BYTES;
#ifdef __CUDACC__
    /* The judge's pages pinned for the device, so copies go straight between them and the device. Where the driver
     * will not pin them, the bytes pass through pinned memory of this process (an unregistered memfd mapping
     * cannot be copied from at all: "OS call failed", seen on the H100). */
    pf_cuda_check(cudaMalloc((void **)&b->draw, total), b->name);
    if (cudaHostRegister(map, total, cudaHostRegisterDefault) == cudaSuccess) {
        b->stage = b->raw;
    } else {
        (void)cudaGetLastError();
        pf_cuda_check(cudaMallocHost((void **)&b->stage, total), b->name);
    }
    b->dev = b->draw + PF_GUARD_BYTES;
#endif
}

#ifdef __CUDACC__
/* One buffer, guards included, between the judge's memory and the device. */
static void pf_serve_copy(pf_buf *b, int to_device) {
    size_t bytes = pf_bytes(b) + 2 * PF_GUARD_BYTES;
    if (to_device) {
        if (b->stage != b->raw) memcpy(b->stage, b->raw, bytes);
        pf_cuda_check(cudaMemcpy(b->draw, b->stage, bytes, cudaMemcpyHostToDevice), b->name);
    } else {
        pf_cuda_check(cudaMemcpy(b->stage, b->draw, bytes, cudaMemcpyDeviceToHost), b->name);
        if (b->stage != b->raw) memcpy(b->raw, b->stage, bytes);
    }
}

/* Before a call: the judge's fresh inputs up (guards with them), every output poisoned and its guards re-armed on
 * the device; fixed buffers went up once, before the filter. */
static void pf_serve_stage_in(pf_run *r) {
    for (int i = 0; i < r->nbufs; i++) {
        pf_buf *b = &r->bufs[i];
        if (b->role == PF_INPUT || b->role == PF_INOUT) {
            pf_serve_copy(b, 1);
        } else if (b->role == PF_OUTPUT) {
            pf_cuda_check(cudaMemset(b->draw, PF_GUARD_BYTE, pf_bytes(b) + 2 * PF_GUARD_BYTES), b->name);
            pf_cuda_check(cudaMemset(b->dev, r->poison, pf_bytes(b)), b->name);
        }
    }
    pf_cuda_check(cudaDeviceSynchronize(), "copying the inputs");
}

/* "fetch": every buffer, guards included, back into the judge's memory (only the calls the judge checks). */
static void pf_serve_fetch(pf_run *r) {
    for (int i = 0; i < r->nbufs; i++) pf_serve_copy(&r->bufs[i], 0);
    pf_cuda_check(cudaDeviceSynchronize(), "copying the outputs");
}
#endif

#define PF_ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* system call `nr` allowed when its 64-bit argument `arg` is NULL (both halves zero), refused with EPERM otherwise; any
 * other call falls through with the number still loaded */
#define PF_ALLOW_IF_NULL(nr, arg)                                                                          \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 6),                                                       \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])),                          \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3),                                                          \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg]) + 4),                      \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),                                                          \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                                                          \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

/* The system calls a kernel process may make once it serves: memory, threads, time, its own signals, the channel
 * (already open) and writes to its open descriptors. Everything else fails with EPERM: no file, socket, process,
 * shared-memory, scheduling or tracing call reaches the kernel, whatever the code (raw system calls included).
 * clone must create a thread (CLONE_THREAD), clone3 answers ENOSYS so libc falls back to clone; kill and tgkill
 * reach this process only; rt_sigaction and prlimit64 may read, not set. Returns 0 when installed. */
static int pf_install_filter(void) {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    return -1;
#endif
    const unsigned pid = (unsigned)getpid();
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        PF_ALLOW(__NR_read), PF_ALLOW(__NR_write), PF_ALLOW(__NR_readv), PF_ALLOW(__NR_writev),
        PF_ALLOW(__NR_pread64), PF_ALLOW(__NR_pwrite64), PF_ALLOW(__NR_close), PF_ALLOW(__NR_lseek),
        PF_ALLOW(__NR_fstat), PF_ALLOW(__NR_newfstatat),
        PF_ALLOW(__NR_recvfrom), PF_ALLOW(__NR_recvmsg), PF_ALLOW(__NR_sendto), PF_ALLOW(__NR_sendmsg),
        PF_ALLOW(__NR_munmap),
        PF_ALLOW(__NR_madvise), PF_ALLOW(__NR_brk), PF_ALLOW(__NR_membarrier),
        PF_ALLOW(__NR_futex), PF_ALLOW(__NR_set_robust_list), PF_ALLOW(__NR_get_robust_list),
#ifdef __NR_rseq
        PF_ALLOW(__NR_rseq),
#endif
        PF_ALLOW(__NR_set_tid_address), PF_ALLOW(__NR_sched_yield), PF_ALLOW(__NR_sched_getaffinity),
        PF_ALLOW(__NR_getpid), PF_ALLOW(__NR_gettid), PF_ALLOW(__NR_getppid), PF_ALLOW(__NR_getuid),
        PF_ALLOW(__NR_geteuid), PF_ALLOW(__NR_getgid), PF_ALLOW(__NR_getegid),
        PF_ALLOW(__NR_clock_gettime), PF_ALLOW(__NR_clock_getres), PF_ALLOW(__NR_gettimeofday),
        PF_ALLOW(__NR_nanosleep), PF_ALLOW(__NR_clock_nanosleep), PF_ALLOW(__NR_getrusage), PF_ALLOW(__NR_times),
        PF_ALLOW(__NR_sysinfo), PF_ALLOW(__NR_uname), PF_ALLOW(__NR_getrandom), PF_ALLOW(__NR_getcpu),
        PF_ALLOW(__NR_rt_sigprocmask),
#ifdef __CUDACC__
        PF_ALLOW(__NR_rt_sigreturn),
#endif
        /* not rt_sigreturn on the CPU: no handler can be installed once serving (rt_sigaction reads only) nor is
         * one before, so only a forged frame would return through it, loading any register state (eighteenth red
         * team: a hand-built frame set MXCSR's FTZ/DAZ, no MXCSR instruction nor library routine, 1.2x) */
        PF_ALLOW(__NR_sigaltstack), PF_ALLOW(__NR_exit), PF_ALLOW(__NR_exit_group),
        /* a call interrupted by the judge's SIGSTOP resumes through restart_syscall (the CUDA driver's waits did) */
        PF_ALLOW(__NR_restart_syscall),
#ifdef __CUDACC__
        /* the CUDA driver talks to its device files, already open */
        PF_ALLOW(__NR_ioctl), PF_ALLOW(__NR_poll), PF_ALLOW(__NR_ppoll), PF_ALLOW(__NR_eventfd2),
        PF_ALLOW(__NR_epoll_wait), PF_ALLOW(__NR_epoll_pwait),
        /* no new thread: a thread of the candidate's could launch work after the harness's synchronisation */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        /* memory, but no executable mapping: the harness's code (its protocol, its synchronisation) stays as built */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x4u /* PROT_EXEC */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* clone: threads only */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000u /* CLONE_THREAD */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#ifdef __NR_clone3
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
        /* mremap: growing or moving a mapping where the kernel chooses (realloc), never onto an address of the
         * caller's (MREMAP_FIXED) nor keeping the old one (MREMAP_DONTUNMAP): the twentieth session's red team moved
         * the page of libc's _quicksort onto libgcc_s's code, where every sample and probe named libgcc_s (4.6-6.1x
         * "improved" with qsort's code found by hand). Flags above MREMAP_MAYMOVE (1) fail with EPERM. */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mremap, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 1, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        /* kill, tgkill, tkill: this process only (abort() raises SIGABRT through tgkill) */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* rt_sigaction: reading a disposition only (new action NULL). A handler installed while serving runs when
         * the judge resumes the process with SIGCONT, on the main thread before it says "start": work outside the
         * window (the red team's SIGCONT handler read 9x against the honest 5x; sigaction found in libc's symbol
         * table, past the binary policy). Nothing a kernel does needs a handler once "ready" is said. */
        PF_ALLOW_IF_NULL(__NR_rt_sigaction, 1),
        /* prlimit64: reading only (new limit NULL) */
        PF_ALLOW_IF_NULL(__NR_prlimit64, 2),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog fprog = {(unsigned short)(sizeof prog / sizeof prog[0]), prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    /* TSYNC: threads already running (an OpenMP pool, the CUDA driver's) get the filter too */
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) == 0 ? 0 : -1;
}

/* The host's floating-point control registers as one word: x86-64's MXCSR without its sticky exception flags
 * (bits 0-5, which arithmetic sets) in the low half, the x87 control word in the high half. A kernel that returns
 * with them changed (flush-to-zero, denormals-are-zero, rounding) has changed the task's floating-point rules; the
 * seventeenth red team found libm's fesetenv by hand through its own process's memory (no import, no byte of
 * the object's code the binary policy reads) and left FTZ and DAZ set: 1.25x "improved". */
static unsigned pf_fp_control(void) {
#if defined(__x86_64__)
    unsigned short x87;
    unsigned mxcsr;
    __asm__ volatile("fnstcw %0" : "=m"(x87));
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));  /* asm, not the builtin: nvcc's front end reads this too */
    return ((unsigned)x87 << 16) | (mxcsr & 0xFFC0u);
#else
    return 0;
#endif
}

/* A lower-case hex digit's value, -1 for anything else. */
static int pf_hex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* glibc loads libgcc_s (its unwinder) at a process's first thread exit or cancellation: a kernel's worker ending
 * with pthread_exit or thrd_exit would need an executable mapping after "ready", which the filter refuses (every
 * such candidate died of SIGABRT: nineteenth session's red team). One thread of the harness's ends so first. */
static void *pf_exit_at_once(void *unused) {
    (void)unused;
    pthread_exit(0);
}

static void pf_load_unwinder(void) {
    pthread_t thread;
    if (pthread_create(&thread, 0, pf_exit_at_once, 0) == 0) pthread_join(thread, 0);
}

/* Wait for the judge's word: "call" (1) or "exit" / a closed channel (0). The first time, the filter goes in and
 * "ready" is said: no code of the candidate's has run before this point (its object may hold no constructor). */
static int pf_serve_begin(pf_run *r) {
    char text[64];
    if (!r->ready) {
        r->fp_control = pf_fp_control();
        pf_load_unwinder();
#ifdef __CUDACC__
        for (int i = 0; i < r->nbufs; i++) pf_serve_copy(&r->bufs[i], 1);  /* fixed buffers stay up from here */
        pf_cuda_check(cudaDeviceSynchronize(), "set-up");
        pf_serve_send(r, pf_install_filter() == 0 ? "ready seccomp staged" : "ready unfiltered staged");
#else
        pf_serve_send(r, pf_install_filter() == 0 ? "ready seccomp windowed" : "ready unfiltered windowed");
#endif
        r->ready = 1;
    }
    for (;;) {  /* "ping": a null call, the judge's measure of the protocol's own round trip */
        ssize_t n = recv(r->channel, text, sizeof text - 1, 0);
        if (n <= 0) return 0;
        text[n] = '\0';
#ifdef __CUDACC__
        if (strcmp(text, "fetch") == 0) {
            pf_serve_fetch(r);
            pf_serve_send(r, "fetched");
            continue;
        }
#endif
        if (strcmp(text, "ping") != 0) break;
        pf_serve_send(r, "start");
        pf_serve_send(r, "synced");
        pf_serve_send(r, "done");
    }
    /* "call", or "call XX": the judge's poison for this call's outputs, two hex digits (plain: 0xFF); a CPU
     * process's outputs are poisoned by the judge itself, in its own memory */
    if (strcmp(text, "call") == 0) r->poison = PF_POISON_BYTE;
    else if (strncmp(text, "call ", 5) == 0 && pf_hex(text[5]) >= 0 && pf_hex(text[6]) >= 0 && text[7] == '\0')
        r->poison = (unsigned char)(pf_hex(text[5]) * 16 + pf_hex(text[6]));
    else return 0;
#ifdef __CUDACC__
    pf_serve_stage_in(r);
    pf_flush_cache(r);  /* the L2 holds the copied inputs: flushed, as before a timed call of time mode */
    pf_cuda_check(cudaDeviceSynchronize(), "the L2 flush");
#endif
    pf_serve_send(r, "start");  /* the body runs next: the judge's window opens */
    return 1;
}

static void pf_serve_end(pf_run *r) {
    unsigned fp_control = pf_fp_control();
    if (fp_control != r->fp_control) {  /* said in place of "synced": the judge refuses the candidate */
        char text[64];
        snprintf(text, sizeof text, "fpcontrol %08x %08x", r->fp_control, fp_control);
        pf_serve_send(r, text);
    }
    pf_serve_send(r, "synced");  /* the body returned (CUDA: pf_end synchronised the whole device, checked the launch) */
    pf_serve_send(r, "done");
    r->iter++;
}
#else
static void pf_serve_map(pf_run *r, pf_buf *b) { (void)r; pf_fail(2, "serve mode: not for this build (%s)%s", b->name, ""); }
static int pf_serve_begin(pf_run *r) { (void)r; return 0; }
static void pf_serve_end(pf_run *r) { (void)r; }
#endif

#endif /* PERFFORGE_HARNESS_H */
