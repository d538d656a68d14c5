/* translator.h: private to engine/: the translator's state, and what the
 * service (engine/service.c) needs from a translator beyond the public API:
 * translating with search options other than the translator's own, per
 * batch or as a stream of lines (continuous batching,
 * engine/translator_stream.c). */
#ifndef NMT_TRANSLATOR_H
#define NMT_TRANSLATOR_H

#include "nmt.h"

#include "backend.h"
#include "source_batch.h"
#include "tokenizer.h"

struct nmt_translator {
    const nmt_model *model;
    nmt_options options;
    nmt_search_config search;
    nmt_backend *backend;
    nmt_source_builder source;
    nmt_search_result *search_results; /* [batch_size]: the next batch's, one half of */
    nmt_search_result *results_pair;   /* [2 * batch_size] (the other half with the finisher) */
    nmt_shrink shrink;                 /* the backend's view of options.shrink */
    nmt_stats stats;                   /* collect_stats: the translator's part */
    int32_t *suppress;                 /* options.suppress as word ids (search_params.h) */
    int32_t suppress_words;
    int32_t capacity;                  /* the most rows a sentence may take (the backend's
                                          beam: the beam or the samples) */
    int attention_model;               /* the backend's model gives attention weights
                                          (the coverage penalty reads them) */
};

/* nmt_options.sampling_topk (CTranslate2's: 1 off, 0 every word) as
 * nmt_search_params has it (0 off, NMT_SAMPLING_ALL every word). */
static inline int32_t nmt_sampling_topk_of(int topk)
{
    return topk == 1 ? 0 : topk == 0 ? NMT_SAMPLING_ALL : (int32_t)topk;
}

/* engine/translator_rules.c: the search parameters of the options
 * (suppress: the ids of o->suppress, nmt_suppress_parse). */
nmt_search_params nmt_options_search_params(const nmt_options *options, const int32_t *suppress,
                                            int32_t suppress_words);

/* engine/translator_rules.c: suppressed sequences from text (one a line,
 * target tokens separated by spaces) into *ids (search_params.h's layout;
 * malloc'd, NULL for none) and *n_words; an unknown token or a sequence
 * over the limits is refused, naming its line. */
nmt_status nmt_suppress_parse(const nmt_model *model, const char *text, int32_t **ids,
                              int32_t *n_words, nmt_error *err);

/* The search options a request may vary are an nmt_search_params (the rest
 * of nmt_search_config is the translator's). The translator's own: */
nmt_search_params nmt_translator_search(const nmt_translator *translator);

/* Refuses overrides the translator cannot run (beam above its own, ranges
 * as nmt_options'), naming the field. */
nmt_status nmt_translator_check_search(const nmt_translator *translator,
                                       const nmt_search_params *overrides, nmt_error *err);

/* A line's target tokens (translator_forced.c): a prefix its translation
 * continues, or the translation it scores. */
typedef struct nmt_line_target {
    nmt_tokens tokens; /* as tokenized: their text is the output's for these tokens */
    int32_t *ids;      /* [tokens.n]: target vocabulary ids (UNK for an unknown word) */
} nmt_line_target;
void nmt_line_target_clear(nmt_line_target *target);

/* What one call decodes: its lines' source tokens and, when it has them,
 * their targets and sampling keys. */
typedef struct nmt_call_lines {
    const nmt_tokens *tokens;       /* [n_lines] */
    const nmt_line_target *targets; /* [n_lines] or NULL */
    int score;                      /* 1: score the targets (nmt_score_batch); 0: they are
                                       prefixes */
    const uint64_t *line_keys;      /* [n_lines] or NULL (a line's index): each line's
                                       sampling key */
} nmt_call_lines;

/* What nmt_translator_run is asked (zero fields: none). */
typedef struct nmt_run_args {
    const char *const *lines;           /* [n_lines]: the sources */
    const char *const *targets;         /* [n_lines] or NULL: with score, the translations to
                                           score, else the prefixes to continue */
    int n_lines;
    int score;
    const nmt_search_params *overrides; /* NULL: the translator's */
    const uint64_t *line_keys;          /* [n_lines] or NULL: the lines' sampling keys
                                           (NULL: their indices) */
} nmt_run_args;

