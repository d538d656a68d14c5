/* test_invariance.c: batch invariance (docs/decoding.md, "Batch invariance").
 * For one model, device, precision and set of search options, every output
 * of a line (status, text, n-best list, scores, token scores, alignment,
 * attention weights and tokens) must have the same bits however the line is
 * batched. Each search kind (kind_options) translates the lines one at a time (batch
 * size 1, the reference), then in many batchings, each compared line by line
 * with test_bitwise_line:
 *  - batch sizes 2, 3, 7 and 64, and batches by source tokens;
 *  - random compositions: the lines shuffled, cut at random points into
 *    calls of nmt_translate_batch with a random batch size, some lines twice
 *    in one call; and the two-step prepare / translate_prepared path;
 *  - a batch split after an out-of-memory error (NMT_TEST_DECODE_OOM, the
 *    backend's test hook; counted as exercised only if a split happened);
 *  - CUDA only: graphs off, warmup off, check_every 4;
 *  - the service: client threads submit the lines at random times to
 *    several workers (CUDA: every device, continuous batching on and off).
 * Three kinds force target tokens (docs/decoding.md): target prefixes with
 * return_alternatives and samples of target prefixes
 * (nmt_translate_batch_prefix, or nmt_translator_prepare_prefix with the
 * lines' keys; a prefix each line but every third, in the service
 * target_prefix) and scoring (nmt_score_batch; in the service target),
 * whose lines' targets include an empty one and one refused for its
 * length.
 * The lines include an empty one and refused ones (bad UTF-8, too many
 * tokens). Also: nmt_options_init and the service default to
 * NMT_PRECISION_AUTO. Random choices come from test_seed (NMT_TEST_SEED replays).
 *
 * Usage: test_invariance [--device cpu|cuda] [--precision fp32|tf32x2|bf16|fp16|auto|int8]
 *                        [--cpu-kernels auto|fast|blas|reference]
 *                        [--cpu-isa auto|generic|avx2|avx512] [--threads N]
 *                        [--fused-output on|off]
 *                        [--model PATH] [--input FILE] [--lines N]
 * The default is the CPU and the test model; --device cuda exits 77 without
 * a GPU and defaults to the fp16 test model for a precision other than fp32
 * (tf32x2 needs weights exact in TF32). On the CPU, --cpu-kernels, --cpu-isa
 * and --threads pick the kernels (default auto: fast), the fast product's
 * instructions and their threads; blas exits 77 in a build without a BLAS
 * or with one whose rows move with the row count, an isa this CPU lacks
 * exits 77 too, and so does --precision int8 on a CPU with neither AVX-512
 * VNNI nor AVX2.
 * --input takes the first N lines
 * of FILE (default N: 60) instead of random ones. dev/gpu-check.sh runs it on
 * CUDA at every precision. The service's part is invariance_service.c
 * (invariance.h). */
#include "invariance.h"

#include "test_results.h"
#include "test_util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const words[] = {"der", "die", "das", "und", "ist", "ein", "eine", "Haus",
                                    "katze", "hund", "mann", "frau", "kind", "sieht", "nicht",
                                    "groß", "klein", "heute", "mit", "auf", "buch", "liest",
                                    ".", ",", "!", "?", "Zwei", "läuft", "im", "Park"};

static struct {
    nmt_device device;
    nmt_precision precision;
    nmt_cpu_kernels cpu_kernels;
    nmt_cpu_isa cpu_isa;
    int threads;
    const char *model_path;
    const char *input;
    int n_lines;
    int fused_output;
} args = {NMT_DEVICE_CPU, NMT_PRECISION_FP32, NMT_CPU_KERNELS_AUTO, NMT_CPU_ISA_AUTO, 0, NULL,
          NULL, 60, 0};

/* nmt_cpu_kernels' and nmt_cpu_isa's values, in order. */
static const char *const kernel_names[] = {"auto", "blas", "reference", "fast"};
static const char *const isa_names[] = {"auto", "generic", "avx2", "avx512"};

/* nmt_precision's values, in order. */
static const char *const precision_names[] = {"fp32", "tf32x2", "bf16", "fp16", "auto", "int8"};
nmt_model *model;
static const char *const target_words[] = {"the", "a", "dog", "house", "cat", "man", "woman",
                                           "child", "sees", "is", "not", "big", ".", ","};

