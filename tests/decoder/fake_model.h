/* fake_model.h: the decoder tests' scripted step model (nmt_step_model):
 * it keeps each row's token prefix and moves it through reorder, and scores
 * a row by its prefix alone through a table (table_fn), so a search that
 * reorders wrongly sees wrong scores. Every row's attention argmax and
 * weights name its prefix; with raw_logits the table gives logits, which
 * the step normalizes and the model's logits callback returns. Static
 * functions: included by the tests of tests/decoder. */
#ifndef NMT_TEST_FAKE_MODEL_H
#define NMT_TEST_FAKE_MODEL_H

#include "error.h"
#include "search.h"
#include "softmax_topk.h"
#include "test_util.h"

#include <stdio.h>
#include <string.h>

enum { PAD = 0, BOS = 1, EOS = 2, UNK = 3 }; /* then words a = 4, b = 5, ... */
#define MAX_ROWS 256
#define MAX_LEN 40
#define MAX_STEPS 48
#define MAX_SENT 8
#define MAX_VOCAB 1024
#define FAKE_SRC 8 /* the fake's attention row: sources of up to 8 tokens */

typedef void (*table_fn)(const void *ctx, int32_t sentence, const int32_t *prefix, int32_t len,
                         int32_t vocab, float *out);

typedef struct fake_model {
    table_fn table;
    const void *ctx;
    int32_t vocab, n_rows, n_steps, fail_at_step;
    int feeds_specials; /* onmt rules: PAD and BOS may be generated and fed back */
    int32_t sentence[MAX_ROWS], len[MAX_ROWS], started[MAX_ROWS], prefix[MAX_ROWS][MAX_LEN];
    int32_t rows_at[MAX_STEPS][MAX_SENT]; /* rows each sentence had at each step */
    float weights[MAX_ROWS][FAKE_SRC];    /* the last step's attention rows */
    int raw_logits;                       /* the table gives logits (fake_logits) */
    /* NULL (fake_weight), or a row's attention weight on position j */
    float (*weight)(int32_t sentence, const int32_t *prefix, int32_t len, int32_t j);
} fake_model;

/* raw_logits: the last step's table rows, before their log-softmax. */
static float fake_logits_rows[MAX_ROWS * MAX_VOCAB];

static const float *fake_logits(void *self, int32_t *ld)
{
    const fake_model *m = self;
    *ld = m->vocab;
    return m->raw_logits ? fake_logits_rows : NULL;
}

static int32_t fake_attn(int32_t sentence, const int32_t *prefix, int32_t len)
{
    return 1000 * sentence + 100 * len + (len ? prefix[len - 1] % 100 : 99);
}

/* A row's attention weight on source position j: names the row's prefix
 * (exact in float), so a hypothesis's rows show which row made each token. */
static float fake_weight(int32_t sentence, const int32_t *prefix, int32_t len, int32_t j)
{
    return (float)(fake_attn(sentence, prefix, len) * FAKE_SRC + j);
}

static const float *fake_attention(void *self, int32_t *stride)
{
    fake_model *m = self;
    *stride = FAKE_SRC;
    return &m->weights[0][0];
}

static nmt_status fake_step(void *self, int32_t n_rows, const int32_t *prev_tokens,
                            float *log_probs, int32_t *attn_argmax, nmt_error *err)
{
    fake_model *m = self;
    CHECK(n_rows == m->n_rows, "step with %d rows, fake holds %d", n_rows, m->n_rows);
    if (m->n_steps == m->fail_at_step)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "fake: injected failure");
    if (m->n_steps >= MAX_STEPS)
        return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "fake: too many steps");
    memset(m->rows_at[m->n_steps], 0, sizeof m->rows_at[0]);
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t tok = prev_tokens[r];
        if (!m->started[r]) {
            CHECK(tok == BOS, "row %d starts with %d", r, tok);
            m->started[r] = 1;
        } else {
            CHECK(tok != EOS && (m->feeds_specials || (tok != PAD && tok != BOS)),
                  "row %d fed token %d", r, tok);
            if (m->len[r] < MAX_LEN)
                m->prefix[r][m->len[r]++] = tok;
        }
        if (r > 0)
            CHECK(m->sentence[r] >= m->sentence[r - 1], "rows not grouped by sentence");
        m->rows_at[m->n_steps][m->sentence[r]]++;
        float *out = log_probs + (size_t)r * (size_t)m->vocab;
        if (m->raw_logits) {
            float *z = fake_logits_rows + (size_t)r * (size_t)m->vocab;
            m->table(m->ctx, m->sentence[r], m->prefix[r], m->len[r], m->vocab, z);
            nmt_cpu_log_softmax(1, m->vocab, z, m->vocab, out);
        } else {
            m->table(m->ctx, m->sentence[r], m->prefix[r], m->len[r], m->vocab, out);
        }
        attn_argmax[r] = fake_attn(m->sentence[r], m->prefix[r], m->len[r]);
        for (int32_t j = 0; j < FAKE_SRC; j++)
            m->weights[r][j] = (m->weight ? m->weight : fake_weight)(m->sentence[r], m->prefix[r],
                                                                     m->len[r], j);
    }
    m->n_steps++;
    return NMT_STATUS_OK;
}

static nmt_status fake_reorder(void *self, int32_t n_rows, const int32_t *parent, nmt_error *err)
{
    fake_model *m = self;
    static fake_model old; /* scratch copy (tests are single-threaded) */
    memcpy(&old, m, sizeof old);
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t p = parent[r];
        CHECK(p >= 0 && p < old.n_rows, "parent %d of %d rows", p, old.n_rows);
        if (p < 0 || p >= old.n_rows)
            return nmt_error_set(err, NMT_STATUS_ERROR_INTERNAL, "fake: bad parent");
        m->sentence[r] = old.sentence[p];
        m->len[r] = old.len[p];
        m->started[r] = old.started[p];
        memcpy(m->prefix[r], old.prefix[p], sizeof m->prefix[r]);
    }
    m->n_rows = n_rows;
    return NMT_STATUS_OK;
}

/* Row i starts as sentence ids[i] (so one sentence can be searched alone). */
static nmt_step_model fake_init(fake_model *m, table_fn table, const void *ctx, int32_t vocab,
                                int32_t n, const int32_t *ids)
{
    memset(m, 0, sizeof *m);
    m->table = table;
    m->ctx = ctx;
    m->vocab = vocab;
    m->n_rows = n;
    m->fail_at_step = -1;
    for (int32_t i = 0; i < n; i++)
        m->sentence[i] = ids ? ids[i] : i;
    return (nmt_step_model){m, vocab, fake_step, fake_reorder, fake_attention, fake_logits};
}

#endif /* NMT_TEST_FAKE_MODEL_H */