/* nmt_translate_batch, nmt_translate_batch_prefix, nmt_score_batch and a
 * service's batch of requests: args' lines decoded into results. */
nmt_status nmt_translator_run(nmt_translator *translator, const nmt_run_args *args,
                              nmt_result *results, nmt_error *err);

/* The most tokens a target (or prefix) may have: the longest translation
 * the translator's own options allow (the max length for max_src_tokens
 * source tokens, EOS excluded), and at least max_src_tokens. */
int32_t nmt_translator_max_target_tokens(const nmt_translator *translator);

/* A line's target (text NULL: none), after nmt_translator_prepare_line
 * said in *searched whether its source goes to the search: tokenized as a
 * source is, the tokens looked up in the target vocabulary. *searched = 0
 * with *result the line's error when it cannot be used (bad UTF-8, more
 * tokens than nmt_translator_max_target_tokens, a special token, none to
 * score, an empty source to score against). Fails only when out of
 * memory. */
nmt_status nmt_translator_prepare_target(const nmt_translator *translator, const char *text,
                                         int score, nmt_line_target *target, nmt_result *result,
                                         int *searched, nmt_error *err);

/* NMT_STATUS_ERROR_ARGUMENT when prefixes (1: the call has some) cannot be
 * forced: the translator shrinks its output layer. */
nmt_status nmt_translator_prefixes_usable(const nmt_translator *translator, int prefixes,
                                          nmt_error *err);

/* The sentences per line of a call: n_best with return_alternatives (each line
 * is searched as one sentence an alternative), else 1. */
int32_t nmt_translator_sentences_per_line(const nmt_search_config *search,
                                          const nmt_call_lines *call);

/* The batch's forced tokens (nmt_search_config.forced) for lines[0 ..
 * count), each line `per_line` sentences (rank k = its k-th with
 * alternatives): arrays allocated in *forced, freed by
 * nmt_translator_forced_free. Without targets and alternatives, *forced
 * stays empty and the search gets none. */
typedef struct nmt_batch_forced {
    nmt_forced_tokens view;
    int32_t *offset, *ids, *alternative;
} nmt_batch_forced;
nmt_status nmt_translator_forced_batch(const nmt_call_lines *call, const int32_t *lines,
                                       int32_t count, int32_t per_line, nmt_batch_forced *forced,
                                       nmt_error *err);
void nmt_translator_forced_free(nmt_batch_forced *forced);

/* Alternatives: found[k * per_line + j], j < per_line (each one hypothesis
 * at most), become found[k]'s hypotheses in rank order, k < count. */
nmt_status nmt_translator_merge_alternatives(nmt_search_result *found, int32_t count,
                                             int32_t per_line, nmt_error *err);

/* The search configuration with overrides (NULL: the translator's). */
nmt_status nmt_translator_search_config(const nmt_translator *translator,
                                        const nmt_search_params *overrides,
                                        nmt_search_config *search, nmt_error *err);

/* A line's source tokens as the translator counts (max_batch_tokens) and
 * searches them: as given (input_tokens), the model's SentencePiece pieces
 * (tokenizer=sentencepiece), or the engine's tokenizer. Reads only the
 * translator's options and model, so any thread may call it. */
nmt_status nmt_translator_tokenize(const nmt_translator *translator, const char *line,
                                   size_t len, nmt_tokens *tokens, nmt_error *err);

/* One input line: tokens and *searched = 1 when it goes to the search;
 * else *result is final (a per-line error, or the empty line's empty
 * translation). Fails only when out of memory. */
nmt_status nmt_translator_prepare_line(const nmt_translator *translator, const char *line,
                                       nmt_tokens *tokens, nmt_result *result, int *searched,
                                       nmt_error *err);
/* A search result as the line's result (detokenized, unknown words
 * replaced); target (NULL: none): the hypotheses begin with its tokens,
 * which keep their own text. */
nmt_status nmt_translator_fill_result(const nmt_translator *translator,
                                      const nmt_search_result *found, const nmt_tokens *source,
                                      const nmt_line_target *target, nmt_result *result,
                                      nmt_error *err);