static char text[MAX_LINES][LINE_BYTES];
const char *lines[MAX_LINES];
static char target_text[MAX_LINES][LINE_BYTES];
const char *prefixes[MAX_LINES], *targets[MAX_LINES];
int n_lines;
/* ref[kind][line]: the line translated alone (batch size 1). */
static nmt_result ref[N_KINDS][MAX_LINES];

/* Search kinds: n-best 3 with attention weights; the defaults (n-best 1, no
 * attention); OpenNMT-py's rules with n-best 2 and another length penalty;
 * sampling (4 samples a line, top-K 10, temperature 0.8) with logit rules
 * and attention weights, every line keyed by its index (line_key); the
 * onmt rules with the coverage penalty and logit rules; LSH shrinking with
 * one candidate list a sentence (a list shared by the batch,
 * NMT_LSH_SHARE_BATCH, depends on the batch by design; CPU only); target
 * prefixes with 3 alternatives (a line is 3 sentences of a batch) and logit
 * rules after the prefixes; scoring with attention weights; samples of
 * target prefixes (3 a line, top-K 10, min_length and no repeated 2-grams
 * after the prefixes), every line keyed by its index. */
enum { KIND_SAMPLING = 3, KIND_COVERAGE = 4, KIND_LSH = 5, KIND_PREFIX = 6, KIND_SCORE = 7,
       KIND_SAMPLED_PREFIX = 8 };
nmt_options kind_options(int kind)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = args.device;
    o.precision = args.precision;
    o.cpu_kernels = args.cpu_kernels;
    o.cpu_isa = args.cpu_isa;
    o.threads = args.threads;
    o.fused_output = args.fused_output;
    o.max_src_tokens = MAX_SRC_TOKENS;
    o.max_len_b = 12;
    o.batch_size = 1;
    if (kind == 0) {
        o.n_best = 3;
        o.attention_weights = 1;
    } else if (kind == 2) {
        o.beam_size = 4;
        o.n_best = 2;
        o.alpha = 0.6f;
        o.search_rules = NMT_SEARCH_RULES_ONMT;
    } else if (kind == KIND_SAMPLING) {
        o.beam_size = 1;
        o.n_best = 4;
        o.sampling_topk = 10;
        o.sampling_temperature = 0.8f;
        o.seed = 7;
        o.no_repeat_ngram_size = 3;
        o.repetition_penalty = 1.2f;
        o.attention_weights = 1;
    } else if (kind == KIND_COVERAGE) {
        o.beam_size = 4;
        o.n_best = 2;
        o.search_rules = NMT_SEARCH_RULES_ONMT;
        o.coverage_penalty = NMT_COVERAGE_WU;
        o.coverage_beta = 0.3f;
        o.min_length = 2;
        o.ban_unk = 1;
    } else if (kind == KIND_LSH) {
        o.shrink.mode = NMT_SHRINK_LSH;
        o.shrink.k = 8, o.shrink.u = 2, o.shrink.w = 16, o.shrink.top = 20;
        o.shrink.threshold = 2;
        o.shrink.share = NMT_LSH_SHARE_SENTENCE;
    } else if (kind == KIND_PREFIX) {
        o.beam_size = 3;
        o.n_best = 3;
        o.return_alternatives = 1;
        o.no_repeat_ngram_size = 2; /* the rules see the prefix, not change it */
        o.repetition_penalty = 1.3f;
    } else if (kind == KIND_SCORE) {
        o.attention_weights = 1;
    } else if (kind == KIND_SAMPLED_PREFIX) {
        o.beam_size = 1;
        o.n_best = 3;
        o.sampling_topk = 10;
        o.seed = 11;
        o.min_length = 4;
        o.no_repeat_ngram_size = 2;
        o.attention_weights = 1;
    }
    return o;
}

int kind_call(int kind)
{
    return kind == KIND_PREFIX || kind == KIND_SAMPLED_PREFIX ? CALL_PREFIX
           : kind == KIND_SCORE                                ? CALL_SCORE
                                                               : CALL_TRANSLATE;
}

/* The kinds a device runs: LSH on CUDA is not covered (a batch's lists are
 * as long as its longest, and the list kernels are picked by rows:
 * docs/decoding.md). */
static int kind_runs(int kind)
{
    return kind != KIND_LSH || args.device != NMT_DEVICE_CUDA;
}

