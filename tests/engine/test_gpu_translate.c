/* test_gpu_translate.c: the CUDA engine against the CPU engine through the
 * public API. On the test model (NMT_TEST_MODEL), random lines of 1..20
 * source words (known words in several casings, unknown words, punctuation)
 * are translated with --device cpu and --device cuda at several batch sizes,
 * beams and n-best sizes. Every hypothesis text must be identical on >= 99%
 * of the lines (98% with n-best lists of more than 3) and the scores within
 * 1e-3; differing lines are printed with
 * both scores. The same with LSH (every sharing mode) and TOP shrinking,
 * whose CUDA stats (recall, candidates, output-layer time) are checked for
 * plausibility. tf32x2 against the CPU alike, but where a line runs to the
 * maximum length (a loop) only its texts must agree. Exit 77 without a GPU. NMT_TEST_SMALL=1 (under
 * compute-sanitizer, which is ~100x slower): 12 lines, three configurations. */
#include "nmt.h"
#include "cuda_ctx.h"
#include "test_gpu_model.h"
#include "test_results.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LINES 100
#define N_LINES_SMALL 12
static int n_lines = N_LINES;

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "sch\xc3\xb6n", "Heute",
    "wir", "ich", "du", "sie", "es", "mit", "auf", "gut", "Buch", "liest", "m\xc3\xbc" "de",
    "\xc3\x84pfel", "?", "Zebra", "xylophon", "kind.", "hund,", "\"", "!"};

static void make_lines(char lines[N_LINES][512])
{
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        int len = test_rand_int(1, 21);
        test_random_words(lines[i], words, n_words, len);
    }
}

static nmt_options make_options(nmt_device device, int batch, int beam, int n_best,
                                const nmt_shrink_options *shrink)
{
    nmt_options o;
    nmt_options_init(&o);
    o.precision = NMT_PRECISION_FP32; /* the CPU's arithmetic (the default, auto, is fp16 for
                                         the fp16 test model); the 16-bit tests ask for theirs */
    o.warmup = 0; /* slow under compute-sanitizer; compare_launch_modes runs it */
    o.device = device;
    o.batch_size = batch;
    o.beam_size = beam;
    o.n_best = n_best;
    if (shrink) {
        o.shrink = *shrink;
        o.collect_stats = device == NMT_DEVICE_CUDA ? 2 : 0; /* exercises the recall path */
    }
    return o;
}

static int translate_with(const nmt_model *model, const nmt_options *options,
                          const char *const *lines, nmt_result *results)
{
    const nmt_options o = *options;
    const nmt_device device = o.device;
    const int batch = o.batch_size;
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, &o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d): %s", (int)device, err.message);
    if (st != NMT_STATUS_OK)
        return 0;
    CHECK(nmt_translator_device(t) == device, "runs on device %d, asked %d",
          (int)nmt_translator_device(t), (int)device);
    st = nmt_translate_batch(t, lines, n_lines, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate (device %d, batch %d): %s", (int)device, batch,
          err.message);
    if (st == NMT_STATUS_OK && o.collect_stats == 1 && device == NMT_DEVICE_CUDA) {
        nmt_stats stats;
        CHECK(nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK, "stats: %s", err.message);
        /* Graphs on: some runs must be graphs; off: none, all eager. */
        CHECK(o.cuda_graphs ? stats.graph_runs > 0
                            : stats.graph_runs == 0 && stats.eager_runs >= stats.steps,
              "graphs %d: %lld graph runs, %lld eager", o.cuda_graphs,
              (long long)stats.graph_runs, (long long)stats.eager_runs);
        fprintf(stderr, "graphs %d batch %d: %lld graph runs, %lld eager\n", o.cuda_graphs,
                batch, (long long)stats.graph_runs, (long long)stats.eager_runs);
    }
    if (st == NMT_STATUS_OK && o.collect_stats == 2) {
        /* The counters must be plausible: every live row-step counted once. */
        nmt_stats stats;
        CHECK(nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK, "stats: %s", err.message);
        CHECK(stats.sentences == n_lines && stats.steps > 0 && stats.output_layer_ms > 0.0,
              "stats: %lld sentences, %lld steps, %g ms", (long long)stats.sentences,
              (long long)stats.steps, stats.output_layer_ms);
        /* n_always = min(4 + T, V) words at least; the test model's V may be small. */
        CHECK(stats.row_steps >= n_lines && stats.recall_hits <= stats.row_steps &&
                  stats.candidate_words >= 4 * stats.row_steps,
              "stats: %lld row-steps, %lld recalled, %lld candidate words",
              (long long)stats.row_steps, (long long)stats.recall_hits,
              (long long)stats.candidate_words);
        fprintf(stderr, "stats: %lld row-steps, recall %.4f, %.1f candidates a row\n",
                (long long)stats.row_steps, (double)stats.recall_hits / (double)stats.row_steps,
                (double)stats.candidate_words / (double)stats.row_steps);
    }
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

