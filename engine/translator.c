/* translator.c: the public translation API. Lines are validated and
 * tokenized here; bad lines get a per-line error and never stop the others.
 * Valid lines are sorted by length (longest first, so each batch has little
 * spread), decoded batch by batch on the chosen backend, and their
 * hypotheses detokenized with unknown-word replacement (model-v1). A model
 * that says tokenizer=sentencepiece has its text split into, and joined
 * back from, the pieces of its own SentencePiece model. */
#include "translator.h"

#include "backend.h"
#include "clock.h"
#include "error.h"
#include "forced_search.h"
#include "model.h"
#include "sentencepiece.h"
#include "source_batch.h"
#include "tokenizer.h"
#include "cuda_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void nmt_options_init(nmt_options *options)
{
    memset(options, 0, sizeof *options);
    options->beam_size = 5;
    options->n_best = 1;
    options->alpha = 1.0f;
    options->max_len_a = 2.0f;
    options->max_len_b = 10;
    options->batch_size = 32;
    options->max_line_bytes = 4096;
    options->max_src_tokens = 256;
    options->unk_replace = 1;
    options->device = NMT_DEVICE_AUTO;
    options->device_index = 0;
    options->cuda_graphs = 1;
    options->warmup = 1;
    options->check_every = 1;
    options->input_tokens = -1; /* the model file's tokenizer key decides */
    options->output_tokens = -1;
    options->search_rules = NMT_SEARCH_RULES_V1;
    /* 16-bit where the model file's weights are (docs/performance.md,
     * "Defaults"): a line's output has the same bits in any batch at every
     * precision (docs/decoding.md, "Batch invariance"). */
    options->precision = NMT_PRECISION_AUTO;
    /* Shrinking stays off: LSH always loses some BLEU against the full
     * softmax. The LSH parameters are the Europarl grid's best trade-off over
     * both beams (docs/lsh.md, "Defaults", which gives the measurement). */
    options->shrink.mode = NMT_SHRINK_NONE;
    options->shrink.k = 8;
    options->shrink.u = 3;
    options->shrink.w = 500;
    options->shrink.top = 2000;
    options->shrink.threshold = 6;
    options->shrink.share = NMT_LSH_SHARE_SENTENCE;
    options->shrink.seed = 1;
    options->shrink.lists = NMT_LSH_LISTS_AUTO;
    options->batch_invariant = 1;
    options->cpu_kernels = NMT_CPU_KERNELS_AUTO;
    options->threads = 0; /* the cores */
    options->cpu_isa = NMT_CPU_ISA_AUTO;
    options->sampling_topk = 1; /* CTranslate2's defaults: no sampling, no logit rule */
    options->sampling_topp = 1.0f;
    options->sampling_temperature = 1.0f;
    options->repetition_penalty = 1.0f;
    options->coverage_penalty = NMT_COVERAGE_NONE;
}

int nmt_cuda_available(void)
{
    return nmt_cuda_device_count();
}

#define REQUIRE(cond, ...)                                                    \
    if (!(cond))                                                              \
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, __VA_ARGS__)