/* One call of a kind: lines[idx[0 .. n)] with their targets. */
static nmt_status call_kind(nmt_translator *t, int kind, const char *const *call_lines,
                            const int *idx, int n, nmt_result *results, nmt_error *err)
{
    const char *call_targets[2 * MAX_LINES];
    const int call = kind_call(kind);
    for (int i = 0; i < n; i++)
        call_targets[i] = call == CALL_PREFIX ? prefixes[idx[i]] : targets[idx[i]];
    if (call == CALL_PREFIX)
        return nmt_translate_batch_prefix(t, call_lines, call_targets, n, results, err);
    if (call == CALL_SCORE)
        return nmt_score_batch(t, call_lines, call_targets, n, results, err);
    return nmt_translate_batch(t, call_lines, n, results, err);
}

/* A batching of the offline translator. */
typedef struct batching {
    const char *name;
    int batch_size;       /* the translator's; 0: random in [1, 24] each round */
    int max_batch_tokens; /* 0: by sentences only */
    int rounds;           /* 0: one call with every line in order; else this many
                             rounds of shuffled lines cut into random calls */
    int prepared;         /* through nmt_translator_prepare + nmt_translate_prepared */
    const char *oom;      /* NMT_TEST_DECODE_OOM while the translator is created */
    int cuda_only;
    int graphs_off, warmup_off;
    int check_every;      /* 0: the kind's */
} batching;

static const batching batchings[] = {
    {.name = "batch 2", .batch_size = 2},
    {.name = "batch 3", .batch_size = 3},
    {.name = "batch 7", .batch_size = 7},
    {.name = "batch 64", .batch_size = 64},
    {.name = "tokens 40", .batch_size = 64, .max_batch_tokens = 40},
    {.name = "tokens 9", .batch_size = 64, .max_batch_tokens = 9},
    {.name = "random compositions", .batch_size = 0, .rounds = 6},
    {.name = "random calls, batch 64", .batch_size = 64, .rounds = 2},
    {.name = "prepared, batch 5", .batch_size = 5, .prepared = 1},
    {.name = "out-of-memory split", .batch_size = 64, .oom = "3"},
    {.name = "graphs off", .batch_size = 7, .cuda_only = 1, .graphs_off = 1},
    {.name = "warmup off", .batch_size = 64, .cuda_only = 1, .warmup_off = 1},
    {.name = "check every 4", .batch_size = 64, .cuda_only = 1, .check_every = 4},
};

atomic_int printed;

int report(const char *what, int kind, int line, const nmt_result *got)
{
    char why[512];
    if (test_bitwise_line(&ref[kind][line], got, why, sizeof why))
        return 0;
    if (atomic_fetch_add(&printed, 1) < 3)
        fprintf(stderr, "%s, kind %d, line %d (%s): %s\n", what, kind, line, lines[line], why);
    return 1;
}

static int create(const nmt_options *options, const char *oom, nmt_translator **t)
{
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_options o = *options;
    if (o.return_alternatives && o.batch_size < o.n_best)
        o.batch_size = o.n_best; /* a line of alternatives is n_best sentences of a batch */
    if (oom)
        setenv("NMT_TEST_DECODE_OOM", oom, 1);
    const nmt_status st = nmt_translator_create(model, &o, t, &err);
    if (oom)
        unsetenv("NMT_TEST_DECODE_OOM");
    CHECK(st == NMT_STATUS_OK, "create: %s", err.message);
    return st == NMT_STATUS_OK;
}

/* Translates the lines idx[0 .. n) in one call; returns the lines that differ. */
static int translate_call(nmt_translator *t, int prepared, const int *idx, int n, int kind,
                          const char *what)
{
    const char *call_lines[2 * MAX_LINES], *call_prefixes[2 * MAX_LINES];
    nmt_result results[2 * MAX_LINES];
    for (int i = 0; i < n; i++) {
        call_lines[i] = lines[idx[i]];
        call_prefixes[i] = prefixes[idx[i]];
    }
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st;
    const int keyed = kind == KIND_SAMPLING || kind == KIND_SAMPLED_PREFIX;
    if ((prepared && kind_call(kind) != CALL_SCORE) || keyed) {
        /* sampling: each line keyed by its index */
        nmt_prepared *p = NULL;
        uint64_t keys[2 * MAX_LINES];
        for (int i = 0; i < n; i++)
            keys[i] = (uint64_t)idx[i];
        st = kind_call(kind) == CALL_PREFIX
                 ? nmt_translator_prepare_prefix(t, call_lines, call_prefixes, n, &p, &err)
                 : nmt_translator_prepare(t, call_lines, n, &p, &err);
        if (st == NMT_STATUS_OK && keyed)
            st = nmt_prepared_set_line_keys(p, keys, &err);
        if (st == NMT_STATUS_OK)
            st = nmt_translate_prepared(t, p, results, &err);
        nmt_prepared_free(p);
    } else {
        st = call_kind(t, kind, call_lines, idx, n, results, &err);
    }
    CHECK(st == NMT_STATUS_OK, "%s: %s", what, err.message);
    if (st != NMT_STATUS_OK)
        return n;
    int differ = 0;
    for (int i = 0; i < n; i++) {
        differ += report(what, kind, idx[i], &results[i]);
        nmt_result_clear(&results[i]);
    }
    return differ;
}