/* Translates the lines with options a and with options b (on `model`) and
 * returns how many lines `same` finds different, each printed with both
 * runs' hypotheses under `label`; -1 when a translation failed (already
 * reported). */
static int count_differing(const nmt_model *model, const nmt_options *a, const nmt_options *b,
                           test_line_compare same, const char *label, const char *const *lines)
{
    static nmt_result ra[N_LINES], rb[N_LINES];
    int differing = -1;
    if (translate_with(model, a, lines, ra) && translate_with(model, b, lines, rb))
        differing = test_count_differing(ra, rb, n_lines, same, label, lines);
    for (int i = 0; i < n_lines; i++) {
        nmt_result_clear(&ra[i]);
        nmt_result_clear(&rb[i]);
    }
    return differing;
}

/* The CUDA engine's launch modes must not change a result: CUDA graphs
 * (replayed steps and encoder passes) against plain launches, and warm-up
 * on or off, run the same kernels, so every hypothesis is bit-identical.
 * Keys recur within the lines (same lengths, every other step), so graphs
 * are captured and replayed; the stats must say so. */
static void compare_launch_modes(const nmt_model *model, int batch, int beam,
                                 const nmt_shrink_options *shrink, int check_every,
                                 const char *const *lines)
{
    nmt_options plain = make_options(NMT_DEVICE_CUDA, batch, beam, 1, shrink);
    plain.collect_stats = 1; /* counters without timing events (those turn graphs off) */
    plain.check_every = check_every;
    plain.cuda_graphs = 0;
    plain.warmup = 0;
    nmt_options graphs = plain;
    graphs.cuda_graphs = 1;
    graphs.warmup = n_lines == N_LINES; /* not under NMT_TEST_SMALL (sanitizers: ~100x slower) */
    const int differing = count_differing(model, &plain, &graphs, test_identical_line,
                                          "plain (a) vs graphs (b)", lines);
    CHECK(differing == 0, "graphs vs plain launches, batch %d beam %d shrink %d check %d: "
          "%d of %d lines differ", batch, beam, shrink ? (int)shrink->mode : 0, check_every,
          differing, n_lines);
}

/* At batch 1 a step's launches depend on the source length's octave, not on
 * the length (decoder/cuda/beam_search.c, kBucketSentences): once a line of
 * 9 words has been translated a few times (both row buffers' step graphs
 * captured), a line of 10 words (the same octaves of stride and history)
 * must run every step as a graph, the encoder pass of its new length alone
 * eagerly, or nothing eagerly after the warm-up (it captures the encoder
 * of every length up to 64: decoder/cuda/search_warmup.c); and its
 * translation must be the one without graphs. */