static nmt_status check_options(const nmt_options *o, nmt_error *err)
{
    const nmt_search_params search = nmt_options_search_params(o, NULL, 0);
    nmt_status status = nmt_search_params_check(&search, NMT_SEARCH_MAX_BEAM, err);
    if (status == NMT_STATUS_OK)
        status = nmt_search_params_check_rules(&search, o->search_rules, err);
    if (status != NMT_STATUS_OK)
        return status;
    REQUIRE(o->repetition_penalty > 0.0f, "repetition_penalty %g: must be in (0, 100] (1: off)",
            o->repetition_penalty);
    REQUIRE(o->shrink.mode == NMT_SHRINK_NONE ||
                (!nmt_search_sampling(&search) && !nmt_search_has_logit_rules(&search) &&
                 !o->suppress),
            "shrink: sampling and the logit rules need the full output layer");
    REQUIRE(o->batch_size >= 1 && o->batch_size <= 4096, "batch_size %d: must be in 1..4096",
            o->batch_size);
    REQUIRE(!o->return_alternatives || o->batch_size >= o->n_best,
            "return_alternatives: batch_size %d must be at least n_best (%d): a line is "
            "searched as one sentence an alternative", o->batch_size, o->n_best);
    REQUIRE(o->max_line_bytes >= 1, "max_line_bytes %d: must be positive", o->max_line_bytes);
    REQUIRE(o->max_src_tokens >= 1 && o->max_src_tokens <= 4096,
            "max_src_tokens %d: must be in 1..4096", o->max_src_tokens);
    REQUIRE(o->device == NMT_DEVICE_AUTO || o->device == NMT_DEVICE_CPU ||
                o->device == NMT_DEVICE_CUDA,
            "device %d: unknown", (int)o->device);
    REQUIRE(o->collect_stats >= 0 && o->collect_stats <= 2, "collect_stats %d: must be 0, 1 or 2",
            o->collect_stats);
    REQUIRE(o->cuda_graphs == 0 || o->cuda_graphs == 1, "cuda_graphs %d: must be 0 or 1",
            o->cuda_graphs);
    REQUIRE(o->warmup == 0 || o->warmup == 1, "warmup %d: must be 0 or 1", o->warmup);
    REQUIRE(o->fused_output == 0 || o->fused_output == 1, "fused_output %d: must be 0 or 1",
            o->fused_output);
    REQUIRE(o->precision >= NMT_PRECISION_FP32 && o->precision <= NMT_PRECISION_INT8,
            "precision %d: unknown", (int)o->precision);
    REQUIRE(o->check_every >= 1 && o->check_every <= 64, "check_every %d: must be in 1..64",
            o->check_every);
    REQUIRE(o->max_batch_tokens >= 0, "max_batch_tokens %d: must be 0 (off) or positive",
            o->max_batch_tokens);
    REQUIRE(o->input_tokens >= -1 && o->input_tokens <= 1,
            "input_tokens %d: must be -1 (the model's), 0 or 1", o->input_tokens);
    REQUIRE(o->output_tokens >= -1 && o->output_tokens <= 1,
            "output_tokens %d: must be -1 (the model's), 0 or 1", o->output_tokens);
    REQUIRE(o->search_rules == NMT_SEARCH_RULES_V1 || o->search_rules == NMT_SEARCH_RULES_ONMT,
            "search_rules %d: unknown", (int)o->search_rules);
    REQUIRE(o->max_memory >= 0, "max_memory %lld: must be 0 (no cap) or positive",
            (long long)o->max_memory);
    REQUIRE(o->cpu_kernels >= NMT_CPU_KERNELS_AUTO && o->cpu_kernels <= NMT_CPU_KERNELS_FAST,
            "cpu_kernels %d: unknown", (int)o->cpu_kernels);
    REQUIRE(o->cpu_isa >= NMT_CPU_ISA_AUTO && o->cpu_isa <= NMT_CPU_ISA_AVX512,
            "cpu_isa %d: unknown", (int)o->cpu_isa);
    REQUIRE(o->threads >= 0 && o->threads <= 1024, "threads %d outside [0, 1024]", o->threads);
    REQUIRE(o->sparse == NMT_SPARSE_AUTO || o->sparse == NMT_SPARSE_ON ||
                o->sparse == NMT_SPARSE_OFF,
            "sparse %d: unknown", (int)o->sparse);
    REQUIRE(o->attention_weights == 0 || o->attention_weights == 1,
            "attention_weights %d: must be 0 or 1", o->attention_weights);
    const nmt_shrink_options *sh = &o->shrink;
    REQUIRE(sh->mode == NMT_SHRINK_NONE || sh->mode == NMT_SHRINK_LSH || sh->mode == NMT_SHRINK_TOP,
            "shrink mode %d: unknown", (int)sh->mode);
    if (sh->mode != NMT_SHRINK_NONE) {
        /* 2B finite candidates besides PAD and BOS keep every beam full. */
        REQUIRE(sh->top >= 2 * o->beam_size, "shrink top %d: must be at least 2 * beam_size (%d)",
                sh->top, 2 * o->beam_size);
        REQUIRE(sh->share == NMT_LSH_SHARE_BATCH || sh->share == NMT_LSH_SHARE_SENTENCE ||
                    sh->share == NMT_LSH_SHARE_ROW,
                "shrink share %d: unknown", (int)sh->share);
    }
    if (sh->mode == NMT_SHRINK_LSH) {
        REQUIRE(sh->threshold >= 1 && sh->threshold <= sh->w,
                "lsh threshold t=%d: must be in 1..W (%d)", sh->threshold, sh->w);
        REQUIRE(sh->lists == NMT_LSH_LISTS_HITS || sh->lists == NMT_LSH_LISTS_DIRECT ||
                    sh->lists == NMT_LSH_LISTS_AUTO,
                "lsh lists %d: unknown", (int)sh->lists);
    }
#undef REQUIRE
    return NMT_STATUS_OK;
}

