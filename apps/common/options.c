/* options.c: command line and INI parsing for the programs (translate, and
 * nmt-server with its own keys on top). The same keys work in both places
 * (`--beam 5` or `beam = 5`, `--scores` or `scores = 1`); values are parsed
 * strictly, and a bad one is reported with its source (option or
 * file:line). The --help texts are the programs'. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum {
    OPT_ALPHA = 256, OPT_MAX_LEN_A, OPT_MAX_LEN_B, OPT_BATCH_SIZE, OPT_DEVICE, OPT_DEVICE_INDEX,
    OPT_NO_UNK_REPLACE, OPT_SCORES, OPT_MAX_LINE_BYTES, OPT_MAX_SRC_TOKENS, OPT_PROGRESS,
    OPT_NO_PROGRESS, OPT_LSH, OPT_TOP_WORDS, OPT_LSH_SHARE, OPT_LSH_SEED, OPT_LSH_LISTS,
    OPT_STATS, OPT_TIMING, OPT_CUDA_GRAPHS, OPT_WARMUP, OPT_CHECK_EVERY, OPT_PRECISION,
    OPT_ALIGNMENT, OPT_QUIET, OPT_NBEST_FORMAT, OPT_INPUT_FORMAT, OPT_OUTPUT_FORMAT,
    OPT_MAX_BATCH_TOKENS, OPT_WORKERS, OPT_DEVICES, OPT_SKIP_LINES, OPT_MPI, OPT_SEARCH_RULES,
    OPT_BATCH_TYPE, OPT_MAXI_BATCH
};

enum { OPT_MAX_MEMORY = 512, OPT_LOG_LEVEL, OPT_SPARSE }; /* past the list above */
enum { OPT_ATTENTION = 600, OPT_TOKEN_SCORES, OPT_BATCH_INVARIANT, OPT_CPU_KERNELS, OPT_THREADS };

const char *app_precision_name(nmt_precision precision)
{
    static const char *const names[] = {"fp32", "tf32x2", "bf16", "fp16", "auto"};
    return precision >= NMT_PRECISION_FP32 && precision <= NMT_PRECISION_AUTO
               ? names[precision]
               : "unknown";
}

static const struct option long_options[] = {
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"sparse", required_argument, NULL, OPT_SPARSE},
    {"model", required_argument, NULL, 'm'},
    {"config", required_argument, NULL, 'c'},
    {"input", required_argument, NULL, 'i'},
    {"output", required_argument, NULL, 'o'},
    {"alignment", no_argument, NULL, OPT_ALIGNMENT},
    {"attention", no_argument, NULL, OPT_ATTENTION},
    {"token-scores", no_argument, NULL, OPT_TOKEN_SCORES},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"n-best-format", required_argument, NULL, OPT_NBEST_FORMAT},
    {"input-format", required_argument, NULL, OPT_INPUT_FORMAT},
    {"max-batch-tokens", required_argument, NULL, OPT_MAX_BATCH_TOKENS},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"skip-lines", required_argument, NULL, OPT_SKIP_LINES},
    {"mpi", no_argument, NULL, OPT_MPI},
    {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
    {"beam", required_argument, NULL, 'b'},
    {"n-best", required_argument, NULL, 'n'},
    {"alpha", required_argument, NULL, OPT_ALPHA},
    {"max-len-a", required_argument, NULL, OPT_MAX_LEN_A},
    {"max-len-b", required_argument, NULL, OPT_MAX_LEN_B},
    {"search-rules", required_argument, NULL, OPT_SEARCH_RULES},
    {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
    {"batch-type", required_argument, NULL, OPT_BATCH_TYPE},
    {"maxi-batch", required_argument, NULL, OPT_MAXI_BATCH},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"device-index", required_argument, NULL, OPT_DEVICE_INDEX},
    {"no-unk-replace", no_argument, NULL, OPT_NO_UNK_REPLACE},
    {"scores", no_argument, NULL, OPT_SCORES},
    {"max-line-bytes", required_argument, NULL, OPT_MAX_LINE_BYTES},
    {"max-src-tokens", required_argument, NULL, OPT_MAX_SRC_TOKENS},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"lsh", required_argument, NULL, OPT_LSH},
    {"top-words", required_argument, NULL, OPT_TOP_WORDS},
    {"lsh-share", required_argument, NULL, OPT_LSH_SHARE},
    {"lsh-seed", required_argument, NULL, OPT_LSH_SEED},
    {"lsh-lists", required_argument, NULL, OPT_LSH_LISTS},
    {"stats", required_argument, NULL, OPT_STATS},
    {"timing", required_argument, NULL, OPT_TIMING},
    {"cuda-graphs", required_argument, NULL, OPT_CUDA_GRAPHS},
    {"batch-invariant", required_argument, NULL, OPT_BATCH_INVARIANT},
    {"cpu-kernels", required_argument, NULL, OPT_CPU_KERNELS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"check-every", required_argument, NULL, OPT_CHECK_EVERY},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

