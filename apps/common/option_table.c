/* option_table.c: translate's options, one row each (options.h): the long
 * and short names, the kind and range or choices, the field of
 * translate_args, and the --help text. nmt-server takes every row too and
 * adds its own (apps/server/server_options.c). The rows are in --help's order. */
#include "options.h"

#include <string.h>

#define ARGS(field) APP_FIELD(translate_args, field)
#define ENGINE(field) APP_FIELD(translate_args, engine.field)

static const app_choice precisions[] = {
    {"auto", NMT_PRECISION_AUTO}, {"fp32", NMT_PRECISION_FP32}, {"tf32x2", NMT_PRECISION_TF32X2},
    {"bf16", NMT_PRECISION_BF16}, {"fp16", NMT_PRECISION_FP16}, {"int8", NMT_PRECISION_INT8},
    {NULL, 0}};

const char *app_precision_name(nmt_precision precision)
{
    for (const app_choice *c = precisions; c->name; c++)
        if (c->value == (int)precision)
            return c->name;
    return "unknown";
}

/* error: --quiet; warning: notes but no progress; info: both */
static int set_log_level(const app_option *row, void *settings, const char *value)
{
    translate_args *a = settings;
    int level;
    if (!app_option_choice(row, value, &level))
        return 0;
    a->quiet = level == 0;
    if (level == 1)
        a->progress = 0;
    return 1;
}

/* The output field needs the engine's weights (and only then costs memory). */
static int set_attention(const app_option *row, void *settings, const char *value)
{
    translate_args *a = settings;
    if (!app_option_store(row, settings, value))
        return 0;
    a->engine.attention_weights = a->attention;
    return 1;
}

static int set_devices(const app_option *row, void *settings, const char *value)
{
    (void)row;
    return app_parse_devices(value, settings);
}

static int set_weights(const app_option *row, void *settings, const char *value)
{
    (void)row;
    return app_parse_weights(value, settings);
}

static int set_lsh(const app_option *row, void *settings, const char *value)
{
    (void)row;
    return app_parse_lsh(value, &((translate_args *)settings)->engine.shrink);
}

static int set_suppress(const app_option *row, void *settings, const char *value)
{
    (void)row;
    translate_args *a = settings;
    return app_parse_suppress(value, a->suppress, sizeof a->suppress);
}

static int set_top_words(const app_option *row, void *settings, const char *value)
{
    translate_args *a = settings;
    if (!app_option_store(row, settings, value))
        return 0;
    a->engine.shrink.mode = NMT_SHRINK_TOP;
    return 1;
}

/* --stats and --timing write the same file, --timing only the free counters. */
static int set_stats(const app_option *row, void *settings, const char *value)
{
    translate_args *a = settings;
    if (!app_option_store(row, settings, value))
        return 0;
    const int full = !strcmp(row->name, "stats");
    a->engine.collect_stats = full ? 2 : 1;
    a->stats_option = full ? "--stats" : "--timing";
    return 1;
}

