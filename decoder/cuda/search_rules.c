/* search_rules.c: the GPU search's side of sampling, the logit rules and the
 * coverage penalty (cuda_rules.h, docs/decoding.md): their buffers,
 * allocated at the first batch that asks for them and then only grown
 * (never inside the step loop), and a batch's nmt_cuda_rules over them.
 *
 * One device buffer holds the step's own top-K lists ([rows, K] for any K
 * up to max(2B, NMT_SAMPLING_MAX_TOPK)), their lse and workspace, each
 * row's draw, the sentences' keys and the suppressed sequences; the rows'
 * hypotheses (the logit rules read them back from the history) grow with
 * the history; the coverage [N, 2, B, max_src] is its own. */
#include "cuda_search_impl.h"

#include "softmax_topk.h"

#include <stdlib.h>
#include <string.h>

/* Offsets of the rules' buffer (base NULL: sizes only); 256-byte aligned. */
typedef struct rules_layout {
    size_t top_values, top_ids, lse, words, log_probs, keys, suppress, suppress_at, workspace,
        total;
} rules_layout;

static int32_t rules_top_k(const nmt_cuda_search_config *c)
{
    return 2 * c->beam > NMT_SAMPLING_MAX_TOPK ? 2 * c->beam : NMT_SAMPLING_MAX_TOPK;
}

static rules_layout layout_rules(const nmt_cuda_search *s, size_t workspace_bytes)
{
    const size_t R = (size_t)s->config.max_sentences * (size_t)s->config.beam;
    const size_t K = (size_t)rules_top_k(&s->config), N = (size_t)s->config.max_sentences;
    rules_layout l;
    size_t at = 0;
#define PLACE(field, bytes) (l.field = at, at = (at + (bytes) + 255) / 256 * 256)
    PLACE(top_values, R * K * sizeof(float));
    PLACE(top_ids, R * K * sizeof(int32_t));
    PLACE(lse, R * sizeof(float));
    PLACE(words, R * sizeof(int32_t));
    PLACE(log_probs, R * sizeof(float));
    PLACE(keys, N * sizeof(uint64_t));
    PLACE(suppress, NMT_SUPPRESS_MAX_WORDS * sizeof(int32_t));
    PLACE(suppress_at, NMT_SUPPRESS_MAX_WORDS * sizeof(int32_t));
    PLACE(workspace, workspace_bytes);
#undef PLACE
    l.total = at;
    return l;
}

/* The buffer, once; the top-K's counters zeroed (every call leaves them so). */
static nmt_status create_rules(nmt_cuda_search *s, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const int32_t R = s->config.max_sentences * s->config.beam;
    const size_t workspace =
        nmt_cuda_softmax_topk_workspace_size(R, s->model.vocab_size, rules_top_k(&s->config));
    if (workspace == SIZE_MAX)
        return nmt_error_set(err, NMT_STATUS_ERROR_CUDA, "cuda search: cannot size the rules' "
                             "top-K workspace");
    const rules_layout l = layout_rules(s, workspace);
    NMT_CUDA_TRY(cudaMalloc(&s->rules_dev, l.total));
    NMT_CUDA_TRY(cudaMemsetAsync(s->rules_dev, 0, l.total, s->stream));
    NMT_CUDA_TRY(cudaHostAlloc((void **)&s->rules_host,
                               sizeof(uint64_t) * (size_t)s->config.max_sentences +
                                   2 * sizeof(int32_t) * NMT_SUPPRESS_MAX_WORDS,
                               cudaHostAllocDefault));
    s->rules_bytes = l.total;
    char *base = (char *)s->rules_dev;
    nmt_cuda_rules *r = &s->rules_buf;
    memset(r, 0, sizeof *r);
    r->top_values = (float *)(base + l.top_values);
    r->top_ids = (int32_t *)(base + l.top_ids);
    r->lse = (float *)(base + l.lse);
    r->sample_word = (int32_t *)(base + l.words);
    r->sample_log_prob = (float *)(base + l.log_probs);
    r->line_keys = (const uint64_t *)(base + l.keys);
    r->suppress = (const int32_t *)(base + l.suppress);
    r->suppress_at = (const int32_t *)(base + l.suppress_at);
    r->workspace = base + l.workspace;
    r->workspace_bytes = workspace;
    return NMT_STATUS_OK;
cleanup:
    nmt_cuda_search_free_rules(s);
    return status;
}

