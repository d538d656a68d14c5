/* bench_lsh.cu: LSH vocabulary shrinking (kernels/lsh.h; Shi, Xu & Knight,
 * "Fast Locality Sensitive Hashing for Beam Search on GPU", seed 003)
 * against the full output layer, one decoder step. Four parts, one run:
 *
 *  layer    per (H, V, rows): the full layer, nmt_cuda_linear (cuBLAS fp32,
 *           with bias) + nmt_cuda_softmax_topk, against the LSH step with one
 *           list shared by all rows (rows_per_group = rows): codes + hits
 *           (warp lookup) + candidates + logits (AUTO) +
 *           nmt_cuda_softmax_topk_candidates, split as in the paper's Table 4
 *           (hash, lookup, compact, logits = "construct E_LSH" and "matrix
 *           multiply" fused, softmax = "normalization"). Random Gaussian
 *           W_out gives no realistic candidate counts, so the step also runs
 *           on fixed lists of c = f * V words (0 .. 4 + T - 1 always in, the
 *           rest random): the real index's codes + hits + candidates (into a
 *           scratch list) + logits + softmax over the fixed list. The V where
 *           full / LSH crosses 1 at a given f is the break-even (summarize.py).
 *  lookup   warp-cooperative (Fig. 4b) vs naive (Fig. 4a) bucket walks on the
 *           same codes, for {K,u,W} with big buckets (8,2,500) to small ones
 *           (16,3,500); and, from the same codes to one list for all rows, the
 *           two steps (hits + candidates) vs the direct builder (lsh_direct.cu).
 *  sharing  rows 60 (12 sentences x beam 5) and 768 (64 x 12): per-row lists
 *           of f * V words (bench_lsh_data.h, make_sharing_lists: the always
 *           words, a pool shared by the sentence's rows, own random words),
 *           scored as the union over the batch (GEMM), per sentence (GEMM,
 *           SDDMM and WARP) or per row (SDDMM and GEMM).
 *  floor    every LSH logits time is printed with its floor: the gathered
 *           candidate rows (sum over groups of count x H x 4 bytes) / the
 *           device-to-device copy bandwidth measured here; the full layer's is
 *           V x H x 4 bytes / the same.
 *
 * Beam: 12 for rows that are multiples of 12 and not of 5 (12, 768), else 5;
 * k = 2 * beam (the beam step's top 2B). max_count = V everywhere (the
 * engine does not bring counts back to the host) unless NMT_BENCH_LSH_TIGHT=1
 * (the exact bound, fixed lists only). The shared list gets no SDDMM (every
 * row would read the whole union). Parts lookup and sharing run at the first
 * H only, for vocabularies that are also in NMT_BENCH_LSH_VOCABS.
 * Timing: bench_util.h (events around batches, medians of NMT_BENCH_REPEATS
 * runs, inputs rotated over copies bigger than 2x L2: W_out with b_out, the
 * index, and x up to 2048 copies), the batch shortened so a run lasts about
 * 0.5 ms. Stages are timed alone, except compact = (codes + hits +
 * candidates) - codes - hits; hits alone leaves the hit counts growing (the
 * same work), and they are zeroed afterwards. JSON lines on stdout
 * ("bench":"lsh", "part": index, layer, lookup or sharing), tables on stderr.
 * Env (comma lists): NMT_BENCH_LSH_DIMS (512,384), _VOCABS
 * (2000,5000,10000,20000,35000,50000), _ROWS (5,12,60,320,768), _FRACS
 * (0.05,0.1,0.2,0.4), _PARAMS (K,u,W: 8,3,500), _THRESHOLD (4), _TOP (T: 100),
 * _LOOKUP_PARAMS (triples: 8,2,500,8,3,500,16,3,500), _LOOKUP_VOCABS (50000),
 * _LOOKUP_ROWS (12,768), _SHARE_VOCABS (10000,50000), _SHARE_ROWS (60,768),
 * _SHARE_FRACS (0.02,0.05), _SHARE_OVERLAP (0.8), _TIGHT (0); NMT_BENCH_REPEATS.
 *
 * Variants by name (bench_lsh_variant.h): --variant NAME[,NAME..] times each
 * named logits, lookup or list-building variant against its CPU twin on the
 * shapes of the options (defaults: --dims 512 --vocabs 30000 --rows 320
 * --group 5 (rows a list; 0: one list for all rows) --count V/10 --first 0;
 * --params K,u,W, --threshold and --top default to the env above); --list
 * names them. Exits 1 when a check fails.
 *   bench_lsh --variant gemm,warp --rows 320 --group 5 --vocabs 30000 --count 150
 *   bench_lsh --variant two-step,direct --rows 12,768 --group 0 --vocabs 50000 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lsh_data.h"
#include "bench_lsh_step.h"
#include "bench_lsh_variant.h"
#include "bench_util.h"
#include "lsh.h"
#include "lsh_index.h"
#include "softmax_topk.h"

static void emit_case(const char *mode, const weights *wt, int rows, int k)
{
    printf("{\"bench\":\"lsh\",\"part\":\"layer\",\"mode\":\"%s\",\"H\":%d,\"V\":%d,\"rows\":%d,"
           "\"beam\":%d,\"k\":%d,", mode, wt->dim, wt->vocab, rows, beam_for(rows), k);
}

/* ---- part 1: the output layer, full vs LSH ------------------------------- */