/* Which keys one source (the INI file or the command line) gave, for the
 * checks within a source; across sources the command line wins. */
typedef struct setting_source {
    int lsh, top_words;
} setting_source;


/* Applies one setting by its key (INI name: "beam", "n_best", ...). A flag
 * option (--scores) is the key with a boolean value (1/0, true/false, on/off,
 * yes/no); "no_x = 0" is "x = 1". Returns 1 on success, 0 for a bad value, -1
 * for an unknown key. */
static int apply_setting(translate_args *a, const char *key, const char *value,
                         setting_source *source)
{
    nmt_options *o = &a->engine;
    int flag;
    if (!strcmp(key, "model")) {
        if (strlen(value) >= sizeof a->model_path)
            return 0;
        strcpy(a->model_path, value);
        return 1;
    }
    if (!strcmp(key, "input") || !strcmp(key, "output")) {
        char *path = !strcmp(key, "input") ? a->input_path : a->output_path;
        if (!value[0] || strlen(value) >= sizeof a->input_path)
            return 0;
        strcpy(path, value);
        return 1;
    }
    if (!strcmp(key, "alignment"))
        return app_parse_bool(value, &a->alignment);
    if (!strcmp(key, "attention")) {
        /* the output field needs the engine's weights (and only then costs memory) */
        if (!app_parse_bool(value, &a->attention))
            return 0;
        o->attention_weights = a->attention;
        return 1;
    }
    if (!strcmp(key, "token_scores"))
        return app_parse_bool(value, &a->token_scores);
    if (!strcmp(key, "quiet"))
        return app_parse_bool(value, &a->quiet);
    if (!strcmp(key, "log_level")) {
        /* error: --quiet; warning: notes but no progress; info: both */
        if (!strcmp(value, "error"))
            a->quiet = 1;
        else if (!strcmp(value, "warning"))
            a->quiet = 0, a->progress = 0;
        else if (!strcmp(value, "info"))
            a->quiet = 0;
        else
            return 0;
        return 1;
    }
    if (!strcmp(key, "mpi"))
        return app_parse_bool(value, &a->mpi);
    if (!strcmp(key, "skip_lines")) {
        int n;
        if (!app_parse_int(value, 0, 2147483647, &n))
            return 0;
        a->skip_lines = n;
        return 1;
    }
    if (!strcmp(key, "workers"))
        return app_parse_int(value, 1, 256, &a->workers);
    if (!strcmp(key, "devices")) {
        a->device_given = 1;
        return app_parse_devices(value, a);
    }
    if (!strcmp(key, "max_batch_tokens"))
        return app_parse_int(value, 0, 1 << 24, &o->max_batch_tokens);
    if (!strcmp(key, "max_memory"))
        return app_parse_size(value, &o->max_memory);
    if (!strcmp(key, "input_format") || !strcmp(key, "output_format")) {
        const int input = !strcmp(key, "input_format");
        int *field = input ? &o->input_tokens : &o->output_tokens;
        if (!strcmp(value, "auto"))
            *field = -1;
        else if (!strcmp(value, input ? "raw" : "text"))
            *field = 0;
        else if (!strcmp(value, "tokens"))
            *field = 1;
        else
            return 0;
        return 1;
    }
    if (!strcmp(key, "n_best_format")) {
        if (strcmp(value, "tsv") && strcmp(value, "marian"))
            return 0;
        a->nbest_marian = !strcmp(value, "marian");
        return 1;
    }
    if (!strcmp(key, "beam"))
        return app_parse_int(value, 1, 256, &o->beam_size);
    if (!strcmp(key, "n_best"))
        return app_parse_int(value, 1, 256, &o->n_best);
    if (!strcmp(key, "alpha"))
        return app_parse_float(value, 0.0, 10.0, &o->alpha);
    if (!strcmp(key, "max_len_a")) {
        a->max_len_given = 1;
        return app_parse_float(value, 0.0, 100.0, &o->max_len_a);
    }
    if (!strcmp(key, "max_len_b")) {
        a->max_len_given = 1;
        return app_parse_int(value, 0, 10000, &o->max_len_b);
    }
    if (!strcmp(key, "search_rules")) {
        if (!strcmp(value, "v1"))
            o->search_rules = NMT_SEARCH_RULES_V1;
        else if (!strcmp(value, "onmt"))
            o->search_rules = NMT_SEARCH_RULES_ONMT;
        else
            return 0;
        return 1;
    }
    if (!strcmp(key, "batch_size")) { /* sentences: 1..4096, checked by app_resolve_batching */
        a->batch_size_given = 1;
        return app_parse_int(value, 1, 1 << 24, &o->batch_size);
    }
    const int batching = app_batching_setting(a, key, value); /* batch_type, maxi_batch */
    if (batching >= 0)
        return batching;
    if (!strcmp(key, "device"))
        return app_parse_device(value, &o->device);
    if (!strcmp(key, "device_index")) {
        a->device_given = 1;
        return app_parse_int(value, 0, 1024, &o->device_index);
    }
    if (!strcmp(key, "unk_replace"))
        return app_parse_bool(value, &o->unk_replace);
    if (!strcmp(key, "no_unk_replace")) {
        if (!app_parse_bool(value, &flag))
            return 0;
        o->unk_replace = !flag;
        return 1;
    }
    if (!strcmp(key, "scores"))
        return app_parse_bool(value, &a->scores);
    if (!strcmp(key, "max_line_bytes"))
        return app_parse_int(value, 1, 1 << 30, &o->max_line_bytes);
    if (!strcmp(key, "max_src_tokens"))
        return app_parse_int(value, 1, 4096, &o->max_src_tokens);
    if (!strcmp(key, "lsh")) {
        source->lsh = 1;
        return app_parse_lsh(value, &o->shrink);
    }
    if (!strcmp(key, "top_words")) {
        source->top_words = 1;
        if (!app_parse_int(value, 1, 1 << 24, &o->shrink.top))
            return 0;
        o->shrink.mode = NMT_SHRINK_TOP;
        return 1;
    }
    if (!strcmp(key, "lsh_share"))
        return app_parse_share(value, &o->shrink.share);
    if (!strcmp(key, "lsh_lists")) {
        if (!strcmp(value, "hits"))
            o->shrink.lists = NMT_LSH_LISTS_HITS;
        else if (!strcmp(value, "direct"))
            o->shrink.lists = NMT_LSH_LISTS_DIRECT;
        else if (!strcmp(value, "auto"))
            o->shrink.lists = NMT_LSH_LISTS_AUTO;
        else
            return 0;
        return 1;
    }
    if (!strcmp(key, "lsh_seed")) {
        if (!app_parse_int(value, 0, 2147483647, &flag))
            return 0;
        o->shrink.seed = (unsigned)flag;
        return 1;
    }
    if (!strcmp(key, "stats") || !strcmp(key, "timing")) {
        if (strlen(value) >= sizeof a->stats_path)
            return 0;
        strcpy(a->stats_path, value);
        o->collect_stats = !strcmp(key, "stats") ? 2 : 1;
        a->stats_option = o->collect_stats == 2 ? "--stats" : "--timing";
        return 1;
    }
    if (!strcmp(key, "cuda_graphs"))
        return app_parse_bool(value, &o->cuda_graphs);
    if (!strcmp(key, "batch_invariant"))
        return app_parse_bool(value, &o->batch_invariant);
    if (!strcmp(key, "warmup"))
        return app_parse_bool(value, &o->warmup);
    if (!strcmp(key, "cpu_kernels")) {
        static const char *const kinds[] = {"auto", "blas", "reference"}; /* nmt_cpu_kernels */
        for (int k = 0; k < 3; k++)
            if (!strcmp(value, kinds[k])) {
                o->cpu_kernels = (nmt_cpu_kernels)k;
                return 1;
            }
        return 0;
    }
    if (!strcmp(key, "threads"))
        return app_parse_int(value, 1, 1024, &o->threads);
    if (!strcmp(key, "sparse")) {
        static const char *const modes[] = {"auto", "on", "off"}; /* nmt_sparse order */
        for (int m = 0; m < 3; m++)
            if (!strcmp(value, modes[m])) {
                o->sparse = (nmt_sparse)m;
                return 1;
            }
        return 0;
    }
    if (!strcmp(key, "precision")) {
        for (int p = NMT_PRECISION_FP32; p <= NMT_PRECISION_AUTO; p++)
            if (!strcmp(value, app_precision_name((nmt_precision)p))) {
                o->precision = (nmt_precision)p;
                return 1;
            }
        return 0;
    }
    if (!strcmp(key, "check_every"))
        return app_parse_int(value, 1, 64, &o->check_every);
    if (!strcmp(key, "progress") || !strcmp(key, "no_progress")) {
        if (!app_parse_bool(value, &flag))
            return 0;
        a->progress = !strcmp(key, "progress") ? flag : !flag;
        return 1;
    }
    return -1;
}