void nmt_cuda_search_free_rules(nmt_cuda_search *s)
{
    cudaFree(s->rules_dev);
    if (s->rules_host)
        cudaFreeHost(s->rules_host);
    cudaFree(s->rule_tokens);
    cudaFree(s->coverage_dev);
    s->rules_dev = s->rule_tokens = NULL;
    s->rules_host = NULL;
    s->coverage_dev = NULL;
    s->rules_bytes = 0;
    s->rule_tokens_cap = 0;
}

size_t nmt_cuda_search_rules_bytes(const nmt_cuda_search *s)
{
    const nmt_cuda_search_config *c = &s->config;
    const size_t rows = (size_t)c->max_sentences * (size_t)c->beam;
    return s->rules_bytes + rows * (size_t)s->rule_tokens_cap * sizeof(int32_t) +
           (s->coverage_dev ? 2 * rows * (size_t)c->max_src * sizeof(float) : 0);
}

nmt_status nmt_cuda_search_ensure_rules(nmt_cuda_search *s, const nmt_search_config *config,
                                        int32_t hist_len, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_search_params *p = &config->params;
    const int rules = nmt_search_has_logit_rules(p);
    if (!rules && !nmt_search_sampling(p) && p->coverage_penalty == NMT_COVERAGE_NONE)
        return NMT_STATUS_OK;
    if (!s->rules_dev)
        NMT_TRY(create_rules(s, err));
    const size_t rows = (size_t)s->config.max_sentences * (size_t)s->config.beam;
    if (rules && hist_len > s->rule_tokens_cap) {
        cudaFree(s->rule_tokens);
        s->rule_tokens = NULL;
        s->rule_tokens_cap = 0;
        NMT_CUDA_TRY(cudaMalloc((void **)&s->rule_tokens,
                                rows * (size_t)hist_len * sizeof(int32_t)));
        s->rule_tokens_cap = hist_len;
    }
    if (p->coverage_penalty != NMT_COVERAGE_NONE && !s->coverage_dev)
        NMT_CUDA_TRY(cudaMalloc((void **)&s->coverage_dev,
                                2 * rows * (size_t)s->config.max_src * sizeof(float)));
cleanup:
    return status;
}

nmt_status nmt_cuda_search_rules(nmt_cuda_search *s, const nmt_search_config *config,
                                 nmt_cuda_rules *out, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_search_params *p = &config->params;
    memset(out, 0, sizeof *out); /* a graph key: padding too */
    if (!s->rules_dev)
        return NMT_STATUS_OK; /* nothing asked (nmt_cuda_search_ensure_rules) */
    *out = s->rules_buf;
    out->logit_rules = nmt_search_has_logit_rules(p);
    out->min_length = p->min_length;
    out->no_repeat_ngram_size = p->no_repeat_ngram_size;
    out->repetition_penalty = nmt_search_repetition(p) ? p->repetition_penalty : 0.0f;
    out->ban_id = p->ban_unk ? config->unk_id : -1;
    out->pad_id = config->pad_id;
    out->bos_id = config->bos_id;
    out->eos_id = config->eos_id;
    out->tokens = out->logit_rules ? s->rule_tokens : NULL;
    out->tokens_ld = out->logit_rules ? s->rule_tokens_cap : 0;
    out->sampling = nmt_search_sampling(p);
    out->topk = p->sampling_topk;
    out->topp = out->sampling ? p->sampling_topp : 1.0f;
    out->temperature = out->sampling ? p->sampling_temperature : 1.0f;
    out->seed = out->sampling ? p->seed : 0;
    /* The step's own lists: the sampling top-K, or the beam's 2B after the rules. */
    out->top_k = out->sampling ? (p->sampling_topk > 0 ? p->sampling_topk : 0)
                 : out->logit_rules ? 2 * p->beam_size
                                    : 0;
    out->batch_invariant = s->config.batch_invariant;
    /* The suppressed sequences, and where each starts, in one copy. */
    int32_t n = 0;
    int32_t *host = (int32_t *)(s->rules_host + s->config.max_sentences);
    for (int32_t at = 0; at < p->suppress_words; at += 1 + p->suppress[at])
        host[NMT_SUPPRESS_MAX_WORDS + n++] = at;
    out->n_suppress = n;
    if (n > 0) {
        memcpy(host, p->suppress, sizeof(int32_t) * (size_t)p->suppress_words);
        NMT_CUDA_TRY(cudaMemcpyAsync((void *)out->suppress, host,
                                     sizeof(int32_t) * (size_t)p->suppress_words,
                                     cudaMemcpyHostToDevice, s->stream));
        NMT_CUDA_TRY(cudaMemcpyAsync((void *)out->suppress_at, host + NMT_SUPPRESS_MAX_WORDS,
                                     sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice,
                                     s->stream));
    }
cleanup:
    return status;
}