/* The backends' view of options->shrink (each backend builds the index it
 * needs from it). */
static void setup_shrink(nmt_translator *t)
{
    const nmt_shrink_options *o = &t->options.shrink;
    const int32_t V = t->model->hp.tgt_vocab;
    t->shrink.mode = o->mode;
    t->shrink.share = o->share;
    t->shrink.n_always = 4 + o->top < V ? 4 + o->top : V;
    t->shrink.threshold = o->mode == NMT_SHRINK_LSH ? o->threshold : 1;
    t->shrink.index = (nmt_lsh_index_config){o->k, o->u, o->w, o->seed};
    t->shrink.tables = NULL;
    t->shrink.lists = o->lists;
}

void nmt_translator_free(nmt_translator *t)
{
    if (!t)
        return;
    if (t->backend)
        t->backend->vtable->free(t->backend);
    nmt_source_builder_free(&t->source);
    free(t->results_pair);
    free(t->suppress);
    free(t);
}

/* The translator's models (one, or an ensemble's: the first gives the
 * text, tokens and sizes), options (checked, and the model's defaults
 * resolved), search and shrink configuration: everything but the backend. */
static nmt_status translator_begin(const nmt_model *const *models, const float *weights,
                                   int n_models, const nmt_options *options,
                                   nmt_translator **translator, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_translator *t = NULL;
    if (!translator || !models || (n_models >= 1 && !models[0]))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translator_create: NULL argument");
    *translator = NULL;
    nmt_options defaults;
    if (!options) {
        nmt_options_init(&defaults);
        options = &defaults;
    }
    NMT_TRY(check_options(options, err));
    NMT_ALLOC(t, 1);
    NMT_TRY(nmt_ensemble_make(models, weights, n_models, &t->ensemble, err));
    const nmt_model *model = models[0];
    t->model = model;
    t->options = *options;
    if (t->options.input_tokens < 0)
        t->options.input_tokens = model->hp.pretokenized;
    if (t->options.output_tokens < 0)
        t->options.output_tokens = model->hp.pretokenized;
    /* auto: the arithmetic of the file's weights (an fp16 file's are exact in
     * fp16), as CTranslate2's compute_type "default" keeps the model's type. */
    t->options.precision = nmt_precision_for_model(model, t->options.precision);
    if (options->suppress)
        NMT_TRY(nmt_suppress_parse(model, options->suppress, &t->suppress, &t->suppress_words,
                                   err));
    t->search = (nmt_search_config){
        .params = nmt_options_search_params(options, t->suppress, t->suppress_words),
        .pad_id = NMT_PAD_ID,
        .bos_id = NMT_BOS_ID,
        .eos_id = NMT_EOS_ID,
        .rules = options->search_rules,
        .attention = options->attention_weights,
        .unk_id = NMT_UNK_ID,
    };
    if (options->shrink.mode != NMT_SHRINK_NONE)
        setup_shrink(t);
    *translator = t;
    return NMT_STATUS_OK;
cleanup:
    nmt_translator_free(t);
    return status;
}