/* Debian's inih passes no line number to the handler; ini_parse returns the
 * first failing line, so the handler keeps the reason and the caller adds it. */
enum { kMaxIniKeys = 256 };

typedef struct ini_context {
    translate_args *args;
    const app_extra_settings *extra;
    setting_source source;
    char reason[256];
    char keys[kMaxIniKeys][48]; /* the keys given so far: each may be given once */
    int n_keys;
} ini_context;

/* 1 when name was given before in the file (in any section: both set the
 * same setting), else records it. A repeat is a mistake the file's reader
 * cannot see (which one wins?), so it is refused. */
static int repeated_key(ini_context *ctx, const char *name)
{
    for (int i = 0; i < ctx->n_keys; i++)
        if (!strcmp(ctx->keys[i], name))
            return 1;
    if (ctx->n_keys < kMaxIniKeys && strlen(name) < sizeof ctx->keys[0])
        strcpy(ctx->keys[ctx->n_keys++], name);
    return 0;
}

static int on_ini_setting(void *user, const char *section, const char *name, const char *value)
{
    ini_context *ctx = user;
    const app_extra_settings *extra = ctx->extra;
    if (ctx->reason[0])
        return 0;
    const int own = extra && extra->section && !strcmp(section, extra->section);
    if (section[0] && strcmp(section, "translate") && !own) {
        snprintf(ctx->reason, sizeof ctx->reason, "unknown section [%s] (use [translate]%s%s%s)",
                 section, extra ? " or [" : "", extra ? extra->section : "", extra ? "]" : "");
        return 0;
    }
    if (repeated_key(ctx, name)) {
        snprintf(ctx->reason, sizeof ctx->reason, "key '%s' is given twice (give each key once)",
                 name);
        return 0;
    }
    int r = own ? -1 : apply_setting(ctx->args, name, value, &ctx->source);
    if (r < 0 && extra)
        r = extra->apply(extra->ctx, name, value);
    if (r < 0)
        snprintf(ctx->reason, sizeof ctx->reason, "unknown key '%s'", name);
    else if (r == 0)
        snprintf(ctx->reason, sizeof ctx->reason, "bad value for %s: '%s'", name, value);
    return r == 1;
}