void shuffled_lines(int *order, uint64_t *state)
{
    for (int i = 0; i < n_lines; i++)
        order[i] = i;
    for (int i = n_lines - 1; i > 0; i--) {
        const int j = (int)(test_rand_next(state) % (uint64_t)(i + 1)), x = order[i];
        order[i] = order[j], order[j] = x;
    }
}

/* Shuffled lines, cut at random points into calls of 1 .. 2 x batch lines,
 * each call holding one of its lines twice with probability 1/2. */
static int random_calls(nmt_translator *t, int batch, int kind, const char *what)
{
    int order[MAX_LINES], call[2 * MAX_LINES], differ = 0;
    uint64_t state = test_rand_u64();
    shuffled_lines(order, &state);
    for (int start = 0; start < n_lines;) {
        int n = test_rand_int(1, 2 * batch + 1);
        if (n > n_lines - start)
            n = n_lines - start;
        memcpy(call, order + start, sizeof(int) * (size_t)n);
        int m = n;
        if (test_rand_int(0, 2)) { /* a duplicate at a random position */
            const int at = test_rand_int(0, n + 1);
            memmove(call + at + 1, call + at, sizeof(int) * (size_t)(n - at));
            call[at] = order[start + test_rand_int(0, n)];
            m++;
        }
        differ += translate_call(t, 0, call, m, kind, what);
        start += n;
    }
    return differ;
}

static void run_batching(const batching *b, int kind)
{
    nmt_options o = kind_options(kind);
    o.max_batch_tokens = b->max_batch_tokens;
    o.collect_stats = 1;
    if (b->graphs_off)
        o.cuda_graphs = 0;
    if (b->warmup_off)
        o.warmup = 0;
    if (b->check_every)
        o.check_every = b->check_every;
    int differ = 0, rounds = b->rounds ? b->rounds : 1;
    atomic_store(&printed, 0);
    nmt_stats stats = {0};
    for (int r = 0; r < rounds; r++) {
        o.batch_size = b->batch_size ? b->batch_size : test_rand_int(1, 25);
        nmt_translator *t = NULL;
        if (!create(&o, b->oom, &t))
            return;
        if (b->rounds) {
            differ += random_calls(t, o.batch_size, kind, b->name);
        } else {
            int all[MAX_LINES];
            for (int i = 0; i < n_lines; i++)
                all[i] = i;
            differ += translate_call(t, b->prepared, all, n_lines, kind, b->name);
        }
        nmt_error err = {NMT_STATUS_OK, ""};
        nmt_translator_stats(t, &stats, &err);
        nmt_translator_free(t);
    }
    CHECK(differ == 0, "%s, kind %d: %d lines differ from batch 1", b->name, kind, differ);
    if (b->oom && stats.split_batches == 0)
        printf("  %-24s kind %d: not exercised (the backend has no NMT_TEST_DECODE_OOM hook)\n",
               b->name, kind);
    else
        printf("  %-24s kind %d: %d of %d lines differ%s\n", b->name, kind, differ, n_lines,
               b->oom ? " (after splits)" : "");
    CHECK(!b->oom || args.device != NMT_DEVICE_CPU || stats.split_batches > 0,
          "%s: the CPU backend did not split", b->name);
}

/* ---- setup ------------------------------------------------------------------ */

static void flip_last_bit(float *x)
{
    uint32_t bits;
    memcpy(&bits, x, sizeof bits);
    bits ^= 1u;
    memcpy(x, &bits, sizeof bits);
}

/* The comparison sees one flipped bit of a token score and of an attention
 * weight of the first line of kind 0 whose best hypothesis has tokens. */
