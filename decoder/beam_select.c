/* beam_select.c: the CPU search's choice of a sentence's candidates
 * (beam_search_impl.h, nmt_beam_choose_candidates): the K best of its
 * B x V (hypothesis, word) pairs under the search rules' order, or at a
 * forced step (forced_tokens.h) its one forced candidate.
 *
 * Selecting the K best (2B or B) uses a bounded min-heap of K entries (the
 * root is the worst kept candidate), O(B V log B) per sentence and step
 * rather than a sort of B * V. Candidates are visited in (row, word) order,
 * so a candidate whose score merely equals the root's is worse than it
 * under the tie rule and is skipped: the heap keeps exactly the right set. */
#include "beam_search_impl.h"

#include "forced_search.h"
#include "search_rules.h"

#include <stddef.h>
#include <stdint.h>

/* a is worse than b: b comes before it in the candidates' order. */
static int candidate_worse(const candidate *a, const candidate *b)
{
    return nmt_rule_candidate_before(b->score, b->hyp, b->word, a->score, a->hyp, a->word);
}

/* Restores the min-heap (worst at the root) below position i. */
static void heap_sift_down(candidate *heap, int32_t n, int32_t i)
{
    for (;;) {
        int32_t worst = i, left = 2 * i + 1, right = 2 * i + 2;
        if (left < n && candidate_worse(&heap[left], &heap[worst]))
            worst = left;
        if (right < n && candidate_worse(&heap[right], &heap[worst]))
            worst = right;
        if (worst == i)
            return;
        candidate tmp = heap[i];
        heap[i] = heap[worst];
        heap[worst] = tmp;
        i = worst;
    }
}

static void heap_sift_up(candidate *heap, int32_t i)
{
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!candidate_worse(&heap[i], &heap[parent]))
            return;
        candidate tmp = heap[i];
        heap[i] = heap[parent];
        heap[parent] = tmp;
        i = parent;
    }
}

/* Offers one candidate to a heap of capacity k holding *n entries. */
static void heap_offer(candidate *heap, int32_t *n, int32_t k, float score, int32_t hyp,
                       int32_t word)
{
    if (!nmt_rule_selectable(score))
        return;
    if (*n < k) {
        heap[*n] = (candidate){score, hyp, word};
        heap_sift_up(heap, (*n)++);
    } else if (score > heap[0].score) {
        /* Visiting order is (hyp, word) ascending, so an equal score loses the tie. */
        heap[0] = (candidate){score, hyp, word};
        heap_sift_down(heap, k, 0);
    }
}

/* Fills best[0..return) with the (up to) k best candidates of a sentence,
 * best first, ranked by (score + log p) / penalty (v1: penalty 1, PAD and BOS
 * masked; onmt: nothing masked, OpenNMT-py divides in float32 and so does
 * this). row_scores and log_probs point at the sentence's first row. */
static int32_t select_candidates(const float *row_scores, const float *log_probs, int32_t n_alive,
                                 int32_t vocab_size, int32_t k, int only_eos, int mask_specials,
                                 float penalty, const nmt_search_config *config, candidate *best)
{
    int32_t n = 0;
    for (int32_t hyp = 0; hyp < n_alive; hyp++) {
        const float *lp = log_probs + (size_t)hyp * (size_t)vocab_size;
        float base = row_scores[hyp];
        if (only_eos) {
            heap_offer(best, &n, k, nmt_rule_rank(base, lp[config->eos_id], penalty), hyp,
                       config->eos_id);
            continue;
        }
        /* A block of words is offered only if one of them ranks above the
         * full heap's worst: heap_offer's own test, against a bar that only
         * rises, so skipping the others changes nothing (one branch-free
         * pass over most of the vocabulary). */
        enum { kBlock = 32 };
        for (int32_t w0 = 0; w0 < vocab_size; w0 += kBlock) {
            const int32_t end = w0 + kBlock < vocab_size ? w0 + kBlock : vocab_size;
            if (n == k) {
                const float bar = best[0].score;
                int above = 0;
                for (int32_t w = w0; w < end; w++)
                    above |= nmt_rule_rank(base, lp[w], penalty) > bar;
                if (!above)
                    continue;
            }
            for (int32_t w = w0; w < end; w++) {
                if (mask_specials && (w == config->pad_id || w == config->bos_id))
                    continue;
                heap_offer(best, &n, k, nmt_rule_rank(base, lp[w], penalty), hyp, w);
            }
        }
    }
    /* Heap sort: moving the worst to the end leaves the array best first. */
    for (int32_t m = n; m > 1; m--) {
        candidate tmp = best[0];
        best[0] = best[m - 1];
        best[m - 1] = tmp;
        heap_sift_down(best, m - 1, 0);
    }
    return n;
}

int32_t nmt_beam_choose_candidates(const search_buffers *b, const sentence_state *s, int32_t i,
                                   int32_t step, int32_t k, int only_eos, int mask_specials,
                                   float penalty)
{
    const float *row_scores = b->row_scores + s->first_row;
    const float *log_probs = b->log_probs + (size_t)s->first_row * (size_t)b->vocab;
    const int32_t n_alive = s->n_alive, vocab_size = b->vocab;
    const nmt_search_config *config = b->config;
    candidate *best = b->best;
    float rank = 0.0f;
    int32_t word = -1;
    if (!nmt_forced_choice(config, i, step, row_scores[0], log_probs, vocab_size, penalty,
                           mask_specials, &rank, &word))
        return select_candidates(row_scores, log_probs, n_alive, vocab_size, k, only_eos,
                                 mask_specials, penalty, config, best);
    if (word < 0)
        return 0;
    best[0] = (candidate){rank, 0, word};
    return 1;
}