nmt_status nmt_cuda_search_upload_keys(nmt_cuda_search *s, int32_t n, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    if (!s->rules_dev || n < 1)
        return NMT_STATUS_OK;
    NMT_CUDA_TRY(cudaMemcpyAsync((void *)s->rules_buf.line_keys, s->rules_host,
                                 sizeof(uint64_t) * (size_t)n, cudaMemcpyHostToDevice,
                                 s->stream));
cleanup:
    return status;
}

void nmt_cuda_search_beam_rules(const nmt_cuda_search *s, const nmt_search_config *config,
                                const int32_t *src_len, nmt_beam_device *b)
{
    const nmt_search_params *p = &config->params;
    b->sampling = nmt_search_sampling(p);
    b->coverage = NULL;
    if (p->coverage_penalty == NMT_COVERAGE_NONE)
        return;
    b->coverage = s->coverage_dev;
    b->coverage_stride = s->config.max_src;
    b->coverage_kind = (int32_t)p->coverage_penalty;
    b->coverage_beta = p->coverage_beta;
    b->step_weights = s->model.attn_weights;
    b->src_len = src_len;
}

/* What sampling, the logit rules and the coverage penalty need: the whole
 * vocabulary's logits (columns are words), word ids in it, the attention
 * weights. */
nmt_status nmt_cuda_search_check_rules(const nmt_cuda_search *self,
                                       const nmt_search_config *config, nmt_error *err)
{
    const nmt_status bad = NMT_STATUS_ERROR_ARGUMENT;
    const nmt_search_params *p = &config->params;
    const int32_t V = self->model.vocab_size;
    if (self->model.shrunk && (nmt_search_sampling(p) || nmt_search_has_logit_rules(p)))
        return nmt_error_set(err, bad, "cuda search: sampling and the logit rules need the full "
                             "output layer (no shrinking)");
    if (p->ban_unk && (config->unk_id < 0 || config->unk_id >= V))
        return nmt_error_set(err, bad, "cuda search: unk_id %d outside [0, %d)", config->unk_id,
                             V);
    for (int32_t at = 0; at < p->suppress_words; at += 1 + p->suppress[at])
        for (int32_t j = 1; j <= p->suppress[at]; j++)
            if (p->suppress[at + j] >= V)
                return nmt_error_set(err, bad, "cuda search: suppressed word id %d outside "
                                     "[0, %d)", p->suppress[at + j], V);
    if (p->coverage_penalty != NMT_COVERAGE_NONE && !self->model.attn_weights)
        return nmt_error_set(err, bad, "cuda search: the coverage penalty needs the network's "
                             "attention weights");
    return NMT_STATUS_OK;
}

nmt_status nmt_cuda_search_rules_step(nmt_cuda_search *self, const nmt_cuda_step_args *w,
                                      nmt_cuda_scores *scores, const nmt_beam_next_rows *next,
                                      int *done, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    const nmt_cuda_rules *rules = w->rules;
    const nmt_cuda_step_model *model = &self->model;
    const int32_t n_rows = w->n_active * w->beam;
    *done = 0;
    if (rules->logit_rules) /* the model's logits, before any top-K of the search's */
        NMT_TRY(nmt_cuda_logit_rules(w->b, rules, w->n_active, self->act_dev,
                                     (float *)scores->logits, scores->ld_logits,
                                     model->vocab_size, self->stream, err));
    if (rules->sampling) {
        NMT_TRY(nmt_cuda_sample_draw(w->b, rules, w->n_active, self->act_dev, scores->logits,
                                     scores->ld_logits, model->vocab_size, w->excluded,
                                     self->stream, err));
        NMT_TRY(nmt_cuda_sample_step(w->b, rules, w->n_active, self->act_dev,
                                     scores->attn_argmax, next, self->stream, err));
        *done = 1;
    } else if (rules->logit_rules) {
        /* The 2B best of the edited logits, renormalized, replace the model's. */
        NMT_TRY(nmt_cuda_softmax_topk_variant(
            n_rows, model->vocab_size, scores->logits, scores->ld_logits, rules->top_k,
            w->excluded, 2, rules->top_values, rules->top_ids, rules->lse, rules->workspace,
            rules->workspace_bytes,
            rules->batch_invariant ? NMT_SOFTMAX_TOPK_AUTO_INVARIANT : NMT_SOFTMAX_TOPK_AUTO,
            self->stream, err));
        scores->top_values = rules->top_values;
        scores->top_ids = rules->top_ids;
        scores->lse = rules->lse;
    }
cleanup:
    return status;
}
