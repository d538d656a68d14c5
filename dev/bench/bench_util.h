/* bench_util.h: shared timing for the CUDA benchmarks (header only, static).
 * After warm-up, a pair of events brackets a run of NMT_BENCH_BATCH (default
 * 20) back-to-back calls, so the events' own microseconds do not land on
 * tiny kernels; the time per call is the run's time / the batch, and the
 * result is the median over NMT_BENCH_REPEATS (default 20, at least 15
 * unless set lower on purpose) runs. Callees rotate their inputs by the call
 * index over copies bigger than 2x the 50 MB L2 (bench_copies); a
 * device-to-device copy measured in the same program gives the bandwidth
 * every kernel is compared with (bytes moved = read + write). Results go to
 * stdout as JSON lines (one per measurement), tables go to stderr.
 * Also shared by the programs: the NMT_OK check, number lists from the
 * command line or the environment, command-line options, and the error of a
 * device result against its CPU twin. The CUDA check, CUDA_OK, is the GPU
 * tests' tests/common/cuda_ok.h. */
#ifndef NMT_BENCH_UTIL_H
#define NMT_BENCH_UTIL_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ok.h" /* CUDA_OK (tests/common) */
#include "nmt_status.h"

/* Runs an nmt_* call whose last argument is &err; on failure prints the call,
 * the file, the line and the library's message, and exits. */
#define NMT_OK(call)                                                                       \
    do {                                                                                   \
        nmt_error err = {};                                                                \
        if ((call) != NMT_STATUS_OK) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, err.message);   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define BENCH_L2_FLUSH_BYTES (128u << 20) /* rotate inputs over > 2x the 50 MB L2 */

static int bench_env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

/* ---- number lists and options ------------------------------------------- */

/* Numbers in `text` separated by anything that cannot start a number (",",
 * ":", " "); NULL or empty text gives the defaults. */
static int parse_doubles_text(const char *v, const double *defaults, int n_defaults,
                              double *out, int cap)
{
    int n = 0;
    if (!v || !*v) {
        for (n = 0; n < n_defaults && n < cap; n++)
            out[n] = defaults[n];
        return n;
    }
    while (*v && n < cap) {
        char *end;
        double x = strtod(v, &end);
        if (end == v) {
            v++;
            continue;
        }
        out[n++] = x;
        v = end;
    }
    return n;
}

static int parse_ints_text(const char *v, const int *defaults, int n_defaults, int *out, int cap)
{
    double d[64], tmp[64];
    int nd = n_defaults < 64 ? n_defaults : 64;
    for (int i = 0; i < nd; i++)
        d[i] = defaults[i];
    int n = parse_doubles_text(v, d, nd, tmp, cap < 64 ? cap : 64);
    for (int i = 0; i < n; i++)
        out[i] = (int)tmp[i];
    return n;
}

/* The same from the environment variable `env`. */
static int parse_doubles(const char *env, const double *defaults, int n_defaults, double *out,
                         int cap)
{
    return parse_doubles_text(getenv(env), defaults, n_defaults, out, cap);
}

static int parse_ints(const char *env, const int *defaults, int n_defaults, int *out, int cap)
{
    return parse_ints_text(getenv(env), defaults, n_defaults, out, cap);
}

static int in_list(int x, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == x)
            return 1;
    return 0;
}

/* Options: "--name value" or "--name=value" (the value), "--name" alone (a
 * flag). bench_options_check exits with a message on an option not in
 * `known` (NULL-terminated; a trailing '=' marks one that takes a value). */
static const char *bench_option(int argc, char **argv, const char *name)
{
    const size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], name, n) != 0)
            continue;
        if (argv[i][n] == '=')
            return argv[i] + n + 1;
        if (argv[i][n] == '\0' && i + 1 < argc)
            return argv[i + 1];
    }
    return NULL;
}

static int bench_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

static void bench_options_check(int argc, char **argv, const char *const *known,
                                const char *usage)
{
    for (int i = 1; i < argc; i++) {
        int found = 0;
        for (const char *const *k = known; *k && !found; k++) {
            size_t n = strcspn(*k, "=");
            if (strncmp(argv[i], *k, n) != 0 || (argv[i][n] != '\0' && argv[i][n] != '='))
                continue;
            found = 1;
            if ((*k)[n] == '=' && argv[i][n] == '\0')
                i++; /* its value */
        }
        if (!found) {
            fprintf(stderr, "unknown option %s\n%s", argv[i], usage);
            exit(2);
        }
    }
}