static void check_comparison(void)
{
    const nmt_result *r = NULL;
    for (int i = 0; i < n_lines && !r; i++)
        if (ref[0][i].status == NMT_STATUS_OK && ref[0][i].n_hypotheses > 0 &&
            ref[0][i].hypotheses[0].n_tokens > 0 && ref[0][i].n_src > 0)
            r = &ref[0][i];
    CHECK(r && r->hypotheses[0].attention && r->hypotheses[0].token_scores,
          "no line with tokens and attention weights");
    if (test_failures)
        return;
    nmt_result a = *r, b = *r;
    nmt_hypothesis h = r->hypotheses[0];
    a.n_hypotheses = b.n_hypotheses = 1;
    b.hypotheses = &h;
    const size_t n_scores = (size_t)h.n_tokens + 1, n_weights = (size_t)h.n_tokens * r->n_src;
    float *scores = malloc(sizeof(float) * n_scores), *weights = malloc(sizeof(float) * n_weights);
    if (!scores || !weights) {
        CHECK(0, "out of memory");
    } else {
        char why[512];
        memcpy(scores, h.token_scores, sizeof(float) * n_scores);
        memcpy(weights, h.attention, sizeof(float) * n_weights);
        CHECK(test_bitwise_line(&a, &b, why, sizeof why), "a copy differs: %s", why);
        flip_last_bit(&scores[n_scores - 1]);
        h.token_scores = scores;
        CHECK(!test_bitwise_line(&a, &b, why, sizeof why), "a token score's last bit unseen");
        h.token_scores = r->hypotheses[0].token_scores;
        flip_last_bit(&weights[n_weights - 1]);
        h.attention = weights;
        CHECK(!test_bitwise_line(&a, &b, why, sizeof why), "a weight's last bit unseen");
    }
    free(scores);
    free(weights);
}

/* The library and the service default to the model file's precision
 * (include/nmt.h, NMT_PRECISION_AUTO), as translate and nmt-server do. */
static void check_defaults(void)
{
    nmt_options o;
    nmt_service_options so;
    nmt_options_init(&o);
    nmt_service_options_init(&so);
    CHECK(o.precision == NMT_PRECISION_AUTO && so.translator.precision == NMT_PRECISION_AUTO,
          "default precision %d, the service's %d", (int)o.precision,
          (int)so.translator.precision);
}

/* ---- arguments and lines ------------------------------------------------------------------ */

/* The index of v in names[0..n), or -1. */
static int name_index(const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return i;
    return -1;
}

static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int named = 0;
        if (!strcmp(argv[i], "--device") && v && (!strcmp(v, "cpu") || !strcmp(v, "cuda")))
            args.device = !strcmp(v, "cpu") ? NMT_DEVICE_CPU : NMT_DEVICE_CUDA;
        else if (!strcmp(argv[i], "--precision") && v &&
                 (named = name_index(v, precision_names, 6)) >= 0)
            args.precision = (nmt_precision)named;
        else if (!strcmp(argv[i], "--cpu-kernels") && v &&
                 (named = name_index(v, kernel_names, 4)) >= 0)
            args.cpu_kernels = (nmt_cpu_kernels)named;
        else if (!strcmp(argv[i], "--cpu-isa") && v && (named = name_index(v, isa_names, 4)) >= 0)
            args.cpu_isa = (nmt_cpu_isa)named;
        else if (!strcmp(argv[i], "--threads") && v && atoi(v) >= 1 && atoi(v) <= 64)
            args.threads = atoi(v);
        else if (!strcmp(argv[i], "--model") && v)
            args.model_path = v;
        else if (!strcmp(argv[i], "--input") && v)
            args.input = v;
        else if (!strcmp(argv[i], "--lines") && v && atoi(v) >= 4 && atoi(v) <= MAX_LINES - 4)
            args.n_lines = atoi(v);
        else if (!strcmp(argv[i], "--fused-output") && v && (!strcmp(v, "on") || !strcmp(v, "off")))
            args.fused_output = !strcmp(v, "on");
        else
            return 0;
        i++;
    }
    return 1;
}

/* The lines: from --input or random, then an empty line, a line of invalid
 * UTF-8 and one over MAX_SRC_TOKENS, all refused or empty alike in any batch. */