const app_option app_translate_options[] = {
    {.name = "model", .short_name = 'm', .kind = APP_OPT_LIST, ARGS(models), .lo = 1,
     .arg = "PATH",
     .help = "model file (required); given again (-m A -m B, up to 8), an\n"
             "ensemble: the models' log-probabilities averaged at each\n"
             "step (docs/decoding.md, \"Ensembles\"); in the INI file one\n"
             "model = PATH line a model"},
    {.name = "weights", .kind = APP_OPT_CUSTOM, .set = set_weights, .arg = "W1,W2,...",
     .help = "an ensemble's weights, one a model (>= 0): the step's score\n"
             "is sum_i W_i log p_i, not normalized (Marian's --weights;\n"
             "default 1/n each, OpenNMT-py's mean)"},
    {.name = "config", .short_name = 'c', .kind = APP_OPT_STRING, ARGS(config_path),
     .scope = APP_OPT_CLI_ONLY, .arg = "PATH",
     .help = "INI file with any of the options below; the command line wins"},
    {.name = "input", .short_name = 'i', .kind = APP_OPT_STRING, ARGS(input_path), .lo = 1,
     .arg = "FILE", .help = "read FILE instead of standard input"},
    {.name = "output", .short_name = 'o', .kind = APP_OPT_STRING, ARGS(output_path), .lo = 1,
     .arg = "FILE",
     .help = "write FILE instead of standard output (created or truncated\n"
             "before the model loads)"},
    {.name = "alignment", .kind = APP_OPT_FLAG, ARGS(alignment),
     .help = "append \" ||| s-t s-t ...\" to each output line (and n-best\n"
             "row): target token t attended source token s most (0-based,\n"
             "as tokenized; Marian's and fast_align's i-j format)"},
    {.name = "token-scores", .kind = APP_OPT_FLAG, ARGS(token_scores),
     .help = "append \" ||| \" and the log-probability of each target\n"
             "token, the EOS's last (they sum to the line's log-prob)"},
    {.name = "attention", .kind = APP_OPT_FLAG, ARGS(attention), .set = set_attention,
     .help = "append \" ||| \" and one JSON document: {\"src\": source\n"
             "tokens, \"tgt\": target tokens, \"weights\": one row a target\n"
             "token of its soft attention over the source tokens}\n"
             "(fields in this order: alignment, token scores, attention)"},
    {.name = "quiet", .kind = APP_OPT_FLAG, ARGS(quiet),
     .help = "no progress and no notes on stderr (errors still)"},
    {.name = "log-level", .kind = APP_OPT_CHOICE, .set = set_log_level,
     .choices = (const app_choice[]){{"error", 0}, {"warning", 1}, {"info", 2}, {NULL, 0}},
     .help = "error (= --quiet), warning (notes, no progress) or info\n"
             "(notes, and progress on a terminal: the default)"},
    {.name = "input-format", .kind = APP_OPT_CHOICE, ENGINE(input_tokens),
     .choices = (const app_choice[]){{"auto", -1}, {"raw", 0}, {"tokens", 1}, {NULL, 0}},
     .help = "tokens: lines are tokens separated by spaces, taken as\n"
             "they are (docs/tokenization.md); auto (default): tokens\n"
             "when the model file says tokenizer=pretokenized"},
    {.name = "output-format", .kind = APP_OPT_CHOICE, ENGINE(output_tokens),
     .choices = (const app_choice[]){{"auto", -1}, {"text", 0}, {"tokens", 1}, {NULL, 0}},
     .help = "tokens: the target tokens, space-separated"},
    {.name = "beam", .short_name = 'b', .kind = APP_OPT_INT, ENGINE(beam_size), .lo = 1,
     .hi = 256, APP_GIVEN(translate_args, beam_given), .arg = "N",
     .help = "beam size (default 5; 1 when sampling)"},
    {.name = "n-best", .short_name = 'n', .kind = APP_OPT_INT, ENGINE(n_best), .lo = 1, .hi = 256,
     .arg = "N",
     .help = "hypotheses per line (default 1; sampling: N samples); N > 1\n"
             "prints LINE<TAB>RANK<TAB>SCORE<TAB>TEXT rows, N per input\n"
             "line (a refused line: N rows of score -inf, empty text)"},
    {.name = "n-best-format", .kind = APP_OPT_CHOICE, ARGS(nbest_marian),
     .choices = (const app_choice[]){{"tsv", 0}, {"marian", 1}, {NULL, 0}},
     .help = "tsv: the rows above | marian: \"ID ||| TEXT ||| F0= LOGPROB\n"
             "||| SCORE\" rows, ID the 0-based line, the fields below\n"
             "before F0= (Marian's n-best lists: alignment, then the\n"
             "token scores as WordScores=, then the attention)"},
    {.name = "alpha", .kind = APP_OPT_FLOAT, ENGINE(alpha), .lo = 0, .hi = 10, .arg = "A",
     .help = "length penalty: score / length^A (default 1.0)"},
    {.name = "max-len-a", .kind = APP_OPT_FLOAT, ENGINE(max_len_a), .lo = 0, .hi = 100,
     APP_GIVEN(translate_args, max_len_given), .arg = "A",
     .help = "maximum target length floor(A * source_tokens + B) (default 2)"},
    {.name = "max-len-b", .kind = APP_OPT_INT, ENGINE(max_len_b), .lo = 0, .hi = 10000,
     APP_GIVEN(translate_args, max_len_given), .arg = "B",
     .help = "(default 10; with --search-rules onmt 1.25 and 5)"},
    {.name = "search-rules", .kind = APP_OPT_CHOICE, ENGINE(search_rules),
     .choices = (const app_choice[]){{"v1", NMT_SEARCH_RULES_V1},
                                     {"onmt", NMT_SEARCH_RULES_ONMT},
                                     {NULL, 0}},
     .help = "v1 (default): model-v1's beam search | onmt: OpenNMT-py\n"
             "3.5.1's (onmt_translate's output for a converted model; B\n"
             "candidates a step, stops when the best ends, BOS in the\n"
             "length; docs/decoding.md)"},
    /* sentences: at most 4096, checked by app_resolve_batching */
    {.name = "batch-size", .kind = APP_OPT_INT, ENGINE(batch_size), .lo = 1, .hi = 1 << 24,
     APP_GIVEN(translate_args, batch_size_given), .arg = "N",
     .help = "sentences decoded together at most (default: 2048 for a\n"
             "file on CUDA, halved until it fits the device, else 32; a\n"
             "file of fewer lines, not on the CPU: their count rounded up\n"
             "to a power of two)"},
    {.name = "max-batch-tokens", .kind = APP_OPT_INT, ENGINE(max_batch_tokens), .lo = 0,
     .hi = 1 << 24, .arg = "N",
     .help = "and source tokens at most (0: no limit, the default); with\n"
             "a large --batch-size this batches by tokens"},
    {.name = "max-memory", .kind = APP_OPT_SIZE, ENGINE(max_memory), .arg = "SIZE",
     .help = "CUDA: device bytes the translator may allocate (K, M, G\n"
             "suffixes; 0: no cap, the default): halves --batch-size\n"
             "until its weights, workspaces and search buffers fit"},
    {.name = "batch-type", .kind = APP_OPT_CHOICE, ARGS(batch_tokens),
     .choices = (const app_choice[]){{"sentences", 0}, {"tokens", 1}, {NULL, 0}},
     .help = "sentences (default) | tokens: --batch-size N counts source\n"
             "tokens, N a batch (Marian's --mini-batch-words); the\n"
             "translator is sized for min(N, 4096) sentences"},
    {.name = "maxi-batch", .kind = APP_OPT_INT, ARGS(maxi_batch), .lo = 1, .hi = 1 << 20,
     .arg = "N",
     .help = "lines read ahead, sorted by length and batched together\n"
             "(default 8 x --batch-size sentences, or N lines for N\n"
             "tokens, at most 65536; 1 line when stdin is a terminal);\n"
             "the next window is read and the last one written while\n"
             "one is translated"},
    {.name = "device", .kind = APP_OPT_CHOICE, ENGINE(device),
     .choices = (const app_choice[]){{"auto", NMT_DEVICE_AUTO}, {"cpu", NMT_DEVICE_CPU},
                                     {"cuda", NMT_DEVICE_CUDA}, {"gpu", NMT_DEVICE_CUDA},
                                     {NULL, 0}},
     .help = "default auto: the GPU when there is one (gpu: cuda)"},
    {.name = "device-index", .kind = APP_OPT_INT, ENGINE(device_index), .lo = 0, .hi = 1024,
     APP_GIVEN(translate_args, device_given), .arg = "I",
     .help = "CUDA device ordinal (default 0)"},
    {.name = "devices", .kind = APP_OPT_CUSTOM, .set = set_devices,
     APP_GIVEN(translate_args, device_given), .arg = "LIST|all",
     .help = "CUDA: one translator a device (e.g. 0,1; 0,0: two on\n"
             "device 0), chunks in parallel, output in input order, the\n"
             "same as one device's"},
    {.name = "workers", .kind = APP_OPT_INT, ARGS(workers), .lo = 1, .hi = 256, .arg = "N",
     .help = "CPU: N translators in parallel (default 1), likewise; the\n"
             "last window (a short input's only one) is split among them"},
    {.name = "host-threads", .kind = APP_OPT_INT, ARGS(host_threads), .lo = 1, .hi = 1024,
     .arg = "N",
     .help = "host threads that tokenize and format windows of input\n"
             "(default: the cores; docs/scale-out.md)"},
    {.name = "dry-run", .kind = APP_OPT_FLAG, ARGS(dry_run),
     .help = "no translator: each line's tokens go back through the\n"
             "detokenizer (the host pipeline alone: --timing's\n"
             "lines_per_second)"},
    {.name = "skip-lines", .kind = APP_OPT_INT, ARGS(skip_lines), .lo = 0, .hi = 2147483647,
     .arg = "N",
     .help = "skip the first N input lines (no output for them): resumes\n"
             "a run that failed, as its message says"},
    {.name = "mpi", .kind = APP_OPT_FLAG, ARGS(mpi),
     .help = "under mpirun: each rank translates its shard of -i FILE,\n"
             "rank 0 joins them into -o FILE; on CUDA a rank takes\n"
             "the GPU of its rank on its host unless --devices or\n"
             "--device-index is given (docs/scale-out.md)"},
    {.name = "no-unk-replace", .kind = APP_OPT_FLAG, ENGINE(unk_replace), .negate = 1,
     .help = "keep <unk> instead of copying the most attended source word"},
    {.name = "unk-replace", .kind = APP_OPT_BOOL, ENGINE(unk_replace),
     .scope = APP_OPT_INI_ONLY},
    {.name = "scores", .kind = APP_OPT_FLAG, ARGS(scores),
     .help = "prefix each output line with its score and a tab"},
    {.name = "max-line-bytes", .kind = APP_OPT_INT, ENGINE(max_line_bytes), .lo = 1,
     .hi = 1 << 30, .arg = "N", .help = "refuse longer lines (default 4096)"},
    {.name = "max-src-tokens", .kind = APP_OPT_INT, ENGINE(max_src_tokens), .lo = 1, .hi = 4096,
     .arg = "N", .help = "refuse lines with more tokens (default 256)"},
    {.name = "cuda-graphs", .kind = APP_OPT_BOOL, ENGINE(cuda_graphs), .arg = "on|off",
     .help = "CUDA: replay recurring decoder steps and encoder passes\n"
             "as CUDA graphs (default on; off gives the same output)"},
    {.name = "fused-output", .kind = APP_OPT_BOOL, ENGINE(fused_output), .arg = "on|off",
     .help = "CUDA, 16-bit: the output layer as one fused product,\n"
             "log-softmax and top-K that never writes the logits (the\n"
             "same words; default off; docs/performance.md)"},
    {.name = "batch-invariant", .kind = APP_OPT_BOOL, ENGINE(batch_invariant), .arg = "on|off",
     .help = "a line's output (text, scores, alignment, attention)\n"
             "has the same bits whatever it is batched with (default\n"
             "on; off: CUDA may use faster kernels whose last bits\n"
             "depend on the batch; docs/decoding.md)"},
    {.name = "cpu-kernels", .kind = APP_OPT_CHOICE, ENGINE(cpu_kernels),
     .choices = (const app_choice[]){{"auto", NMT_CPU_KERNELS_AUTO},
                                     {"fast", NMT_CPU_KERNELS_FAST},
                                     {"blas", NMT_CPU_KERNELS_BLAS},
                                     {"reference", NMT_CPU_KERNELS_REFERENCE},
                                     {NULL, 0}},
     .help = "CPU: auto (default: fast) | fast (vectorized fp32, the\n"
             "engine's own threaded product, the encoder batched) |\n"
             "blas (the same on OpenBLAS's SGEMM) | reference (the\n"
             "plain-C oracle); all keep a line's bits in any batch"},
    {.name = "cpu-isa", .kind = APP_OPT_CHOICE, ENGINE(cpu_isa),
     .choices = (const app_choice[]){{"auto", NMT_CPU_ISA_AUTO},
                                     {"avx512", NMT_CPU_ISA_AVX512},
                                     {"avx2", NMT_CPU_ISA_AVX2},
                                     {"generic", NMT_CPU_ISA_GENERIC},
                                     {NULL, 0}},
     .help = "CPU, fast: the product's instructions: auto (default:\n"
             "the best here) | avx512 | avx2 | generic; one choice on\n"
             "every machine gives every machine the same bits"},
    {.name = "threads", .kind = APP_OPT_INT, ENGINE(threads), .lo = 1, .hi = 1024, .arg = "N",
     .help = "CPU, fast and blas: threads a product uses (default: the\n"
             "cores, divided among --workers)"},
    {.name = "warmup", .kind = APP_OPT_BOOL, ENGINE(warmup), .arg = "on|off",
     APP_GIVEN(translate_args, warmup_given),
     .help = "CUDA: warm up at start (~0.5 s at batch 2048) so the\n"
             "first lines are not slow (default on, but off for a file\n"
             "of one batch or less, which it would only delay)"},
    {.name = "check-every", .kind = APP_OPT_INT, ENGINE(check_every), .lo = 1, .hi = 64,
     .arg = "N", .help = "CUDA: read the done flags every N steps (1..64, default 1)"},
    {.name = "precision", .kind = APP_OPT_CHOICE, ENGINE(precision), .choices = precisions,
     .help = "CUDA GEMMs: auto (default: fp16 for a model file\n"
             "of fp16 weights, like the shipped ones, else\n"
             "fp32) | fp32 (the CPU's arithmetic) | tf32x2\n"
             "(decoder, from 64 rows: TF32 tensor cores, split\n"
             "activations, ~fp32 accuracy, fp16 model files\n"
             "only) | bf16 | fp16 (tensor cores, 16-bit weights\n"
             "and activations, fp32 sums; softmax, top-K and\n"
             "scores fp32; fp16 is ~3.5x fp32 at large batches,\n"
             "the same BLEU; docs/performance.md, \"Defaults\").\n"
             "With --batch-invariant on a line's output has the\n"
             "same bits in any batch, and tf32x2 is refused.\n"
             "The CPU: fp32, or int8 (fast kernels, AVX-512 VNNI\n"
             "or AVX2: the decoder's products in int8, per-row\n"
             "scales)"},
    {.name = "sparse", .kind = APP_OPT_CHOICE, ENGINE(sparse),
     .choices = (const app_choice[]){{"auto", NMT_SPARSE_AUTO}, {"on", NMT_SPARSE_ON},
                                     {"off", NMT_SPARSE_OFF}, {NULL, 0}},
     .help = "matrices the model stores sparse\n"
             "(python/export/prune.py): auto (default) multiplies them\n"
             "sparse on the CPU, and on CUDA (with --batch-invariant\n"
             "off) where the SpMM beats the dense GEMM at that sparsity\n"
             "and row count (docs/sparse.md); on: sparse always; off: dense"},
    {.name = "progress", .kind = APP_OPT_FLAG, ARGS(progress),
     .help = "progress on stderr (default: when stderr is a terminal)"},
    {.name = "no-progress", .kind = APP_OPT_FLAG, ARGS(progress), .negate = 1,
     .help = "no progress on stderr"},
    /* forced tokens (scoring, prefixes) */
    {.name = "score-target", .kind = APP_OPT_STRING, ARGS(score_target_path), .lo = 1,
     .arg = "FILE", .heading = "\nScoring and target prefixes (docs/decoding.md):\n",
     .help = "score FILE's line i as the translation of input line i\n"
             "(forced decoding; OpenNMT-py's -tgt, marian-scorer) instead\n"
             "of translating: each output line is LOGPROB<TAB>SCORE (the\n"
             "target's and its EOS's log-probabilities summed, and that\n"
             "length-normalized as a translation's), then the fields of\n"
             "--alignment, --token-scores, --attention"},
    {.name = "target-prefix", .kind = APP_OPT_STRING, ARGS(target_prefix_path), .lo = 1,
     .arg = "FILE",
     .help = "FILE's line i starts input line i's translation (empty:\n"
             "none); the search continues it, every hypothesis starts\n"
             "with it and its log-probabilities count (-tgt_prefix)"},
    {.name = "return-alternatives", .kind = APP_OPT_FLAG, ENGINE(return_alternatives),
     .help = "the --n-best hypotheses are alternatives: the N best words\n"
             "after the prefix (or at the start), each continued by the\n"
             "beam, best word first (CTranslate2's return_alternatives)"},
    {.name = "sampling-topk", .kind = APP_OPT_INT, ENGINE(sampling_topk), .lo = 0, .hi = 512,
     .arg = "K",
     .heading = "\nSampling and logit rules (docs/decoding.md; CTranslate2's options):\n",
     .help = "sample each word from the K likeliest (0: from every word;\n"
             "1, the default: beam search); --n-best N draws N samples\n"
             "a line with beam 1; a line's samples depend on --seed and\n"
             "its number in the input only"},
    {.name = "sampling-topp", .kind = APP_OPT_FLOAT, ENGINE(sampling_topp), .lo = 0, .hi = 1,
     .arg = "P",
     .help = "from the smallest set of the top K whose probability is\n"
             "at least P (default 1: all K; needs K 2..512)"},
    {.name = "sampling-temperature", .kind = APP_OPT_FLOAT, ENGINE(sampling_temperature),
     .lo = 0, .hi = 100, .arg = "T", .help = "sample from softmax(logits / T) (default 1)"},
    {.name = "seed", .kind = APP_OPT_INT, ENGINE(seed), .lo = 0, .hi = 2147483647, .arg = "S",
     .help = "the samples' random streams (default 0)"},
    {.name = "min-length", .kind = APP_OPT_INT, ENGINE(min_length), .lo = 0, .hi = 10000,
     .arg = "N", .help = "no hypothesis ends before N target tokens (default 0)"},
    {.name = "no-repeat-ngram-size", .kind = APP_OPT_INT, ENGINE(no_repeat_ngram_size),
     .lo = 0, .hi = 64, .arg = "N",
     .help = "never repeat an N-gram of the hypothesis (default 0: off)"},
    {.name = "repetition-penalty", .kind = APP_OPT_FLOAT, ENGINE(repetition_penalty), .lo = 0,
     .hi = 100, .arg = "P",
     .help = "the logits of the hypothesis's words / P when positive,\n"
             "x P when negative (CTRL; default 1: off)"},
    {.name = "ban-unk", .kind = APP_OPT_FLAG, ENGINE(ban_unk),
     .help = "never generate <unk> (OpenNMT-py's -ban_unk_token)"},
    {.name = "disable-unk", .kind = APP_OPT_FLAG, ENGINE(ban_unk),
     .help = "the same (CTranslate2's disable_unk)"},
    {.name = "suppress", .kind = APP_OPT_CUSTOM, .set = set_suppress, .arg = "FILE|LIST",
     .help = "never generate these target token sequences: a FILE of\n"
             "them, one a line, tokens separated by spaces, or a LIST\n"
             "separated by commas (\"a b,c\")"},
    {.name = "coverage-penalty", .kind = APP_OPT_CHOICE, ENGINE(coverage_penalty),
     .choices = (const app_choice[]){{"none", NMT_COVERAGE_NONE},
                                     {"wu", NMT_COVERAGE_WU},
                                     {"summary", NMT_COVERAGE_SUMMARY},
                                     {NULL, 0}},
     .help = "rescore finished hypotheses by their attention's coverage\n"
             "(OpenNMT-py's; with --search-rules onmt; default none)"},
    {.name = "coverage-beta", .kind = APP_OPT_FLOAT, ENGINE(coverage_beta), .lo = 0, .hi = 100,
     .arg = "B", .help = "the coverage penalty's weight (default 0)"},
    {.name = "lsh", .kind = APP_OPT_CUSTOM, .set = set_lsh, .arg = "K,u,W,T,t",
     .heading = "\nVocabulary shrinking (docs/lsh.md; off by default: full softmax):\n",
     .help = "LSH (Shi, Xu & Knight): score only the words whose WTA band\n"
             "codes {K,u,W} match a hypothesis's in >= t bands, plus the T\n"
             "most frequent words (T >= 2 * beam)"},
    {.name = "top-words", .kind = APP_OPT_INT, ENGINE(shrink.top), .lo = 1, .hi = 1 << 24,
     .set = set_top_words, .arg = "T",
     .help = "the TOP baseline: only the T most frequent words"},
    {.name = "lsh-share", .kind = APP_OPT_CHOICE, ENGINE(shrink.share),
     .choices = (const app_choice[]){{"batch", NMT_LSH_SHARE_BATCH},
                                     {"sentence", NMT_LSH_SHARE_SENTENCE},
                                     {"row", NMT_LSH_SHARE_ROW},
                                     {NULL, 0}},
     .help = "hypotheses sharing one candidate list (default sentence;\n"
             "row scores each pair, an SDDMM)"},
    {.name = "lsh-seed", .kind = APP_OPT_INT, ENGINE(shrink.seed), .lo = 0, .hi = 2147483647,
     .arg = "N", .help = "permutations and hash tables (default 1)"},
    {.name = "lsh-lists", .kind = APP_OPT_CHOICE, ENGINE(shrink.lists),
     .choices = (const app_choice[]){{"auto", NMT_LSH_LISTS_AUTO},
                                     {"hits", NMT_LSH_LISTS_HITS},
                                     {"direct", NMT_LSH_LISTS_DIRECT},
                                     {NULL, 0}},
     .help = "how CUDA builds the lists (same lists; direct skips the\n"
             "hit matrix; auto: direct from 128 rows a step; default auto)"},
    {.name = "stats", .kind = APP_OPT_STRING, ARGS(stats_path), .set = set_stats, .arg = "FILE",
     .help = "write JSON counters after the run: decode time, steps,\n"
             "output-layer GPU time, candidates and recall (slower:\n"
             "time speed without it)"},
    {.name = "timing", .kind = APP_OPT_STRING, ARGS(stats_path), .set = set_stats,
     .arg = "FILE",
     .help = "the same file with only the free counters: sentences,\n"
             "steps, decode_seconds (the wall time while any translator\n"
             "decodes: no model load, no index build; what\n"
             "dev/eval/lsh-grid times speed with), decode_seconds_summed\n"
             "(the translators' decode times summed), each\n"
             "translator's worker_sentences and worker_decode_seconds,\n"
             "and from the process's start startup_seconds (every\n"
             "translator ready) and first_output_seconds; lines_per_second"},
    {.name = "help", .short_name = 'h', .kind = APP_OPT_FLAG, ARGS(show_help),
     .scope = APP_OPT_CLI_ONLY, .help = "this text"},
    {.name = "version", .short_name = 'V', .kind = APP_OPT_FLAG, ARGS(show_version),
     .scope = APP_OPT_CLI_ONLY, .help = "the version"},
    {.name = NULL}};