static const char *option_key(int code)
{
    switch (code) {
    case 'm': return "model";
    case 'i': return "input";
    case 'o': return "output";
    case OPT_ALIGNMENT: return "alignment";
    case OPT_ATTENTION: return "attention";
    case OPT_TOKEN_SCORES: return "token_scores";
    case OPT_QUIET: return "quiet";
    case OPT_LOG_LEVEL: return "log_level";
    case OPT_NBEST_FORMAT: return "n_best_format";
    case OPT_INPUT_FORMAT: return "input_format";
    case OPT_MAX_BATCH_TOKENS: return "max_batch_tokens";
    case OPT_MAX_MEMORY: return "max_memory";
    case OPT_SPARSE: return "sparse";
    case OPT_WORKERS: return "workers";
    case OPT_DEVICES: return "devices";
    case OPT_SKIP_LINES: return "skip_lines";
    case OPT_MPI: return "mpi";
    case OPT_OUTPUT_FORMAT: return "output_format";
    case 'b': return "beam";
    case 'n': return "n_best";
    case OPT_ALPHA: return "alpha";
    case OPT_MAX_LEN_A: return "max_len_a";
    case OPT_MAX_LEN_B: return "max_len_b";
    case OPT_SEARCH_RULES: return "search_rules";
    case OPT_BATCH_SIZE: return "batch_size";
    case OPT_BATCH_TYPE: return "batch_type";
    case OPT_MAXI_BATCH: return "maxi_batch";
    case OPT_DEVICE: return "device";
    case OPT_DEVICE_INDEX: return "device_index";
    case OPT_MAX_LINE_BYTES: return "max_line_bytes";
    case OPT_MAX_SRC_TOKENS: return "max_src_tokens";
    case OPT_LSH: return "lsh";
    case OPT_TOP_WORDS: return "top_words";
    case OPT_LSH_SHARE: return "lsh_share";
    case OPT_LSH_SEED: return "lsh_seed";
    case OPT_LSH_LISTS: return "lsh_lists";
    case OPT_STATS: return "stats";
    case OPT_TIMING: return "timing";
    case OPT_CUDA_GRAPHS: return "cuda_graphs";
    case OPT_BATCH_INVARIANT: return "batch_invariant";
    case OPT_CPU_KERNELS: return "cpu_kernels";
    case OPT_THREADS: return "threads";
    case OPT_WARMUP: return "warmup";
    case OPT_CHECK_EVERY: return "check_every";
    case OPT_PRECISION: return "precision";
    case OPT_NO_UNK_REPLACE: return "no_unk_replace";
    case OPT_SCORES: return "scores";
    case OPT_PROGRESS: return "progress";
    case OPT_NO_PROGRESS: return "no_progress";
    }
    return NULL;
}