static void check_octave_graphs(const nmt_model *model)
{
    const char *const seen = "der die das und ist ein eine Haus katze";
    const char *const fresh = "der die das und ist ein eine Haus katze Hund";
    nmt_options o = make_options(NMT_DEVICE_CUDA, 1, 5, 1, NULL);
    o.collect_stats = 1;
    nmt_options plain = o;
    plain.cuda_graphs = 0;
    o.warmup = n_lines == N_LINES; /* not under NMT_TEST_SMALL (sanitizers: ~100x slower) */
    const long long want_eager = o.warmup ? 0 : 1;
    nmt_translator *t = NULL, *tp = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_result r = {0}, rp = {0};
    nmt_stats before, after;
    const int made = nmt_translator_create(model, &o, &t, &err) == NMT_STATUS_OK &&
                     nmt_translator_create(model, &plain, &tp, &err) == NMT_STATUS_OK;
    CHECK(made, "octave graphs: translator: %s", err.message);
    int ok = made;
    for (int i = 0; ok && i < 6; i++) {
        ok = nmt_translate_batch(t, &seen, 1, &r, &err) == NMT_STATUS_OK;
        nmt_result_clear(&r);
    }
    ok = ok && nmt_translator_stats(t, &before, &err) == NMT_STATUS_OK &&
         nmt_translate_batch(t, &fresh, 1, &r, &err) == NMT_STATUS_OK &&
         nmt_translator_stats(t, &after, &err) == NMT_STATUS_OK &&
         nmt_translate_batch(tp, &fresh, 1, &rp, &err) == NMT_STATUS_OK;
    CHECK(ok, "octave graphs: %s", err.message);
    if (ok) {
        const long long eager = (long long)(after.eager_runs - before.eager_runs);
        const long long graphs = (long long)(after.graph_runs - before.graph_runs);
        CHECK(eager == want_eager && graphs >= 1, "octave graphs: a new length in a seen "
              "octave ran %lld eagerly (expected %lld: its encoder pass %s) and %lld as graphs",
              eager, want_eager, o.warmup ? "warmed" : "eager", graphs);
        CHECK(r.n_hypotheses == 1 && rp.n_hypotheses == 1 &&
                  !strcmp(r.hypotheses[0].text, rp.hypotheses[0].text) &&
                  r.hypotheses[0].score == rp.hypotheses[0].score,
              "octave graphs: the new length's translation differs from plain launches");
        fprintf(stderr, "octave graphs (warm-up %d): new length: %lld eager runs, %lld graph "
                "runs\n", o.warmup, eager, graphs);
    }
    nmt_result_clear(&r);
    nmt_result_clear(&rp);
    nmt_translator_free(t);
    nmt_translator_free(tp);
}

static void compare(const nmt_model *model, int batch, int beam, int n_best,
                    const nmt_shrink_options *shrink, const char *const *lines)
{
    const nmt_options cpu = make_options(NMT_DEVICE_CPU, batch, beam, n_best, shrink);
    const nmt_options gpu = make_options(NMT_DEVICE_CUDA, batch, beam, n_best, shrink);
    const int mode = shrink ? (int)shrink->mode : 0, share = shrink ? (int)shrink->share : 0;
    char label[96];
    snprintf(label, sizeof label, "batch %d beam %d n_best %d shrink %d/%d, cpu (a) vs cuda (b)",
             batch, beam, n_best, mode, share);
    const int differing = count_differing(model, &cpu, &gpu, test_same_line, label, lines);
    if (differing >= 0) {
        /* <= 1% of the lines, and at least one line may differ (near-ties);
         * twice that for wide n-best lists, where a near-tie anywhere in
         * the search changes a list: beam 12, n-best 12 on the random test
         * model gives 1 or 2 of 100 lines by seed (1795441650: 1 with
         * cuBLAS's encoder recurrence, 2 with the fused few-row one, the
         * two a hypothesis pruned at a step where its score tied another's
         * to 1e-5). A wrong kernel differs on most lines. */
        const int allowed = (n_lines + 99) / 100 * (n_best > 3 ? 2 : 1);
        CHECK(differing <= allowed, "batch %d beam %d n_best %d shrink %d/%d: %d of "
              "%d lines differ", batch, beam, n_best, mode, share, differing, n_lines);
        fprintf(stderr, "batch %d beam %d n_best %d shrink %d/%d: %d of %d lines differ\n", batch,
                beam, n_best, mode, share, differing, n_lines);
    }
}

