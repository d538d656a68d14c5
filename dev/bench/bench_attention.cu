/* bench_attention.cu: nmt_cuda_attention's variants (kernels/attention.h) by
 * name on the decoder's shapes: rows = sentences x beam, every beam row of
 * a sentence reading that sentence's keys and memory, as in a decode step.
 * Medians of NMT_BENCH_REPEATS runs of NMT_BENCH_BATCH calls (bench_util.h);
 * the floor is the bytes read once (each sentence's keys and memory, the
 * queries) and written (contexts) over the copy bandwidth of the same run.
 * JSON lines on stdout, a table on stderr.
 *
 *   bench_attention [--variant block,warp,auto] [--rows 5,320,5120] [--beam 5]
 *                   [--hidden 512] [--src 13] */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "bench_util.h"

typedef struct {
    nmt_attention_variant variant;
    int32_t rows, hidden, src;
    const int32_t *row_sentence, *src_len;
    const float *keys, *memory, *query;
    float *context;
    int32_t *argmax;
    cudaStream_t stream;
} attn_arg;

static void run(void *p, int i)
{
    const attn_arg *a = (const attn_arg *)p;
    nmt_error err;
    (void)i;
    if (nmt_cuda_attention_with(a->variant, a->rows, a->hidden, a->src, a->row_sentence,
                                a->src_len, a->keys, a->memory, a->query, a->hidden, a->context,
                                a->hidden, NULL, NULL, a->argmax, a->stream,
                                &err) != NMT_STATUS_OK) {
        fprintf(stderr, "attention: %s\n", err.message);
        exit(1);
    }
}

static const char *const kUsage =
    "usage: bench_attention [--variant block,warp,auto] [--rows 5,320,5120] [--beam 5]\n"
    "                       [--hidden 512] [--src 13]\n";

int main(int argc, char **argv)
{
    static const char *const known[] = {"--variant=", "--rows=", "--beam=", "--hidden=",
                                        "--src=", "--help", NULL};
    bench_options_check(argc, argv, known, kUsage);
    if (bench_flag(argc, argv, "--help")) {
        fputs(kUsage, stdout);
        return 0;
    }
    const char *variants = bench_option(argc, argv, "--variant");
    variants = variants ? variants : "block,warp,auto";
    static const int default_rows[] = {5, 320, 1280, 5120};
    int rows_list[32];
    const char *rows_text = bench_option(argc, argv, "--rows");
    const int n_rows_list = parse_ints_text(rows_text, default_rows, 4, rows_list, 32);
    const char *o;
    const int beam = (o = bench_option(argc, argv, "--beam")) ? atoi(o) : 5;
    const int hidden = (o = bench_option(argc, argv, "--hidden")) ? atoi(o) : 512;
    const int src = (o = bench_option(argc, argv, "--src")) ? atoi(o) : 13;
    int rows_ok = n_rows_list > 0;
    for (int i = 0; i < n_rows_list; i++)
        rows_ok &= rows_list[i] >= 1;
    if (beam < 1 || hidden < 1 || src < 1 || !rows_ok) {
        fputs(kUsage, stderr);
        return 2;
    }
    int max_rows = 0;
    for (int i = 0; i < n_rows_list; i++)
        max_rows = rows_list[i] > max_rows ? rows_list[i] : max_rows;
    const int max_sent = (max_rows + beam - 1) / beam;

    attn_arg a = {};
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&a.stream, cudaStreamNonBlocking));
    const double copy_gbps = bench_copy_bandwidth(a.stream);
    const size_t kv = (size_t)max_sent * src * hidden;
    float *h = (float *)malloc((kv > (size_t)max_rows * hidden ? kv : (size_t)max_rows * hidden) *
                               sizeof(float));
    int32_t *sent = (int32_t *)malloc(max_rows * sizeof(int32_t));
    int32_t *len = (int32_t *)malloc(max_sent * sizeof(int32_t));
    if (!h || !sent || !len) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    float *d_keys, *d_mem, *d_query, *d_ctx;
    int32_t *d_sent, *d_len, *d_arg;
    CUDA_OK(cudaMalloc(&d_keys, kv * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_mem, kv * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_query, (size_t)max_rows * hidden * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_ctx, (size_t)max_rows * hidden * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_sent, max_rows * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&d_len, max_sent * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&d_arg, max_rows * sizeof(int32_t)));
    srand(7);
    for (size_t i = 0; i < kv; i++)
        h[i] = (float)rand() / RAND_MAX - 0.5f;
    CUDA_OK(cudaMemcpy(d_keys, h, kv * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_mem, h, kv * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_query, h, (size_t)max_rows * hidden * sizeof(float),
                       cudaMemcpyHostToDevice));
    for (int r = 0; r < max_rows; r++)
        sent[r] = r / beam;
    for (int s = 0; s < max_sent; s++)
        len[s] = src;
    CUDA_OK(cudaMemcpy(d_sent, sent, max_rows * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_len, len, max_sent * sizeof(int32_t), cudaMemcpyHostToDevice));
    a.hidden = hidden, a.src = src, a.row_sentence = d_sent, a.src_len = d_len;
    a.keys = d_keys, a.memory = d_mem, a.query = d_query, a.context = d_ctx, a.argmax = d_arg;

    fprintf(stderr, "%-6s %6s %6s %4s | %9s %9s %7s\n", "impl", "rows", "hidden", "src", "us",
            "floor us", "floor/t");
    for (int i = 0; i < n_rows_list; i++) {
        const char *list = variants;
        char name[16];
        while (bench_next_name(&list, name, sizeof name)) {
            a.variant = strcmp(name, "block") == 0  ? NMT_ATTENTION_BLOCK
                        : strcmp(name, "warp") == 0 ? NMT_ATTENTION_WARP
                        : strcmp(name, "auto") == 0 ? NMT_ATTENTION_AUTO
                                                    : (nmt_attention_variant)-1;
            if ((int)a.variant < 0) {
                fprintf(stderr, "unknown variant %s (block, warp, auto)\n%s", name, kUsage);
                return 2;
            }
            a.rows = rows_list[i];
            const int n_sent = (a.rows + beam - 1) / beam;
            const double bytes = (2.0 * n_sent * src * hidden + 2.0 * a.rows * hidden) * 4.0;
            const double floor_us = bytes / (copy_gbps * 1e3);
            const double us = bench_time_us(run, &a, a.stream);
            printf("{\"bench\":\"attention\",\"impl\":\"%s\",\"rows\":%d,\"beam\":%d,"
                   "\"hidden\":%d,\"src\":%d,\"median_us\":%.3f,\"floor_us\":%.3f,"
                   "\"copy_gbps\":%.1f}\n",
                   name, a.rows, beam, hidden, src, us, floor_us, copy_gbps);
            fflush(stdout);
            fprintf(stderr, "%-6s %6d %6d %4d | %9.2f %9.2f %6.0f%%\n", name, a.rows, hidden,
                    src, us, floor_us, 100.0 * floor_us / us);
        }
    }
    CUDA_OK(cudaFree(d_keys)); CUDA_OK(cudaFree(d_mem)); CUDA_OK(cudaFree(d_query));
    CUDA_OK(cudaFree(d_ctx)); CUDA_OK(cudaFree(d_sent)); CUDA_OK(cudaFree(d_len));
    CUDA_OK(cudaFree(d_arg));
    CUDA_OK(cudaStreamDestroy(a.stream));
    free(h); free(sent); free(len);
    return 0;
}