nmt_status nmt_translator_create_host(const nmt_model *model, const nmt_options *options,
                                      nmt_translator **translator, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_translator *t = NULL;
    if (translator)
        *translator = NULL;
    NMT_TRY(translator_begin(&model, NULL, 1, options, &t, err));
    NMT_TRY(nmt_source_builder_init(&t->source, model, t->options.batch_size,
                                    t->options.max_src_tokens, err));
    *translator = t;
    return NMT_STATUS_OK;
cleanup:
    nmt_translator_free(t);
    return status;
}

int nmt_translator_same_input(const nmt_translator *a, const nmt_translator *b)
{
    return a->model == b->model && a->options.max_line_bytes == b->options.max_line_bytes &&
           a->options.max_src_tokens == b->options.max_src_tokens &&
           a->options.input_tokens == b->options.input_tokens;
}

nmt_status nmt_translator_create(const nmt_model *model, const nmt_options *options,
                                 nmt_translator **translator, nmt_error *err)
{
    return nmt_translator_create_ensemble(&model, NULL, 1, options, translator, err);
}

nmt_status nmt_translator_create_ensemble(const nmt_model *const *models, const float *weights,
                                          int n_models, const nmt_options *options,
                                          nmt_translator **translator, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_translator *t = NULL;
    if (translator)
        *translator = NULL;
    NMT_TRY(translator_begin(models, weights, n_models, options, &t, err));
    options = &t->options;
    const nmt_model *model = t->model;
    const nmt_ensemble *wrapped = NULL;
    NMT_TRY(nmt_ensemble_wrapped(&t->ensemble, options->shrink.mode, &wrapped, err));
    t->wrapped = wrapped != NULL;
    NMT_TRY(nmt_translator_check_ensemble(t, &t->search.params, err));
    /* The most rows a sentence may take: the beam, or the samples. */
    const int32_t width = nmt_search_width(&t->search.params);
    const int coverage = options->coverage_penalty != NMT_COVERAGE_NONE;
    nmt_backend_config config = {
        .max_sentences = options->batch_size,
        .beam = width > options->beam_size ? width : options->beam_size,
        .max_src = options->max_src_tokens,
        .shrink = options->shrink.mode != NMT_SHRINK_NONE ? &t->shrink : NULL,
        .collect_stats = options->collect_stats,
        .cuda_graphs = options->cuda_graphs,
        .warmup = options->warmup,
        .check_every = options->check_every,
        .precision = t->options.precision,
        .sparse = nmt_ensemble_any_sparse(&t->ensemble) ? options->sparse : NMT_SPARSE_OFF,
        .attention = options->attention_weights,
        .attention_model = options->attention_weights || coverage,
        .batch_invariant = options->batch_invariant != 0,
        .fused_output = options->fused_output,
        .cpu_kernels = options->cpu_kernels,
        .threads = options->threads,
        .cpu_isa = options->cpu_isa,
        .ensemble = wrapped,
    };
    if (options->sparse == NMT_SPARSE_ON && !nmt_ensemble_any_sparse(&t->ensemble)) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "sparse on: the model stores no "
                               "matrix sparse (section SPRS; python/export/prune.py writes one)");
        goto cleanup;
    }
    NMT_TRY(nmt_translator_fit_memory(model, options, &config, err));
    nmt_device device = options->device;
    if (device == NMT_DEVICE_AUTO && nmt_cuda_available()) {
        /* auto: a CUDA backend that cannot run here is not an error */
        status = nmt_translator_create_cuda(model, options->device_index, &config, &t->backend,
                                            err);
        if (status != NMT_STATUS_OK && status != NMT_STATUS_ERROR_UNSUPPORTED)
            goto cleanup;
    } else if (device == NMT_DEVICE_CUDA) {
        NMT_TRY(nmt_translator_create_cuda(model, options->device_index, &config, &t->backend,
                                           err));
    }
    if (!t->backend)
        NMT_TRY(nmt_cpu_backend_create(model, &config, &t->backend, err));
    const int32_t batch = config.max_sentences, max_src = options->max_src_tokens;
    t->options.batch_size = batch;
    t->stats.batch_size = batch;
    t->capacity = config.beam;
    /* The CPU network keeps every step's weights; CUDA's only when asked. */
    t->attention_model = config.attention_model || t->backend->device == NMT_DEVICE_CPU;
    t->stats.precision = t->backend->device == NMT_DEVICE_CPU &&
                                 t->options.precision != NMT_PRECISION_INT8
                             ? NMT_PRECISION_FP32
                             : t->options.precision;
    NMT_TRY(nmt_source_builder_init(&t->source, model, batch, max_src, err));
    NMT_ALLOC(t->results_pair, 2 * (size_t)batch);
    t->search_results = t->results_pair;
    *translator = t;
    return NMT_STATUS_OK;