/* The tf32x2 GEMM path (fp16 test model: weights exact in TF32) against the
 * CPU engine, like compare(), at a batch with >= NMT_TF32X2_MIN_ROWS rows a
 * step; and the fp32 test model must be refused with a reason. */
/* precision auto: a file of fp16 weights runs in fp16, one of fp32 weights
 * in fp32, bit for bit what asking for that precision gives, and nmt_stats
 * says which ran. */
static void compare_auto(const nmt_model *model16, const nmt_model *model32,
                         const char *const *lines)
{
    const nmt_model *models[2] = {model16, model32};
    const nmt_precision expect[2] = {NMT_PRECISION_FP16, NMT_PRECISION_FP32};
    for (int m = 0; m < 2; m++) {
        nmt_options a = make_options(NMT_DEVICE_CUDA, 7, 5, 1, NULL);
        a.precision = NMT_PRECISION_AUTO;
        nmt_options b = a;
        b.precision = expect[m];
        nmt_translator *t = NULL;
        nmt_error err = {NMT_STATUS_OK, ""};
        nmt_stats stats;
        memset(&stats, 0, sizeof stats);
        CHECK(nmt_translator_create(models[m], &a, &t, &err) == NMT_STATUS_OK &&
                  nmt_translator_stats(t, &stats, &err) == NMT_STATUS_OK,
              "auto: %s", err.message);
        CHECK(stats.precision == expect[m], "auto on the fp%d file ran precision %lld",
              m ? 32 : 16, (long long)stats.precision);
        nmt_translator_free(t);
        const char *label = m ? "auto vs fp32, fp32 file" : "auto vs fp16, fp16 file";
        const int differing = count_differing(models[m], &a, &b, test_identical_line, label,
                                              lines);
        CHECK(differing == 0, "%s: %d of %d lines differ", label, differing, n_lines);
    }
}

/* The maximum length of the tf32x2 comparison's options, for same_or_loop. */
static float g_loop_len_a;
static int g_loop_len_b;

/* test_same_line, but a line either run takes to the maximum length (a loop
 * of a few words, where rounding differences grow along the sentence: one
 * such line's log-prob drifted 0.016 apart on the same 87 words) needs only
 * the same status and texts. */
static int same_or_loop(const nmt_result *a, const nmt_result *b)
{
    if (test_same_line(a, b))
        return 1;
    if (!test_at_max_length(a, g_loop_len_a, g_loop_len_b) &&
        !test_at_max_length(b, g_loop_len_a, g_loop_len_b))
        return 0;
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int h = 0; h < a->n_hypotheses; h++)
        if (strcmp(a->hypotheses[h].text, b->hypotheses[h].text) != 0)
            return 0;
    return 1;
}

static void compare_tf32x2(const char *const *lines)
{
    nmt_model *model16 = NULL, *model32 = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL_FP16, &model16, &err) != NMT_STATUS_OK ||
        nmt_model_load(NMT_TEST_MODEL, &model32, &err) != NMT_STATUS_OK) {
        CHECK(0, "test models: %s", err.message);
        return;
    }
    /* Beam 8: >= 64 rows also with NMT_TEST_SMALL's 12 lines. */
    nmt_options o = make_options(NMT_DEVICE_CUDA, 37, 8, 1, NULL);
    o.precision = NMT_PRECISION_TF32X2;
    o.batch_invariant = 0; /* tf32x2 is refused under batch invariance */
    nmt_translator *t = NULL;
    CHECK(nmt_translator_create(model32, &o, &t, &err) == NMT_STATUS_ERROR_ARGUMENT &&
              strstr(err.message, "TF32"),
          "tf32x2 on fp32 weights not refused with a reason: %s", err.message);
    nmt_translator_free(t);
    const nmt_options c = make_options(NMT_DEVICE_CPU, 37, 8, 1, NULL);
    g_loop_len_a = o.max_len_a;
    g_loop_len_b = o.max_len_b;
    const int differing = count_differing(model16, &c, &o, same_or_loop,
                                          "tf32x2, cpu (a) vs cuda (b)", lines);
    CHECK(differing >= 0 && differing <= (n_lines + 99) / 100, "tf32x2: %d of %d lines differ",
          differing, n_lines);
    fprintf(stderr, "tf32x2 batch 37 beam 8: %d of %d lines differ\n", differing, n_lines);
    compare_auto(model16, model32, lines);
    nmt_model_free(model16);
    nmt_model_free(model32);
}

