/* cuda_rules.h: the logit rules and random sampling on the device
 * (docs/decoding.md), the GPU twins of decoder/logit_rules.c and
 * decoder/beam_sample.c, over the rules of decoder/logit_rules.h: the
 * rules edit a step's logits in place before the log-softmax
 * (decoder/cuda/logit_rules.cu); a sampling step draws each live row's word
 * and splits the samples (decoder/cuda/sample_step.cu). Rows and sentences
 * as beam_step.h has them; every pointer is a device pointer. Plain C. */
#ifndef NMT_CUDA_RULES_H
#define NMT_CUDA_RULES_H

#include "beam_step.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the rules of a batch ask and the buffers they use (a step's graph
 * key holds it: every field is set, padding zeroed). */
typedef struct nmt_cuda_rules {
    int32_t logit_rules;       /* 1: the logit rules run before the log-softmax */
    int32_t min_length, no_repeat_ngram_size;
    float repetition_penalty;  /* 0: off */
    int32_t ban_id;            /* ban_unk's UNK, or -1 */
    int32_t pad_id, bos_id, eos_id;
    const int32_t *suppress;   /* [suppress words], search_params.h's layout */
    const int32_t *suppress_at; /* [n_suppress]: where each sequence's length is */
    int32_t n_suppress;
    int32_t *tokens;           /* [rows, tokens_ld]: each row's hypothesis (scratch) */
    int32_t tokens_ld;         /* >= the history's steps */
    int32_t sampling;          /* 1: a sampling step instead of the beam step */
    int32_t topk;              /* sampling: 1..NMT_SAMPLING_MAX_TOPK, or NMT_SAMPLING_ALL */
    float topp, temperature;
    uint64_t seed;
    const uint64_t *line_keys; /* [n]: each sentence's key (logit_rules.h) */
    /* The step's own top-K (the logit rules' renormalized lists, or the
     * sampling candidates): [rows, top_k] and [rows] */
    float *top_values, *lse;
    int32_t *top_ids;
    int32_t top_k;
    void *workspace;           /* the top-K's (nmt_cuda_softmax_topk_workspace_size) */
    size_t workspace_bytes;
    int32_t batch_invariant;   /* the top-K's plan: one at every row count */
    int32_t *sample_word;      /* [rows]: each row's draw (-1: none) */
    float *sample_log_prob;    /* [rows]: its log-probability */
} nmt_cuda_rules;

/* The logit rules on the live rows of the step (act, n_active; a done
 * sentence's, a dead slot's and a forced step's rows are left as they
 * are): each row's
 * hypothesis read back from b's history into r->tokens, then its logits
 * (row p * B + k at logits + row * ld) rescaled and banned in place. */
nmt_status nmt_cuda_logit_rules(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                int32_t n_active, const int32_t *act, float *logits, int32_t ld,
                                int32_t vocab, void *stream, nmt_error *err);

/* Sampling: each live row's word and log-probability (r->sample_word,
 * r->sample_log_prob) from its logits: the top-K into r's lists and the
 * pick of logit_rules.h, or every word (NMT_SAMPLING_ALL) in word order;
 * at a sentence's forced step its forced word (b->forced,
 * nmt_rule_sample_forced), at its max-length step EOS, either with its log p
 * from the logits. excluded: PAD and BOS. */
nmt_status nmt_cuda_sample_draw(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                int32_t n_active, const int32_t *act, const float *logits,
                                int32_t ld, int32_t vocab, const int32_t *excluded,
                                void *stream, nmt_error *err);

/* The sampling step's split (decoder/beam_sample.c's): every live slot
 * takes its draw; an EOS finishes it, another word continues it in its own
 * slot; done when no sample lives on or at the max-length step. With next,
 * the next step's rows and *b->step + 1, as nmt_cuda_beam_step. */
nmt_status nmt_cuda_sample_step(const nmt_beam_device *b, const nmt_cuda_rules *r,
                                int32_t n_active, const int32_t *act,
                                const int32_t *attn_argmax, const nmt_beam_next_rows *next,
                                void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif

#endif /* NMT_CUDA_RULES_H */