/* A batch's search results as its lines' results: results[lines[k]] from
 * found[k], k < count, up to the first failure (none when fill is 0), then
 * every found[k] cleared. */
nmt_status nmt_translator_fill_batch(const nmt_translator *translator, nmt_search_result *found,
                                     const nmt_call_lines *call, const int32_t *lines,
                                     int32_t count, int fill, nmt_result *results,
                                     nmt_error *err);
/* *result = the error (status, message) and nothing else. */
void nmt_translator_line_error(nmt_result *result, nmt_status status, const char *message);

/* A translator without a backend: the model and options only, for the host
 * work any thread may do for translators of those options (the pipeline's
 * preparing and, in a dry run, nmt_translator_echo). Its options are
 * checked and resolved as nmt_translator_create's; free with
 * nmt_translator_free; never decodes. */
nmt_status nmt_translator_create_host(const nmt_model *model, const nmt_options *options,
                                      nmt_translator **translator, nmt_error *err);

/* 1 when lines prepared by `a` may be decoded by `b`: the same model and
 * input options (what nmt_translate_prepared checks). */
int nmt_translator_same_input(const nmt_translator *a, const nmt_translator *b);

/* nmt_translator_prepare's result (engine/translator_prepare.c): what
 * nmt_translate_batch does before decoding, for one call's lines. */
struct nmt_prepared {
    const nmt_model *model; /* and the options the lines were checked against */
    int max_line_bytes, max_src_tokens, input_tokens;
    int n_lines, capacity;    /* lines, and room for (nmt_prepared_reset) */
    int32_t n_valid;
    nmt_tokens *tokens;       /* [n_lines] */
    nmt_result *results;      /* [n_lines]: the answers of lines not searched */
    nmt_line_target *targets; /* [n_lines], or NULL: the call has none */
    int score;                /* the targets are to be scored, not continued */
    unsigned char *searched;  /* [n_lines]: 1 for a line that goes to the search */
    int32_t *order;           /* [n_valid]: the searched lines, longest first */
    int32_t *scratch;         /* [n_lines]: the sort's */
    int used;                 /* translated already: its answers were moved out */
    uint64_t *line_keys;      /* [capacity] or NULL (a line's index): sampling keys
                                 (nmt_prepared_set_line_keys) */
};

/* nmt_translator_prepare in steps: create for n_lines lines, with targets
 * (NMT_TARGETS_PREFIX, _SCORE) or without; fill lines [first, first +
 * count) and their targets (NULL: none, a prefix-less line each; disjoint
 * ranges may be filled on several threads at once; lines and targets are
 * indexed from 0); then order, once every line is filled. create and fill
 * fail only when out of memory. */
nmt_status nmt_prepared_create(const nmt_translator *translator, int n_lines,
                               nmt_targets targets, nmt_prepared **prepared, nmt_error *err);
nmt_status nmt_prepared_fill(const nmt_translator *translator, nmt_prepared *prepared,
                             const char *const *lines, const char *const *targets, int first,
                             int count, nmt_error *err);
/* nmt_translator_prepare with targets (NULL: none; score: to be scored,
 * else prefixes). */
nmt_status nmt_translator_prepare_call(const nmt_translator *translator,
                                       const char *const *lines, const char *const *targets,
                                       int n_lines, int score, nmt_prepared **prepared,
                                       nmt_error *err);
void nmt_prepared_order(nmt_prepared *prepared);
/* Clears its lines (tokens, answers) and keeps the room: reset makes it a
 * new call of n_lines <= capacity lines, as create does (the pipeline
 * reuses one a window). */
void nmt_prepared_clear(nmt_prepared *prepared);
void nmt_prepared_reset(nmt_prepared *prepared, int n_lines);

/* A dry run's answer for a searched line (translator_result.c): one
 * hypothesis of unknown words, each aligned with the source token at its
 * position, turned into text by the same code as a translation (with
 * unk_replace, the source's own tokens, detokenized); score and log_prob 0,
 * with attention_weights one-hot rows. */
nmt_status nmt_translator_echo(const nmt_translator *translator, const nmt_tokens *source,
                               nmt_result *result, nmt_error *err);