cleanup:
    nmt_translator_free(t);
    return status;
}

nmt_device nmt_translator_device(const nmt_translator *translator)
{
    return translator->backend->device;
}

nmt_status nmt_translator_stats(const nmt_translator *translator, nmt_stats *stats,
                                nmt_error *err)
{
    if (!translator || !stats)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translator_stats: NULL argument");
    *stats = translator->stats;
    if (translator->options.collect_stats)
        translator->backend->vtable->add_stats(translator->backend, stats);
    return NMT_STATUS_OK;
}

static void set_line_error(nmt_result *result, nmt_status status, const char *message)
{
    result->status = status;
    snprintf(result->message, sizeof result->message, "%s", message);
}

nmt_status nmt_translator_search_config(const nmt_translator *t,
                                        const nmt_search_params *overrides,
                                        nmt_search_config *search, nmt_error *err)
{
    *search = t->search;
    if (overrides)
        search->params = *overrides;
    /* The translator's own too: max_memory may have lowered its batch size
     * below return_alternatives' n_best. */
    return nmt_translator_check_search(t, &search->params, err);
}

nmt_status nmt_translate_batch(nmt_translator *t, const char *const *lines, int n_lines,
                               nmt_result *results, nmt_error *err)
{
    const nmt_run_args args = {.lines = lines, .n_lines = n_lines};
    return nmt_translator_run(t, &args, results, err);
}

nmt_search_params nmt_translator_search(const nmt_translator *t)
{
    return t->search.params;
}

/* The whole call failed: every line gets the call's error and no line
 * keeps a partial answer (results hold valid, possibly empty, answers). */
static void fail_lines(nmt_result *results, int n_lines, nmt_status status, const nmt_error *err)
{
    for (int i = 0; i < n_lines; i++) {
        nmt_result_clear(&results[i]);
        set_line_error(&results[i], status, err ? err->message : nmt_status_string(status));
    }
}