static const char *const shrink_conflict = "lsh and top_words (--lsh and --top-words) exclude "
                                           "each other";

/* Reads the INI file named by -c into args. A directory opens (and reads as
 * nothing) on Linux, so it is refused by name; a read error is not an empty
 * file. Returns EXIT_OK or EXIT_USAGE with the reason in message. */
static int read_config(translate_args *args, const app_extra_settings *extra, char *message,
                       size_t message_size)
{
    const char *path = args->config_path;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(message, message_size, "%s: cannot open: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(message, message_size, "%s: is a directory, not an INI file", path);
        fclose(f);
        return EXIT_USAGE;
    }
    ini_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(message, message_size, "%s: out of memory", path);
        fclose(f);
        return EXIT_USAGE;
    }
    ctx->args = args;
    ctx->extra = extra;
    int r = ini_parse_file(f, on_ini_setting, ctx);
    const int read_error = ferror(f);
    const int read_errno = errno;
    fclose(f);
    int code = EXIT_USAGE;
    if (read_error)
        snprintf(message, message_size, "%s: cannot read: %s", path, strerror(read_errno));
    else if (r != 0)
        snprintf(message, message_size, "%s:%d: %s", path, r,
                 ctx->reason[0] ? ctx->reason : "syntax error");
    else if (ctx->source.lsh && ctx->source.top_words)
        snprintf(message, message_size, "%s: %s", path, shrink_conflict);
    else
        code = EXIT_OK;
    free(ctx);
    return code;
}

int translate_args_parse(int argc, char **argv, translate_args *args, char *message,
                         size_t message_size)
{
    return app_args_parse(argc, argv, args, NULL, message, message_size);
}

enum { kBaseOptions = sizeof long_options / sizeof long_options[0] - 1, kExtraCode = 1000,
       kExtraMax = 32 };

/* The long options of translate, then the program's own (codes kExtraCode + i). */
static int merge_options(const app_extra_settings *extra, struct option *merged)
{
    int n = 0;
    for (int i = 0; i < kBaseOptions; i++)
        merged[n++] = long_options[i];
    for (int i = 0; extra && extra->options[i].name; i++) {
        if (i >= kExtraMax)
            return 0;
        merged[n] = extra->options[i];
        merged[n].flag = NULL;
        merged[n++].val = kExtraCode + i;
    }
    merged[n] = (struct option){NULL, 0, NULL, 0};
    return 1;
}