/* The next name of a comma list (*list advances past it); 0 at the end. */
static int bench_next_name(const char **list, char *name, size_t cap)
{
    const char *p = *list;
    if (!p || !*p)
        return 0;
    size_t n = strcspn(p, ",");
    snprintf(name, cap, "%.*s", (int)n, p);
    *list = p[n] ? p + n + 1 : p + n;
    return 1;
}

/* ---- a device result against its CPU twin --------------------------------- */

/* The largest |got - want| (NaN on either side: infinity; equal infinities: 0). */
static double bench_max_abs_err(const float *got, const float *want, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i])
            continue;
        double e = fabs((double)got[i] - (double)want[i]);
        if (!(e <= worst))
            worst = e == e ? e : INFINITY;
    }
    return worst;
}

static size_t bench_count_diff_i32(const int32_t *got, const int32_t *want, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i] != want[i];
    return bad;
}

static int bench_repeats(void)
{
    int r = bench_env_int("NMT_BENCH_REPEATS", 20);
    return r < 1 ? 1 : r;
}

static int bench_batch(void)
{
    int r = bench_env_int("NMT_BENCH_BATCH", 20);
    return r < 1 ? 1 : r;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Times fn(arg, i) for i = 0, 1, ... (the callee rotates its buffers by i);
 * returns the median time per call in microseconds, each run timing `batch`
 * back-to-back calls. */
typedef void (*bench_fn)(void *arg, int iteration);
static double bench_time_us_batch(bench_fn fn, void *arg, cudaStream_t stream, int batch)
{
    int repeats = bench_repeats(), warmup = 3, call = 0;
    batch = batch < 1 ? 1 : batch;
    float *ms = (float *)malloc(repeats * sizeof(float));
    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++)
        fn(arg, call++);
    CUDA_OK(cudaStreamSynchronize(stream));
    for (int i = 0; i < repeats; i++) {
        CUDA_OK(cudaEventRecord(start, stream));
        for (int j = 0; j < batch; j++)
            fn(arg, call++);
        CUDA_OK(cudaEventRecord(stop, stream));
        CUDA_OK(cudaEventSynchronize(stop));
        CUDA_OK(cudaEventElapsedTime(&ms[i], start, stop));
        ms[i] /= (float)batch;
    }
    CUDA_OK(cudaGetLastError());
    qsort(ms, repeats, sizeof(float), cmp_float);
    double median = repeats % 2 ? ms[repeats / 2] : 0.5 * (ms[repeats / 2 - 1] + ms[repeats / 2]);
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(stop));
    free(ms);
    return median * 1000.0;
}

/* The same with NMT_BENCH_BATCH calls a run. */
static double bench_time_us(bench_fn fn, void *arg, cudaStream_t stream)
{
    return bench_time_us_batch(fn, arg, stream, bench_batch());
}

typedef struct {
    void *src, *dst;
    size_t bytes;
    cudaStream_t stream;
} copy_arg;

static void copy_once(void *p, int i)
{
    copy_arg *a = (copy_arg *)p;
    (void)i;
    CUDA_OK(cudaMemcpyAsync(a->dst, a->src, a->bytes, cudaMemcpyDeviceToDevice, a->stream));
}

/* Device-to-device copy bandwidth in GB/s (read + write bytes) on 256 MB. */
static double bench_copy_bandwidth(cudaStream_t stream)
{
    copy_arg a;
    a.bytes = (size_t)256 << 20;
    a.stream = stream;
    CUDA_OK(cudaMalloc(&a.src, a.bytes));
    CUDA_OK(cudaMalloc(&a.dst, a.bytes));
    CUDA_OK(cudaMemset(a.src, 1, a.bytes));
    CUDA_OK(cudaDeviceSynchronize());
    double us = bench_time_us(copy_once, &a, stream);
    CUDA_OK(cudaFree(a.src));
    CUDA_OK(cudaFree(a.dst));
    double gbps = 2.0 * a.bytes / (us * 1e3);
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    printf("{\"bench\":\"copy\",\"device\":\"%s\",\"bytes\":%zu,\"median_us\":%.3f,"
           "\"gbps\":%.1f}\n", prop.name, 2 * a.bytes, us, gbps);
    fprintf(stderr, "device %s: device-to-device copy %.1f GB/s (read + write)\n", prop.name,
            gbps);
    fflush(stdout);
    return gbps;
}

/* How many copies of an input of `bytes` make the rotation larger than 2x
 * L2 (small inputs: thousands; allocate them as one block). */
static int bench_copies(size_t bytes)
{
    size_t n = (BENCH_L2_FLUSH_BYTES + bytes - 1) / (bytes ? bytes : 1);
    return n < 1 ? 1 : (n > 65536 ? 65536 : (int)n);
}

#endif