static void layer_case(const bench *B, const weights *wt, const dev_index *d, int rows,
                       const double *fracs, int n_fracs)
{
    const int V = wt->vocab, H = wt->dim;
    step_arg a = {};
    step_alloc(B, wt, &a, rows, 1);
    states_make(B, &a, rows, beam_for(rows), 1000u + (uint64_t)rows);
    codes_make(&a, d);
    a.rows_per_group = rows;
    a.n_always = 4 + B->top < V ? 4 + B->top : V;
    a.cand = a.hash_cand;
    a.count = a.hash_count;

    double full = time_us(run_full, &a, B->stream);
    double linear = time_us(run_linear, &a, B->stream);
    double hash = time_us(run_codes, &a, B->stream);
    double hashing = time_us(run_hashing, &a, B->stream);
    double lsh = time_us(run_lsh, &a, B->stream);
    /* The hashed list's length over several x copies (untimed). */
    int samples = a.x_copies < COUNT_SAMPLES ? a.x_copies : COUNT_SAMPLES;
    double count = 0.0;
    for (int s = 0; s < samples; s++) {
        int32_t c = 0;
        run_hashing(&a, s);
        CUDA_OK(cudaMemcpyAsync(&c, a.hash_count, sizeof c, cudaMemcpyDeviceToHost,
                                B->stream));
        CUDA_OK(cudaStreamSynchronize(B->stream));
        count += c;
    }
    count /= samples;
    double logits = time_us(run_logits, &a, B->stream);
    double softmax = time_us(run_softmax, &a, B->stream);
    double lookup = time_us(run_hits, &a, B->stream);
    CUDA_OK(cudaMemsetAsync(a.hits, 0, (size_t)rows * V * sizeof(int32_t), B->stream));
    double compact = fmax(0.0, hashing - hash - lookup);

    emit_case("full", wt, rows, a.k);
    printf("\"median_us\":%.3f,\"linear_us\":%.3f,\"softmax_us\":%.3f,\"floor_us\":%.3f,"
           "\"copy_gbps\":%.1f}\n", full, linear, fmax(0.0, full - linear),
           floor_us(B, V, H), B->copy_gbps);
    emit_case("index", wt, rows, a.k);
    printf("\"K\":%d,\"u\":%d,\"W\":%d,\"threshold\":%d,\"n_always\":%d,\"count\":%.1f,"
           "\"fraction\":%.4f,\"median_us\":%.3f,\"hash_us\":%.3f,\"lookup_us\":%.3f,"
           "\"compact_us\":%.3f,\"overhead_us\":%.3f,\"logits_us\":%.3f,\"softmax_us\":%.3f,"
           "\"full_us\":%.3f,\"speedup\":%.3f,\"floor_us\":%.3f,\"max_count\":%d}\n",
           B->cfg.k, B->cfg.u, B->cfg.w, a.threshold, a.n_always, count, count / V, lsh, hash,
           lookup, compact, hashing, logits, softmax, full, full / lsh, floor_us(B, count, H),
           a.max_count);
    fprintf(stderr, "%4d %6d %4d | %8.1f %8.1f | %5.1f%% %8.1f %5.2fx %6.1f %6.1f %6.1f %7.1f %6.1f |",
            H, V, rows, full, linear, 100.0 * count / V, lsh, full / lsh, hash, lookup, compact,
            logits, softmax);

    /* Fixed fractions: the same step reading a list of c random words. */
    int32_t *list = (int32_t *)malloc(V * sizeof(int32_t));
    int32_t *d_cand = (int32_t *)dev_alloc(V * sizeof(int32_t));
    int32_t *d_count = (int32_t *)dev_alloc(sizeof(int32_t));
    a.cand = d_cand;
    a.count = d_count;
    for (int fi = 0; fi < n_fracs; fi++) {
        int32_t c = (int32_t)lround(fracs[fi] * V);
        c = c < 4 ? 4 : (c > V ? V : c);
        int32_t n_always = a.n_always < c ? a.n_always : c;
        c = make_fixed_list(V, c, n_always, 77u + (uint64_t)fi, list);
        CUDA_OK(cudaMemcpy(d_cand, list, c * sizeof(int32_t), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(d_count, &c, sizeof c, cudaMemcpyHostToDevice));
        a.max_count = B->tight ? c : V;
        double total = time_us(run_lsh, &a, B->stream);
        double f_logits = time_us(run_logits, &a, B->stream);
        double f_softmax = time_us(run_softmax, &a, B->stream);
        emit_case("fraction", wt, rows, a.k);
        printf("\"f\":%.4f,\"count\":%d,\"n_always\":%d,\"median_us\":%.3f,\"overhead_us\":%.3f,"
               "\"logits_us\":%.3f,\"softmax_us\":%.3f,\"full_us\":%.3f,\"speedup\":%.3f,"
               "\"floor_us\":%.3f,\"max_count\":%d}\n",
               fracs[fi], c, n_always, total, hashing, f_logits, f_softmax, full, full / total,
               floor_us(B, c, H), a.max_count);
        fprintf(stderr, " %7.1f %5.2fx", total, full / total);
    }
    fprintf(stderr, "\n");
    fflush(stdout);
    free(list);
    CUDA_OK(cudaFree(d_cand));
    CUDA_OK(cudaFree(d_count));
    step_free(&a);
}

/* ---- part 2: warp-cooperative vs naive lookup ----------------------------- */

static void lookup_part(const bench *B, const weights *wt, const nmt_lsh_index *main_index,
                        const dev_index *main_d, const int *params, int n_params,
                        const int *rows_list, int n_rows)
{
    for (int p = 0; p + 2 < n_params; p += 3) {
        nmt_lsh_index_config cfg = B->cfg;
        cfg.k = params[p];
        cfg.u = params[p + 1];
        cfg.w = params[p + 2];
        dev_index own = {};
        nmt_lsh_index *built = NULL;
        const nmt_lsh_index *index = main_index;
        const dev_index *d = main_d;
        if (cfg.k != B->cfg.k || cfg.u != B->cfg.u || cfg.w != B->cfg.w) {
            built = index_make(wt, &cfg, &own);
            index = built;
            d = &own;
        }
        bucket_stats s = index_bucket_stats(nmt_lsh_index_tables(index));
        for (int ri = 0; ri < n_rows; ri++) {
            int rows = rows_list[ri];
            step_arg a = {};
            step_alloc(B, wt, &a, rows, 1);
            states_make(B, &a, rows, beam_for(rows), 2000u + (uint64_t)rows);
            codes_make(&a, d);
            size_t hit_bytes = (size_t)rows * wt->vocab * sizeof(int32_t);
            a.lookup = NMT_LSH_LOOKUP_WARP;
            double warp = time_us(run_hits, &a, B->stream);
            CUDA_OK(cudaMemsetAsync(a.hits, 0, hit_bytes, B->stream));
            a.lookup = NMT_LSH_LOOKUP_NAIVE;
            double naive = time_us(run_hits, &a, B->stream);
            CUDA_OK(cudaMemsetAsync(a.hits, 0, hit_bytes, B->stream));
            /* Codes to one list for all rows: the two steps (the faster
             * lookup) against the direct builder. */
            a.rows_per_group = rows;
            a.n_always = 4 + B->top < wt->vocab ? 4 + B->top : wt->vocab;
            a.lookup = naive < warp ? NMT_LSH_LOOKUP_NAIVE : NMT_LSH_LOOKUP_WARP;
            double two_step = time_us(run_lists_two_step, &a, B->stream);
            double direct = time_us(run_lists_direct, &a, B->stream);
            printf("{\"bench\":\"lsh\",\"part\":\"lookup\",\"H\":%d,\"V\":%d,\"rows\":%d,"
                   "\"K\":%d,\"u\":%d,\"W\":%d,\"mean_bucket\":%.2f,\"lookup_bucket\":%.2f,"
                   "\"max_bucket\":%d,\"warp_us\":%.3f,\"naive_us\":%.3f,"
                   "\"naive_over_warp\":%.3f,\"two_step_us\":%.3f,\"direct_us\":%.3f}\n",
                   wt->dim, wt->vocab, rows, cfg.k, cfg.u, cfg.w, s.mean, s.lookup_mean, s.max,
                   warp, naive, naive / warp, two_step, direct);
            fflush(stdout);
            fprintf(stderr, "lookup {%2d,%d,%d} V %6d rows %4d (bucket %.1f, a lookup's %.1f, "
                    "max %d): warp %8.1f us, naive %8.1f us, naive/warp %.2fx; lists: two "
                    "steps %8.1f us, direct %8.1f us\n", cfg.k, cfg.u, cfg.w, wt->vocab, rows,
                    s.mean, s.lookup_mean, s.max, warp, naive, naive / warp, two_step, direct);
            step_free(&a);
        }
        if (built) {
            dev_index_free(&own);
            nmt_lsh_index_free(built);
        }
    }
}

/* ---- part 3: one list for the batch, per sentence, per row --------------- */

static void sharing_case(const bench *B, const weights *wt, int rows, double f, double overlap)
{
    const int V = wt->vocab, H = wt->dim, beam = beam_for(rows);
    int32_t per_row = (int32_t)lround(f * V);
    per_row = per_row < 4 ? 4 : (per_row > V ? V : per_row);
    int32_t n_always = 4 + B->top < per_row ? 4 + B->top : per_row;
    sharing_lists s;
    make_sharing_lists(rows, beam, V, per_row, n_always, overlap, 99u + (uint64_t)rows, &s);

    step_arg a = {};
    step_alloc(B, wt, &a, rows, 1);
    states_make(B, &a, rows, beam, 3000u + (uint64_t)rows);
    double full = time_us(run_full, &a, B->stream);

    struct {
        const char *name;
        int rows_per_group, groups, sddmm;
        const int32_t *cand, *count;
    } g[3] = {{"shared", rows, 1, 0, s.shared_cand, &s.shared_count},
              {"sentence", beam, s.sentences, 1, s.sent_cand, s.sent_count},
              {"row", 1, rows, 1, s.row_cand, s.row_count}};
    for (int gi = 0; gi < 3; gi++) {
        int64_t sum = 0;
        int32_t max_c = 0;
        for (int j = 0; j < g[gi].groups; j++) {
            sum += g[gi].count[j];
            max_c = g[gi].count[j] > max_c ? g[gi].count[j] : max_c;
        }
        int32_t *d_cand = (int32_t *)dev_alloc((size_t)g[gi].groups * V * sizeof(int32_t));
        int32_t *d_count = (int32_t *)dev_alloc(g[gi].groups * sizeof(int32_t));
        CUDA_OK(cudaMemcpy2D(d_cand, V * sizeof(int32_t), g[gi].cand, V * sizeof(int32_t),
                             max_c * sizeof(int32_t), g[gi].groups, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(d_count, g[gi].count, g[gi].groups * sizeof(int32_t),
                           cudaMemcpyHostToDevice));
        a.rows_per_group = g[gi].rows_per_group;
        a.cand = d_cand;
        a.count = d_count;
        a.max_count = B->tight ? max_c : V;
        a.kernel = NMT_LSH_LOGITS_GEMM;
        double gemm = time_us(run_logits, &a, B->stream), sddmm = -1.0, warp = -1.0;
        if (g[gi].sddmm) {
            a.kernel = NMT_LSH_LOGITS_SDDMM;
            sddmm = time_us(run_logits, &a, B->stream);
        }
        if (g[gi].rows_per_group > 1 && g[gi].rows_per_group <= 16) { /* a sentence's beam */
            a.kernel = NMT_LSH_LOGITS_WARP;
            warp = time_us(run_logits, &a, B->stream);
        }
        double softmax = time_us(run_softmax, &a, B->stream);
        double best = sddmm >= 0.0 && sddmm < gemm ? sddmm : gemm;
        best = warp >= 0.0 && warp < best ? warp : best;
        char sddmm_text[32], warp_text[32];
        snprintf(sddmm_text, sizeof sddmm_text, sddmm >= 0.0 ? "%.3f" : "null", sddmm);
        snprintf(warp_text, sizeof warp_text, warp >= 0.0 ? "%.3f" : "null", warp);
        printf("{\"bench\":\"lsh\",\"part\":\"sharing\",\"H\":%d,\"V\":%d,\"rows\":%d,"
               "\"beam\":%d,\"sentences\":%d,\"f\":%.4f,\"per_row\":%d,\"overlap\":%.2f,"
               "\"grouping\":\"%s\",\"rows_per_group\":%d,\"groups\":%d,\"mean_count\":%.1f,"
               "\"max_count\":%d,\"sum_count\":%lld,\"gemm_us\":%.3f,\"sddmm_us\":%s,"
               "\"warp_us\":%s,\"softmax_us\":%.3f,\"median_us\":%.3f,\"floor_us\":%.3f,\"full_us\":%.3f}\n",
               H, V, rows, beam, s.sentences, f, per_row, overlap, g[gi].name,
               g[gi].rows_per_group, g[gi].groups, (double)sum / g[gi].groups, max_c,
               (long long)sum, gemm, sddmm_text, warp_text, softmax, best + softmax,
               floor_us(B, (double)sum, H), full);
        fflush(stdout);
        fprintf(stderr, "sharing V %6d rows %4d f %.3f %-8s: %4d lists of %8.1f words | GEMM %8.1f"
                " SDDMM %8.1f WARP %8.1f softmax %7.1f | total %8.1f (floor %6.1f) vs full %8.1f"
                " us\n", V, rows, f, g[gi].name, g[gi].groups, (double)sum / g[gi].groups, gemm,
                sddmm, warp, softmax, best + softmax, floor_us(B, (double)sum, H), full);
        CUDA_OK(cudaFree(d_cand));
        CUDA_OK(cudaFree(d_count));
    }
    step_free(&a);
    sharing_lists_free(&s);
}

static const char *kUsage =
    "usage: bench_lsh                       the four parts (env NMT_BENCH_LSH_*, see the top)\n"
    "       bench_lsh --variant NAME[,NAME..] [--dims H,..] [--vocabs V,..] [--rows N,..]\n"
    "                 [--group G,..(0: all rows)] [--count C] [--first F] [--params K,u,W]\n"
    "                 [--threshold T] [--top T]\n"
    "       bench_lsh --list\n";

int main(int argc, char **argv)
{
    static const char *const known[] = {"--variant=", "--dims=",  "--vocabs=",    "--rows=",
                                        "--group=",   "--count=", "--first=",     "--params=",
                                        "--threshold=", "--top=", "--list",       NULL};
    bench_options_check(argc, argv, known, kUsage);
    if (bench_flag(argc, argv, "--list")) {
        for (int i = 0; i < N_LSH_VARIANTS; i++)
            printf("%-12s %s\n", kLshVariants[i].name, kLshVariants[i].what);
        return 0;
    }
    const char *variants = bench_option(argc, argv, "--variant");
    if (variants) { /* every name first: a typo fails before any timing */
        const char *p = variants;
        char name[32];
        while (bench_next_name(&p, name, sizeof name))
            if (!lsh_variant_find(name)) {
                fprintf(stderr, "bench_lsh: no variant \"%s\" (--list)\n", name);
                return 2;
            }
    }
    static const int d_dims[] = {512, 384}, d_vocabs[] = {2000, 5000, 10000, 20000, 35000, 50000};
    static const int d_rows[] = {5, 12, 60, 320, 768}, d_params[] = {8, 3, 500};
    static const int d_lookup_params[] = {8, 2, 500, 8, 3, 500, 16, 3, 500};
    static const int d_lookup_vocabs[] = {50000}, d_lookup_rows[] = {12, 768};
    static const int d_share_vocabs[] = {10000, 50000}, d_share_rows[] = {60, 768};
    static const double d_fracs[] = {0.05, 0.1, 0.2, 0.4}, d_share_fracs[] = {0.02, 0.05};
    int dims[MAX_LIST], vocabs[MAX_LIST], rows[MAX_LIST], params[3];
    int lookup_params[3 * MAX_LIST], lookup_vocabs[MAX_LIST], lookup_rows[MAX_LIST];
    int share_vocabs[MAX_LIST], share_rows[MAX_LIST];
    double fracs[MAX_LIST], share_fracs[MAX_LIST];
    int n_dims = parse_ints("NMT_BENCH_LSH_DIMS", d_dims, 2, dims, MAX_LIST);
    int n_vocabs = parse_ints("NMT_BENCH_LSH_VOCABS", d_vocabs, 6, vocabs, MAX_LIST);
    int n_rows = parse_ints("NMT_BENCH_LSH_ROWS", d_rows, 5, rows, MAX_LIST);
    int n_fracs = parse_doubles("NMT_BENCH_LSH_FRACS", d_fracs, 4, fracs, MAX_LIST);
    int n_params = parse_ints_text(bench_option(argc, argv, "--params"), NULL, 0, params, 3);
    if (n_params == 0)
        n_params = parse_ints("NMT_BENCH_LSH_PARAMS", d_params, 3, params, 3);
    int n_lookup_params = parse_ints("NMT_BENCH_LSH_LOOKUP_PARAMS", d_lookup_params, 9,
                                     lookup_params, 3 * MAX_LIST);
    int n_lookup_vocabs = parse_ints("NMT_BENCH_LSH_LOOKUP_VOCABS", d_lookup_vocabs, 1,
                                     lookup_vocabs, MAX_LIST);
    int n_lookup_rows = parse_ints("NMT_BENCH_LSH_LOOKUP_ROWS", d_lookup_rows, 2, lookup_rows,
                                   MAX_LIST);
    int n_share_vocabs = parse_ints("NMT_BENCH_LSH_SHARE_VOCABS", d_share_vocabs, 2,
                                    share_vocabs, MAX_LIST);
    int n_share_rows = parse_ints("NMT_BENCH_LSH_SHARE_ROWS", d_share_rows, 2, share_rows,
                                  MAX_LIST);
    int n_share_fracs = parse_doubles("NMT_BENCH_LSH_SHARE_FRACS", d_share_fracs, 2, share_fracs,
                                      MAX_LIST);
    const char *overlap_env = getenv("NMT_BENCH_LSH_SHARE_OVERLAP");
    double overlap = overlap_env && *overlap_env ? atof(overlap_env) : 0.8;
    if (n_params != 3) {
        fprintf(stderr, "bench_lsh: --params or NMT_BENCH_LSH_PARAMS wants K,u,W\n");
        return 2;
    }
    for (int i = 0; i < n_lookup_vocabs; i++)
        if (!in_list(lookup_vocabs[i], vocabs, n_vocabs))
            fprintf(stderr, "bench_lsh: lookup vocabulary %d is not in NMT_BENCH_LSH_VOCABS: "
                    "skipped\n", lookup_vocabs[i]);
    for (int i = 0; i < n_share_vocabs; i++)
        if (!in_list(share_vocabs[i], vocabs, n_vocabs))
            fprintf(stderr, "bench_lsh: sharing vocabulary %d is not in NMT_BENCH_LSH_VOCABS: "
                    "skipped\n", share_vocabs[i]);

    bench B = {};
    B.cfg.k = params[0];
    B.cfg.u = params[1];
    B.cfg.w = params[2];
    B.cfg.seed = 20240531u;
    B.threshold = bench_env_int("NMT_BENCH_LSH_THRESHOLD", 4);
    if (bench_option(argc, argv, "--threshold"))
        B.threshold = atoi(bench_option(argc, argv, "--threshold"));
    B.top = bench_env_int("NMT_BENCH_LSH_TOP", 100);
    if (bench_option(argc, argv, "--top"))
        B.top = atoi(bench_option(argc, argv, "--top"));
    B.tight = bench_env_int("NMT_BENCH_LSH_TIGHT", 0);
    NMT_OK(nmt_cuda_ctx_create(0, &B.ctx, &err));
    B.stream = (cudaStream_t)nmt_cuda_ctx_stream(B.ctx);
    B.copy_gbps = bench_copy_bandwidth(B.stream);
    CUDA_OK(cudaMalloc(&B.excluded, sizeof k_excluded));
    CUDA_OK(cudaMemcpy(B.excluded, k_excluded, sizeof k_excluded, cudaMemcpyHostToDevice));

    if (variants) {
        static const int v_dims[] = {512}, v_vocabs[] = {30000}, v_rows[] = {320}, v_group[] = {5};
        int groups[MAX_LIST];
        n_dims = parse_ints_text(bench_option(argc, argv, "--dims"), v_dims, 1, dims, MAX_LIST);
        n_vocabs = parse_ints_text(bench_option(argc, argv, "--vocabs"), v_vocabs, 1, vocabs,
                                   MAX_LIST);
        n_rows = parse_ints_text(bench_option(argc, argv, "--rows"), v_rows, 1, rows, MAX_LIST);
        int n_groups = parse_ints_text(bench_option(argc, argv, "--group"), v_group, 1, groups,
                                       MAX_LIST);
        const char *count = bench_option(argc, argv, "--count");
        const char *first = bench_option(argc, argv, "--first");
        variant_mode(&B, variants, dims, n_dims, vocabs, n_vocabs, rows, n_rows, groups, n_groups,
                     count ? atoi(count) : 0, first ? atoi(first) : 0);
        CUDA_OK(cudaFree(B.excluded));
        nmt_cuda_ctx_free(B.ctx);
        if (g_lsh_failures)
            fprintf(stderr, "bench_lsh: %d case(s) differ from the CPU\n", g_lsh_failures);
        return g_lsh_failures ? 1 : 0;
    }

    for (int di = 0; di < n_dims; di++) {
        for (int vi = 0; vi < n_vocabs; vi++) {
            weights wt;
            dev_index d = {};
            weights_make(dims[di], vocabs[vi], B.stream, &wt);
            nmt_lsh_index *index = index_make(&wt, &B.cfg, &d);
            fprintf(stderr, "%4s %6s %4s | %8s %8s | %6s %8s %6s %6s %6s %6s %7s %6s | fixed "
                    "fractions:", "H", "V", "rows", "full us", "linear", "cand", "LSH us",
                    "vs", "hash", "lookup", "compct", "logits", "softmx");
            for (int fi = 0; fi < n_fracs; fi++)
                fprintf(stderr, " %5.3f: us, vs full", fracs[fi]);
            fprintf(stderr, "\n");
            for (int ri = 0; ri < n_rows; ri++)
                layer_case(&B, &wt, &d, rows[ri], fracs, n_fracs);
            /* Parts 2 and 3 at the first H only. */
            if (di == 0 && in_list(vocabs[vi], lookup_vocabs, n_lookup_vocabs))
                lookup_part(&B, &wt, index, &d, lookup_params, n_lookup_params, lookup_rows,
                            n_lookup_rows);
            if (di == 0 && in_list(vocabs[vi], share_vocabs, n_share_vocabs))
                for (int ri = 0; ri < n_share_rows; ri++)
                    for (int fi = 0; fi < n_share_fracs; fi++)
                        sharing_case(&B, &wt, share_rows[ri], share_fracs[fi], overlap);
            dev_index_free(&d);
            nmt_lsh_index_free(index);
            weights_free(&wt);
        }
    }
    CUDA_OK(cudaFree(B.excluded));
    nmt_cuda_ctx_free(B.ctx);
    return 0;
}