/* engine/translator_memory.c: the one batch-halving policy. A batch that
 * does not fit is halved (nmt_batch_half), down to one sentence: at create
 * against max_memory (fit_memory) and against the device itself
 * (create_cuda), and while translating (decode_lines' out-of-memory split).
 * fit_memory: options.max_memory (> 0, CUDA) lowers config->max_sentences
 * until the CUDA backend's measured device bytes fit; NMT_STATUS_ERROR_MEMORY,
 * naming the need and the cap, when one sentence does not. A no-op on the
 * CPU. create_cuda: the CUDA backend, config->max_sentences halved while the
 * device runs out of memory creating it. */
static inline int32_t nmt_batch_half(int32_t sentences)
{
    return sentences / 2;
}
nmt_status nmt_translator_fit_memory(const nmt_model *model, const nmt_options *options,
                                     nmt_backend_config *config, nmt_error *err);
nmt_status nmt_translator_create_cuda(const nmt_model *model, int device_index,
                                      nmt_backend_config *config, nmt_backend **backend,
                                      nmt_error *err);
/* engine/translator_finish.c: a thread that turns a batch's search results
 * into its lines' results while the caller decodes the next batch. Submit
 * waits for the batch before, hands found (count results, cleared once
 * read) over and returns; it fails, clearing found, once any earlier batch
 * failed. Stop waits for the last batch, ends the thread and returns the
 * first failure. */
typedef struct nmt_finisher nmt_finisher;
nmt_status nmt_finisher_start(const nmt_translator *translator, nmt_finisher **finisher,
                              nmt_error *err);
nmt_status nmt_finisher_submit(nmt_finisher *finisher, nmt_search_result *found,
                               const nmt_call_lines *call, const int32_t *lines, int32_t count,
                               nmt_result *results, nmt_error *err);
nmt_status nmt_finisher_stop(nmt_finisher *finisher, nmt_error *err);

/* Decodes lines[0..count) (indices into the call's lines and results) as
 * one batch (scores them with call->score; a line is per_line sentences,
 * nmt_translator_sentences_per_line) and fills their results, on the
 * finisher's thread when there is one (then done only by
 * nmt_finisher_stop); a batch the device has no memory for is
 * decoded again as two halves, down to one sentence, which then gets a
 * per-line NMT_STATUS_ERROR_MEMORY. Fails (the caller fails the call) on any
 * other decode error and on host out of memory. */
nmt_status nmt_translator_decode_lines(nmt_translator *translator,
                                       const nmt_search_config *search,
                                       const nmt_call_lines *call, const int32_t *lines,
                                       int32_t count, nmt_result *results,
                                       nmt_finisher *finisher, nmt_error *err);

/* Lines that arrive while the translator decodes (continuous batching). */
typedef struct nmt_line_stream {
    void *self;
    /* Up to `room` lines and their tags; wait != 0 blocks until at least one
     * or the end (0 lines then: the end), wait == 0 returns at once. A line
     * must stay valid until its result is delivered. */
    int (*pull)(void *self, int room, int wait, const char **lines, void **tags);
    /* Exactly once per pulled line: its result, moved in (the callee owns
     * it and clears it with nmt_result_clear). */
    void (*deliver)(void *self, void *tag, nmt_result *result);
    int check_every; /* steps between the points where lines join and leave (0: the
                        translator's check_every) */
    /* NULL, or the sampling key of a pulled line by its tag (NULL: 0). */
    uint64_t (*line_key)(void *self, void *tag);
} nmt_line_stream;

/* 1 when the translator's backend decodes streams (CUDA), else 0. */
int nmt_translator_can_stream(const nmt_translator *translator);

/* Decodes the lines of `lines` as they come, with one search configuration
 * (overrides, NULL: the translator's), until pull reports the end and every
 * line is delivered: a line joins the running search at the next check
 * point instead of waiting for a batch. Gives each line the result
 * nmt_translate_batch would give it. Returns an error only when the search
 * fails (every line it held has then been delivered with that error). */
nmt_status nmt_translator_stream(nmt_translator *translator,
                                 const nmt_search_params *overrides,
                                 const nmt_line_stream *lines, nmt_error *err);

#endif /* NMT_TRANSLATOR_H */