static int make_lines(void)
{
    n_lines = 0;
    if (args.input) {
        FILE *f = fopen(args.input, "r");
        if (!f) {
            perror(args.input);
            return 0;
        }
        while (n_lines < args.n_lines && fgets(text[n_lines], LINE_BYTES, f)) {
            text[n_lines][strcspn(text[n_lines], "\r\n")] = '\0';
            n_lines++;
        }
        fclose(f);
    }
    for (; n_lines < args.n_lines; n_lines++)
        test_random_words(text[n_lines], words, (int)(sizeof words / sizeof words[0]),
                          test_rand_int(1, 24));
    text[n_lines++][0] = '\0';
    strcpy(text[n_lines++], "ein \xff hund");
    test_random_words(text[n_lines++], words, 4, MAX_SRC_TOKENS + 3);
    for (int i = 0; i < n_lines; i++) {
        lines[i] = text[i];
        test_random_words(target_text[i], target_words,
                          (int)(sizeof target_words / sizeof target_words[0]),
                          test_rand_int(1, 12));
        prefixes[i] = i % 3 ? target_text[i] : NULL;
        targets[i] = target_text[i];
    }
    target_text[1][0] = '\0'; /* an empty target (prefix: none) */
    /* A target longer than the longest translation of MAX_SRC_TOKENS tokens. */
    test_random_words(target_text[2], target_words, 4, 3 * MAX_SRC_TOKENS);
    return 1;
}

int main(int argc, char **argv)
{
    if (!parse_args(argc, argv)) {
        fprintf(stderr, "usage: test_invariance [--device cpu|cuda] [--precision "
                        "fp32|tf32x2|bf16|fp16|auto|int8] [--cpu-kernels auto|fast|blas|reference] "
                        "[--cpu-isa auto|generic|avx2|avx512] [--threads N] [--model PATH] [--input FILE] [--lines N] "
                        "[--fused-output on|off]\n");
        return 2;
    }
    if (args.device == NMT_DEVICE_CUDA && nmt_cuda_available() == 0) {
        printf("skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    if (!args.model_path)
        args.model_path = args.device == NMT_DEVICE_CUDA && args.precision != NMT_PRECISION_FP32
                              ? NMT_TEST_MODEL_FP16 : NMT_TEST_MODEL;
    test_seed();
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(args.model_path, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", args.model_path, err.message);
        return 1;
    }
    if (!make_lines())
        return 1;
    if (args.device == NMT_DEVICE_CPU && (args.cpu_kernels == NMT_CPU_KERNELS_BLAS ||
                                          args.cpu_isa != NMT_CPU_ISA_AUTO ||
                                          args.precision == NMT_PRECISION_INT8)) {
        const nmt_options o = kind_options(1);
        nmt_translator *t = NULL;
        const nmt_status st = nmt_translator_create(model, &o, &t, &err);
        nmt_translator_free(t);
        if (st == NMT_STATUS_ERROR_UNSUPPORTED) {
            printf("skipped: %s\n", err.message);
            nmt_model_free(model);
            return NMT_TEST_SKIP;
        }
    }
    printf("test_invariance: %s, precision %s, cpu kernels %s, isa %s, %s, %d lines\n",
           args.device == NMT_DEVICE_CUDA ? "CUDA" : "CPU", precision_names[args.precision],
           kernel_names[args.cpu_kernels], isa_names[args.cpu_isa], args.model_path, n_lines);
    for (int kind = 0; kind < N_KINDS; kind++) {
        if (!kind_runs(kind))
            continue;
        const nmt_options o = kind_options(kind);
        nmt_translator *t = NULL;
        if (!create(&o, NULL, &t))
            break;
        int all[MAX_LINES];
        for (int i = 0; i < n_lines; i++)
            all[i] = i;
        CHECK(call_kind(t, kind, lines, all, n_lines, ref[kind], &err) == NMT_STATUS_OK,
              "batch 1: %s", err.message);
        nmt_translator_free(t);
    }
    if (test_failures)
        return test_finish("test_invariance");
    check_comparison();
    check_defaults();
    for (int kind = 0; kind < N_KINDS; kind++) {
        if (!kind_runs(kind))
            continue;
        for (size_t b = 0; b < sizeof batchings / sizeof batchings[0]; b++)
            if (!batchings[b].cuda_only || args.device == NMT_DEVICE_CUDA)
                run_batching(&batchings[b], kind);
        run_service(kind, 0, test_rand_int(0, 3000));
        /* The stream runs the v1 rules only. */
        const nmt_options o = kind_options(kind);
        if (args.device == NMT_DEVICE_CUDA && o.search_rules == NMT_SEARCH_RULES_V1)
            run_service(kind, 1, 0);
    }
    for (int kind = 0; kind < N_KINDS; kind++)
        for (int i = 0; i < n_lines; i++)
            nmt_result_clear(&ref[kind][i]);
    nmt_model_free(model);
    return test_finish("test_invariance");
}