/* The 16-bit GEMMs (bf16, fp16) against the CPU engine's fp32: >= 80% (bf16)
 * or 90% (fp16) of the lines give the same best text (16-bit inputs move
 * near-ties, and the test model's distributions are flat: on the shipped
 * model 990 and 999 of 1,000 test lines equal fp32's), and on
 * those the scores stay close (mean |diff| <= 0.05 for bf16, 0.01 for fp16:
 * their inputs keep 8 and 11 bits) but are not all equal to CUDA fp32's,
 * which would mean the 16-bit path never ran. With `shrink` (TOP over 30
 * words) the output layer's 16-bit GEMM runs over its width padded to 32
 * (NMT_CUDA_OUT_ROWS_ALIGN: W_out's zero rows past the model's 32 words are
 * not reached, its real words 30 and 31 are, their logits unread). */
static void compare_half(const nmt_model *model, nmt_precision precision,
                         const nmt_shrink_options *shrink, const char *const *lines)
{
    const char *name = precision == NMT_PRECISION_BF16 ? "bf16" : shrink ? "fp16 top" : "fp16";
    nmt_options cpu = make_options(NMT_DEVICE_CPU, 37, 5, 1, shrink);
    nmt_options f32 = make_options(NMT_DEVICE_CUDA, 37, 5, 1, shrink);
    nmt_options h16 = f32;
    h16.precision = precision;
    nmt_result *a = (nmt_result *)calloc((size_t)n_lines, sizeof *a);
    nmt_result *b = (nmt_result *)calloc((size_t)n_lines, sizeof *b);
    nmt_result *c = (nmt_result *)calloc((size_t)n_lines, sizeof *c);
    CHECK(a && b && c, "out of memory");
    if (a && b && c && translate_with(model, &cpu, lines, a) &&
        translate_with(model, &f32, lines, b) && translate_with(model, &h16, lines, c)) {
        int same = 0, moved = 0;
        double diff_sum = 0.0;
        for (int i = 0; i < n_lines; i++) {
            if (a[i].status != NMT_STATUS_OK || c[i].status != NMT_STATUS_OK) {
                CHECK(a[i].status == c[i].status, "%s line %d: status %d vs %d", name, i,
                      (int)a[i].status, (int)c[i].status);
                continue;
            }
            const nmt_hypothesis *x = &a[i].hypotheses[0], *z = &c[i].hypotheses[0];
            if (b[i].status == NMT_STATUS_OK && b[i].hypotheses[0].score != z->score)
                moved++;
            if (strcmp(x->text, z->text) == 0) {
                same++;
                diff_sum += fabs((double)x->score - z->score);
            }
        }
        const double mean = same > 0 ? diff_sum / same : 0.0;
        const double bound = precision == NMT_PRECISION_BF16 ? 0.05 : 0.01;
        fprintf(stderr, "%s batch 37 beam 5: %d of %d lines as the CPU's, mean |score diff| "
                "%.2e, %d scores differ from cuda fp32's\n", name, same, n_lines, mean, moved);
        /* A share of NMT_TEST_SMALL's 12 lines says little: the bound needs
         * 10 of 12, which at 90% a line fails one run in 9 (seed 1795685973
         * gave 7 of 12 under memcheck). That run is for the sanitizer; the
         * bound holds on the full 100 lines. */
        const int need = precision == NMT_PRECISION_BF16 ? 8 : 9;
        CHECK(n_lines < N_LINES || 10 * same >= need * n_lines,
              "%s: only %d of %d lines as the CPU's", name, same, n_lines);
        CHECK(mean <= bound, "%s: mean |score diff| %.3g > %.3g", name, mean, bound);
        CHECK(moved > 0, "%s: every score equals cuda fp32's (16-bit GEMMs not used?)", name);
    }
    for (int i = 0; i < n_lines; i++) {
        if (a) nmt_result_clear(&a[i]);
        if (b) nmt_result_clear(&b[i]);
        if (c) nmt_result_clear(&c[i]);
    }
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    nmt_model *model = NULL;
    const int opened = test_gpu_model_open(NMT_TEST_MODEL, &model);
    if (opened != 0)
        return opened;
    static char text[N_LINES][512];
    const char *lines[N_LINES];
    make_lines(text);
    for (int i = 0; i < N_LINES; i++)
        lines[i] = text[i];
    /* Shrinking (docs/lsh.md): the CPU twin must pick the same candidates. */
    nmt_options defaults;
    nmt_options_init(&defaults);
    nmt_shrink_options lsh = defaults.shrink;
    lsh.mode = NMT_SHRINK_LSH;
    lsh.k = 8, lsh.u = 2, lsh.w = 64, lsh.top = 100, lsh.threshold = 2;
    nmt_shrink_options top = lsh;
    top.mode = NMT_SHRINK_TOP;
    nmt_shrink_options top30 = top;
    top30.top = 26; /* 4 specials + 26 words: a 30-word output layer */
    const char *small = getenv("NMT_TEST_SMALL");
    if (small && *small == '1') {
        n_lines = N_LINES_SMALL;
        compare(model, 1, 5, 1, NULL, lines);
        compare(model, 7, 3, 2, NULL, lines);
        compare(model, 5, 3, 1, &lsh, lines);
        compare_launch_modes(model, 1, 5, NULL, 1, lines);
        compare_tf32x2(lines);
        compare_half(model, NMT_PRECISION_BF16, NULL, lines);
        compare_half(model, NMT_PRECISION_FP16, &top30, lines);
    } else {
        compare_tf32x2(lines);
        compare_half(model, NMT_PRECISION_BF16, NULL, lines);
        compare_half(model, NMT_PRECISION_FP16, NULL, lines);
        compare_half(model, NMT_PRECISION_FP16, &top30, lines);
        compare_launch_modes(model, 1, 5, NULL, 1, lines);
        compare_launch_modes(model, 7, 5, NULL, 3, lines);
        compare_launch_modes(model, 1, 5, &lsh, 1, lines);
        compare_launch_modes(model, 37, 12, &top, 2, lines);
        check_octave_graphs(model);
        compare(model, 1, 5, 1, NULL, lines);
        compare(model, 7, 3, 2, NULL, lines);
        compare(model, 37, 5, 3, NULL, lines);
        compare(model, 100, 1, 1, NULL, lines);
        compare(model, 37, 12, 12, NULL, lines);
        for (int s = 0; s < 3; s++) {
            lsh.share = (nmt_lsh_share)s;
            compare(model, 7, 5, 1, &lsh, lines);
        }
        lsh.share = NMT_LSH_SHARE_SENTENCE;
        lsh.lists = NMT_LSH_LISTS_DIRECT; /* the lists without a hit matrix */
        compare(model, 7, 5, 1, &lsh, lines);
        lsh.lists = NMT_LSH_LISTS_HITS;
        lsh.share = NMT_LSH_SHARE_BATCH;
        compare(model, 1, 5, 2, &lsh, lines);
        compare(model, 37, 12, 1, &lsh, lines);
        compare(model, 37, 5, 1, &top, lines);
    }
    nmt_model_free(model);
    return test_finish("test_gpu_translate");
}