int app_args_parse(int argc, char **argv, translate_args *args, const app_extra_settings *extra,
                   char *message, size_t message_size)
{
    /* The leading ':' makes a missing value ':' (not '?', "unknown option"). */
    const char *short_options = ":m:c:i:o:b:n:hV";
    struct option merged[kBaseOptions + kExtraMax + 1];
    if (!merge_options(extra, merged)) {
        snprintf(message, message_size, "too many program options");
        return EXIT_USAGE;
    }
    memset(args, 0, sizeof *args);
    nmt_options_init(&args->engine);
    args->progress = -1;
    args->workers = 1;
    args->limit_lines = -1;
    message[0] = 0;

    /* Pass 1: only the config file, so its settings come before the command line's. */
    opterr = 0;
    optind = 0;
    int code;
    while ((code = getopt_long(argc, argv, short_options, merged, NULL)) != -1) {
        if (code == 'c') {
            if (strlen(optarg) >= sizeof args->config_path) {
                snprintf(message, message_size, "--config: path too long");
                return EXIT_USAGE;
            }
            strcpy(args->config_path, optarg);
        }
    }
    if (args->config_path[0] && read_config(args, extra, message, message_size) != EXIT_OK)
        return EXIT_USAGE;

    /* Pass 2: the command line. */
    setting_source command_line = {0, 0};
    opterr = 0;
    optind = 0;
    while ((code = getopt_long(argc, argv, short_options, merged, NULL)) != -1) {
        if (code >= kExtraCode) {
            /* The program's own: the key is the option's name with '_' for '-'. */
            char key[64];
            snprintf(key, sizeof key, "%s", merged[kBaseOptions + code - kExtraCode].name);
            for (char *p = key; *p; p++)
                *p = *p == '-' ? '_' : *p;
            if (extra->apply(extra->ctx, key, optarg ? optarg : "1") != 1) {
                snprintf(message, message_size, "bad value for --%s: '%s'",
                         merged[kBaseOptions + code - kExtraCode].name, optarg ? optarg : "");
                return EXIT_USAGE;
            }
            continue;
        }
        const char *key = option_key(code);
        if (key) {
            /* A flag (no value) is its key set to 1. */
            if (apply_setting(args, key, optarg ? optarg : "1", &command_line) != 1) {
                char flag[32];
                snprintf(flag, sizeof flag, "%s", key);
                for (char *p = flag; *p; p++)
                    *p = *p == '_' ? '-' : *p;
                snprintf(message, message_size, "bad value for --%s: '%s'", flag, optarg);
                return EXIT_USAGE;
            }
            continue;
        }
        switch (code) {
        case 'c': break;
        case 'h': args->show_help = 1; break;
        case 'V': args->show_version = 1; break;
        case ':':
            snprintf(message, message_size, "option %s needs a value", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            snprintf(message, message_size, "unknown option '%s' (see --help)", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        snprintf(message, message_size,
                 "unexpected argument '%s' (input comes from stdin or -i FILE)", argv[optind]);
        return EXIT_USAGE;
    }
    if (args->show_help || args->show_version)
        return EXIT_OK;
    if (!args->model_path[0]) {
        snprintf(message, message_size, "no model: give -m MODEL (or model = ... in the config)");
        return EXIT_USAGE;
    }
    if (command_line.lsh && command_line.top_words) {
        snprintf(message, message_size, "command line: %s", shrink_conflict);
        return EXIT_USAGE;
    }
    /* onmt_translate's length limit is min(250, 1.25 S + 5): a user switching
     * to its rules gets its limit too, unless they set one. */
    if (args->engine.search_rules == NMT_SEARCH_RULES_ONMT && !args->max_len_given) {
        args->engine.max_len_a = 1.25f;
        args->engine.max_len_b = 5;
    }
    if (app_resolve_batching(args, message, message_size) != EXIT_OK)
        return EXIT_USAGE;
    if (args->engine.n_best > args->engine.beam_size) {
        snprintf(message, message_size, "--n-best %d is larger than --beam %d",
                 args->engine.n_best, args->engine.beam_size);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}