/* Decodes a prepared call's lines into results[0 .. n_lines). */
static nmt_status run_prepared(nmt_translator *t, nmt_prepared *p,
                               const nmt_search_params *overrides, nmt_result *results,
                               nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!t || !p || (!results && p->n_lines > 0))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translate_prepared: bad arguments");
    if (p->model != t->model || p->max_line_bytes != t->options.max_line_bytes ||
        p->max_src_tokens != t->options.max_src_tokens ||
        p->input_tokens != t->options.input_tokens)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "translate_prepared: the lines were "
                             "prepared for another model or other input options");
    if (p->used)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "translate_prepared: these lines were translated already");
    p->used = 1;
    const int n_lines = p->n_lines;
    /* The answers prepare gave (refused and empty lines) move to the caller. */
    memcpy(results, p->results, sizeof *results * (size_t)n_lines);
    memset(p->results, 0, sizeof *p->results * (size_t)n_lines);
    nmt_search_config search;
    NMT_TRY(nmt_translator_search_config(t, overrides, &search, err));
    NMT_TRY(nmt_translator_prefixes_usable(t, p->targets && !p->score, err));
    if (p->targets)
        NMT_TRY(nmt_forced_params_check(&search.params, p->score, err));
    const nmt_call_lines call = {.tokens = p->tokens, .targets = p->targets, .score = p->score,
                                 .line_keys = p->line_keys};
    /* A line is per_line sentences of the batch (alternatives). */
    const int32_t per_line = nmt_translator_sentences_per_line(&search, &call);
    const int32_t batch = t->options.batch_size / per_line;
    const int32_t max_tokens = t->options.max_batch_tokens;
    const double started = nmt_clock_seconds();
    nmt_finisher *finisher = NULL;
    for (int32_t first = 0, count = 0; first < p->n_valid; first += count) {
        /* batch_size sentences at most, and max_batch_tokens source tokens
         * (a longer sentence goes alone). */
        int64_t in_batch = 0;
        for (count = 0; count < batch && first + count < p->n_valid; count++) {
            const int32_t n = p->tokens[p->order[first + count]].n * per_line;
            if (max_tokens > 0 && count > 0 && in_batch + n > max_tokens)
                break;
            in_batch += n;
        }
        if (first == 0 && count < p->n_valid) {
            /* More than one batch: the results of one are turned into text
             * while the next decodes (without the thread, here). */
            nmt_error ignored = {0};
            if (nmt_finisher_start(t, &finisher, &ignored) != NMT_STATUS_OK)
                finisher = NULL;
        }
        /* Split and retried there when the device runs out of memory. */
        NMT_TRY(nmt_translator_decode_lines(t, &search, &call, p->order + first, count,
                                            results, finisher, err));
    }
    {
        nmt_finisher *last = finisher;
        finisher = NULL;
        NMT_TRY(nmt_finisher_stop(last, err));
    }
    if (t->options.collect_stats) {
        t->stats.sentences += n_lines;
        t->stats.decode_seconds += nmt_clock_seconds() - started;
    }
cleanup:
    if (finisher) { /* its batch is done before the lines are failed */
        nmt_error ignored = {0};
        nmt_finisher_stop(finisher, &ignored);
    }
    if (status != NMT_STATUS_OK)
        fail_lines(results, n_lines, status, err);
    return status;
}

nmt_status nmt_translate_prepared(nmt_translator *t, nmt_prepared *prepared, nmt_result *results,
                                  nmt_error *err)
{
    return run_prepared(t, prepared, NULL, results, err);
}

nmt_status nmt_translator_run(nmt_translator *t, const nmt_run_args *args,
                              nmt_result *results, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    nmt_prepared *p = NULL;
    const int n_lines = args ? args->n_lines : 0;
    if (!t || !args || (!args->lines && n_lines > 0) || (!results && n_lines > 0) ||
        n_lines < 0 || (args->score && !args->targets && n_lines > 0))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "%s: bad arguments",
                             args && args->score ? "score_batch" : "translate_batch");
    status = nmt_translator_prepare_call(t, args->lines, args->targets, n_lines, args->score, &p,
                                         err);
    if (status == NMT_STATUS_OK && args->line_keys)
        status = nmt_prepared_set_line_keys(p, args->line_keys, err);
    if (status == NMT_STATUS_OK) {
        status = run_prepared(t, p, args->overrides, results, err);
    } else {
        for (int i = 0; i < n_lines; i++) /* the caller's memory: nothing to free */
            results[i] = (nmt_result){0};
        fail_lines(results, n_lines, status, err);
    }
    nmt_prepared_free(p);
    return status;
}
