/* test_cpu_model.c: the CPU reference engine on a small random model built in
 * memory (E 6, H 8, 2 + 2 layers, V_tgt 11, word + case features): log-prob
 * rows normalize, a sentence's scores do not depend on its batch (bitwise),
 * reorder moves states, padding gets no attention, refusals, the fast
 * path's products shared by rows of one parent give the bits of rows apart, and a
 * straight-line double-precision recomputation of model-v1 written here with
 * plain loops (no kernel calls) matches the engine to 1e-5. */
#include "backend.h"  /* nmt_cpu_step_model: the search's view of the state */
#include "cpu_model.h"
#include "cpu_state.h" /* private: to look at the attention weights */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { E = 6, H = 8, LAYERS = 2, V = 11, SRC_WORDS = 9, SRC_ROWS = SRC_WORDS + 4, MAX_S = 6 };

/* ---- the model -------------------------------------------------------- */

static float *arena_take(float **cursor, size_t n)
{
    float *p = *cursor;
    *cursor += n;
    test_fill_uniform(p, n, -0.6f, 0.6f);
    return p;
}

static void lstm_init(nmt_lstm_weights *w, int32_t in, int32_t hid, float **cursor)
{
    w->input_size = in;
    w->hidden_size = hid;
    w->w_ih = arena_take(cursor, (size_t)4 * hid * in);
    w->w_hh = arena_take(cursor, (size_t)4 * hid * hid);
    w->b_ih = arena_take(cursor, (size_t)4 * hid);
    w->b_hh = arena_take(cursor, (size_t)4 * hid);
}

static void build_model(nmt_model *m, int init_from_encoder)
{
    memset(m, 0, sizeof *m);
    m->hp.emb_size = E;
    m->hp.hidden_size = H;
    m->hp.enc_layers = LAYERS;
    m->hp.dec_layers = LAYERS;
    m->hp.src_words = SRC_WORDS;
    m->hp.src_rows = SRC_ROWS;
    m->hp.tgt_vocab = V;
    m->hp.n_features = 2;
    m->hp.features[0] = (nmt_feature_table){NMT_FEATURE_WORD, 0, SRC_WORDS};
    m->hp.features[1] = (nmt_feature_table){NMT_FEATURE_CASE, SRC_WORDS, 4};
    m->hp.dec_init_from_encoder = init_from_encoder;
    m->arena = malloc(sizeof(float) * 20000);
    float *cursor = m->arena;
    m->src_embedding = arena_take(&cursor, SRC_ROWS * E);
    m->tgt_embedding = arena_take(&cursor, V * E);
    for (int l = 0; l < LAYERS; l++) {
        lstm_init(&m->enc_fwd[l], l ? H : E, H / 2, &cursor);
        lstm_init(&m->enc_bwd[l], l ? H : E, H / 2, &cursor);
        lstm_init(&m->dec[l], l ? H : E + H, H, &cursor);
    }
    m->attn_w_a = arena_take(&cursor, H * H);
    m->attn_w_c = arena_take(&cursor, H * 2 * H);
    m->out_w = arena_take(&cursor, V * H);
    m->out_b = arena_take(&cursor, V);
    if (cursor - (float *)m->arena > 20000) {
        fprintf(stderr, "arena too small\n");
        exit(1);
    }
}

/* ---- sentences: each token has its word and case feature (weight 1), and
 * every third token a third feature row with weight 0.5 ------------------ */

typedef struct sentence {
    int32_t len;
    int32_t n_feat[MAX_S];
    int32_t cols[MAX_S][3];
    float values[MAX_S][3];
} sentence;

static sentence make_sentence(int32_t len)
{
    sentence s;
    memset(&s, 0, sizeof s);
    s.len = len;
    for (int t = 0; t < len; t++) {
        s.n_feat[t] = 2;
        s.cols[t][0] = test_rand_int(0, SRC_WORDS);
        s.cols[t][1] = SRC_WORDS + test_rand_int(0, 4);
        s.values[t][0] = s.values[t][1] = 1.0f;
        if (t % 3 == 2) {
            s.n_feat[t] = 3;
            s.cols[t][2] = test_rand_int(0, SRC_ROWS);
            s.values[t][2] = 0.5f;
        }
    }
    return s;
}

typedef struct batch_storage {
    int32_t src_len[8], token_offset[9], row_ptr[8 * MAX_S + 1], cols[8 * MAX_S * 3];
    float values[8 * MAX_S * 3];
    nmt_source_batch batch;
} batch_storage;

static void make_batch(batch_storage *b, const sentence *const *sents, int32_t n)
{
    int32_t token = 0, entry = 0;
    b->token_offset[0] = 0;
    b->row_ptr[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        b->src_len[i] = sents[i]->len;
        for (int32_t t = 0; t < sents[i]->len; t++) {
            for (int32_t f = 0; f < sents[i]->n_feat[t]; f++) {
                b->cols[entry] = sents[i]->cols[t][f];
                b->values[entry] = sents[i]->values[t][f];
                entry++;
            }
            b->row_ptr[++token] = entry;
        }
        b->token_offset[i + 1] = token;
    }
    b->batch = (nmt_source_batch){n, b->src_len, b->token_offset, b->row_ptr, b->cols, b->values,
                                  NULL};
}

/* ---- the straight-line reference, from model-v1.md, in double ---------- */

typedef struct ref_state {
    int32_t len;
    double memory[MAX_S][H];
    double h[LAYERS][H], c[LAYERS][H], feed[H];
} ref_state;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* One LSTM step of hidden size n: x (in), h, c updated in place. */
static void ref_lstm(const nmt_lstm_weights *w, const double *x, double *h, double *c, int n)
{
    int in = w->input_size;
    double gates[4 * H];
    for (int r = 0; r < 4 * n; r++) {
        double g = (double)w->b_ih[r] + (double)w->b_hh[r];
        for (int k = 0; k < in; k++)
            g += (double)w->w_ih[r * in + k] * x[k];
        for (int k = 0; k < n; k++)
            g += (double)w->w_hh[r * n + k] * h[k];
        gates[r] = g;
    }
    for (int j = 0; j < n; j++) {
        double i = sig(gates[j]), f = sig(gates[n + j]), g = tanh(gates[2 * n + j]),
               o = sig(gates[3 * n + j]);
        c[j] = f * c[j] + i * g;
        h[j] = o * tanh(c[j]);
    }
}

static void ref_encode(const nmt_model *m, const sentence *s, ref_state *st)
{
    double in[MAX_S][H], out[MAX_S][H];
    int in_dim = E;
    memset(st, 0, sizeof *st);
    st->len = s->len;
    for (int t = 0; t < s->len; t++)
        for (int d = 0; d < E; d++) {
            double v = 0;
            for (int f = 0; f < s->n_feat[t]; f++)
                v += (double)s->values[t][f] * m->src_embedding[s->cols[t][f] * E + d];
            in[t][d] = v;
        }
    for (int l = 0; l < LAYERS; l++) {
        double h[H / 2], c[H / 2];
        memset(h, 0, sizeof h);
        memset(c, 0, sizeof c);
        for (int t = 0; t < s->len; t++) { /* forward: x_1 .. x_S */
            ref_lstm(&m->enc_fwd[l], in[t], h, c, H / 2);
            for (int j = 0; j < H / 2; j++)
                out[t][j] = h[j];
        }
        for (int j = 0; j < H / 2; j++) {
            st->h[l][j] = h[j];
            st->c[l][j] = c[j];
        }
        memset(h, 0, sizeof h);
        memset(c, 0, sizeof c);
        for (int t = s->len - 1; t >= 0; t--) { /* backward: x_S .. x_1 */
            ref_lstm(&m->enc_bwd[l], in[t], h, c, H / 2);
            for (int j = 0; j < H / 2; j++)
                out[t][H / 2 + j] = h[j];
        }
        for (int j = 0; j < H / 2; j++) {
            st->h[l][H / 2 + j] = h[j];
            st->c[l][H / 2 + j] = c[j];
        }
        memcpy(in, out, sizeof in);
        in_dim = H;
    }
    (void)in_dim;
    memcpy(st->memory, out, sizeof out);
    if (!m->hp.dec_init_from_encoder) {
        memset(st->h, 0, sizeof st->h);
        memset(st->c, 0, sizeof st->c);
    }
}

static void ref_step(const nmt_model *m, ref_state *st, int32_t prev, double *log_probs,
                     int32_t *argmax)
{
    double x[E + H];
    for (int d = 0; d < E; d++)
        x[d] = m->tgt_embedding[prev * E + d];
    for (int d = 0; d < H; d++)
        x[E + d] = st->feed[d];
    ref_lstm(&m->dec[0], x, st->h[0], st->c[0], H);
    for (int l = 1; l < LAYERS; l++) {
        double below[H];
        memcpy(below, st->h[l - 1], sizeof below);
        ref_lstm(&m->dec[l], below, st->h[l], st->c[l], H);
    }
    const double *ht = st->h[LAYERS - 1];
    double score[MAX_S], max_score = -INFINITY, denom = 0;
    for (int j = 0; j < st->len; j++) {
        double s = 0;
        for (int a = 0; a < H; a++) {
            double key = 0; /* (W_a m_j)_a */
            for (int b = 0; b < H; b++)
                key += (double)m->attn_w_a[a * H + b] * st->memory[j][b];
            s += ht[a] * key;
        }
        score[j] = s;
        if (s > max_score)
            max_score = s;
    }
    for (int j = 0; j < st->len; j++)
        denom += exp(score[j] - max_score);
    double ctx[H] = {0};
    *argmax = 0;
    for (int j = 0; j < st->len; j++) {
        double a = exp(score[j] - max_score) / denom;
        if (score[j] > score[*argmax])
            *argmax = j;
        for (int d = 0; d < H; d++)
            ctx[d] += a * st->memory[j][d];
    }
    for (int r = 0; r < H; r++) {
        double v = 0;
        for (int k = 0; k < H; k++)
            v += (double)m->attn_w_c[r * 2 * H + k] * ctx[k] +
                 (double)m->attn_w_c[r * 2 * H + H + k] * ht[k];
        st->feed[r] = tanh(v);
    }
    double z[V], zmax = -INFINITY, sum = 0;
    for (int w = 0; w < V; w++) {
        z[w] = m->out_b[w];
        for (int k = 0; k < H; k++)
            z[w] += (double)m->out_w[w * H + k] * st->feed[k];
        if (z[w] > zmax)
            zmax = z[w];
    }
    for (int w = 0; w < V; w++)
        sum += exp(z[w] - zmax);
    for (int w = 0; w < V; w++)
        log_probs[w] = z[w] - zmax - log(sum);
}

/* ---- checks ------------------------------------------------------------- */

static void check_rows_normalized(const char *what, const float *lp, int32_t n_rows)
{
    for (int32_t r = 0; r < n_rows; r++) {
        double sum = 0;
        for (int w = 0; w < V; w++)
            sum += exp((double)lp[r * V + w]);
        CHECK(fabs(log(sum)) < 1e-5, "%s row %d: log-sum-exp %g", what, r, log(sum));
    }
}

/* Attention weights of the last step: zero past the row's sentence, sum 1 before. */
static void check_attention_mask(const nmt_cpu_state *st, int32_t n_rows, const int32_t *argmax)
{
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t len = st->src_len[st->row_sentence[st->cur][r]];
        double sum = 0;
        for (int32_t j = 0; j < st->max_src; j++) {
            float a = st->attn[r * st->max_src + j];
            if (j < len)
                sum += a;
            else
                CHECK(a == 0.0f, "row %d padding position %d has weight %g", r, j, a);
        }
        CHECK(fabs(sum - 1) < 1e-5, "row %d weights sum %g", r, sum);
        CHECK(argmax[r] >= 0 && argmax[r] < len, "row %d argmax %d of %d", r, argmax[r], len);
    }
}

static void test_engine(int init_from_encoder)
{
    nmt_model model;
    build_model(&model, init_from_encoder);
    nmt_error err = {0};
    const int32_t beam = 3, max_sent = 4;
    nmt_cpu_state *state = NULL, *alone = NULL;
    CHECK(nmt_cpu_state_create(&model, max_sent, beam, MAX_S, &state, &err) == 0, "%s",
          err.message);
    CHECK(nmt_cpu_state_create(&model, 1, 1, MAX_S, &alone, &err) == 0, "%s", err.message);
    if (!state || !alone)
        return;
    nmt_step_model sm = nmt_cpu_step_model(state), sm_alone = nmt_cpu_step_model(alone);
    CHECK(sm.vocab_size == V, "vocab_size %d", sm.vocab_size);

    sentence s0 = make_sentence(3), s1 = make_sentence(1), s2 = make_sentence(MAX_S);
    const sentence *three[] = {&s0, &s1, &s2};
    batch_storage b3, b1;
    make_batch(&b3, three, 3);
    const sentence *only2[] = {&s2};
    make_batch(&b1, only2, 1);

    float lp[12 * V], lp_alone[V], lp2[12 * V];
    int32_t am[12], am_alone[1], am2[12];
    int32_t bos[12];
    for (int i = 0; i < 12; i++)
        bos[i] = NMT_BOS_ID;

    /* Step 1 over the batch of three; compared with the reference per row. */
    CHECK(nmt_cpu_encode(state, &b3.batch, &err) == 0, "encode: %s", err.message);
    test_poison_f32(lp, 12 * V);
    CHECK(sm.step(sm.self, 3, bos, lp, am, &err) == 0, "step: %s", err.message);
    check_rows_normalized("step 1", lp, 3);
    check_attention_mask(state, 3, am);
    ref_state ref[3];
    double ref_lp[V];
    for (int i = 0; i < 3; i++) {
        int32_t ref_am;
        float ref_lpf[V];
        ref_encode(&model, three[i], &ref[i]);
        ref_step(&model, &ref[i], NMT_BOS_ID, ref_lp, &ref_am);
        for (int w = 0; w < V; w++)
            ref_lpf[w] = (float)ref_lp[w];
        CHECK(test_close_f32("step 1 vs reference", lp + i * V, ref_lpf, V, 1e-5, 1e-5),
              "sentence %d", i);
        CHECK(am[i] == ref_am, "sentence %d argmax %d reference %d", i, am[i], ref_am);
    }

    /* Bitwise: sentence 2 alone gives the same step-1 row as in the batch. */
    CHECK(nmt_cpu_encode(alone, &b1.batch, &err) == 0, "encode alone: %s", err.message);
    CHECK(sm_alone.step(sm_alone.self, 1, bos, lp_alone, am_alone, &err) == 0, "%s", err.message);
    CHECK(memcmp(lp_alone, lp + 2 * V, sizeof lp_alone) == 0 && am_alone[0] == am[2],
          "sentence 2 alone differs from sentence 2 in a batch");

    /* Expand to beams: rows {s0, s0, s1, s2, s2, s2}, each with its own token;
     * step 2 against the reference (the reference copies follow the parents). */
    int32_t parent[] = {0, 0, 1, 2, 2, 2};
    int32_t tok[] = {4, 7, 5, 3, 9, 10};
    CHECK(sm.reorder(sm.self, 6, parent, &err) == 0, "reorder: %s", err.message);
    CHECK(sm.step(sm.self, 6, tok, lp, am, &err) == 0, "step 2: %s", err.message);
    check_rows_normalized("step 2", lp, 6);
    check_attention_mask(state, 6, am);
    for (int r = 0; r < 6; r++) {
        ref_state copy = ref[parent[r]];
        int32_t ref_am;
        float ref_lpf[V];
        ref_step(&model, &copy, tok[r], ref_lp, &ref_am);
        for (int w = 0; w < V; w++)
            ref_lpf[w] = (float)ref_lp[w];
        CHECK(test_close_f32("step 2 vs reference", lp + r * V, ref_lpf, V, 1e-5, 1e-5), "row %d", r);
        CHECK(am[r] == ref_am, "row %d argmax %d reference %d", r, am[r], ref_am);
    }

    /* Reorder moves states: after parents [1, 0] the next step's rows swap. */
    int32_t two_bos[] = {NMT_BOS_ID, NMT_BOS_ID}, two_tok[] = {6, 8}, swapped_tok[] = {8, 6};
    for (int pass = 0; pass < 2; pass++) {
        /* two sentences of different lengths, so the row->sentence map matters */
        const sentence *pair[] = {&s0, &s2};
        batch_storage b2;
        make_batch(&b2, pair, 2);
        CHECK(nmt_cpu_encode(state, &b2.batch, &err) == 0, "%s", err.message);
        CHECK(sm.step(sm.self, 2, two_bos, lp2, am2, &err) == 0, "%s", err.message);
        if (pass == 0) {
            CHECK(sm.step(sm.self, 2, two_tok, lp, am, &err) == 0, "%s", err.message);
        } else {
            int32_t swap[] = {1, 0};
            CHECK(sm.reorder(sm.self, 2, swap, &err) == 0, "%s", err.message);
            CHECK(sm.step(sm.self, 2, swapped_tok, lp2, am2, &err) == 0, "%s", err.message);
            CHECK(memcmp(lp2, lp + V, V * sizeof(float)) == 0 &&
                      memcmp(lp2 + V, lp, V * sizeof(float)) == 0 && am2[0] == am[1] &&
                      am2[1] == am[0],
                  "reorder [1, 0] did not swap the output rows");
            check_attention_mask(state, 2, am2);
        }
    }

    /* Refusals on a live state. */
    int32_t bad_tok[] = {V, 0};
    CHECK(sm.step(sm.self, 3, bos, lp, am, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "step with more rows than the state holds");
    CHECK(sm.step(sm.self, 2, bad_tok, lp, am, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "token outside the vocabulary");
    int32_t bad_parent[] = {0, 2};
    CHECK(sm.reorder(sm.self, 2, bad_parent, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "parent outside the rows");
    int32_t many[13] = {0};
    CHECK(sm.reorder(sm.self, 13, many, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "reorder beyond max_sentences * beam");
    CHECK(sm.reorder(sm.self, 12, many, &err) == 0, "reorder to max rows: %s", err.message);
    CHECK(sm.step(sm.self, 12, bos, lp, am, &err) == 0, "step at max rows: %s", err.message);
    check_rows_normalized("max rows", lp, 12);

    const sentence *five[] = {&s0, &s1, &s2, &s0, &s1};
    batch_storage b5;
    make_batch(&b5, five, 5);
    CHECK(nmt_cpu_encode(state, &b5.batch, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "5 sentences > max_sentences 4");
    CHECK(nmt_cpu_encode(alone, &b3.batch, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "3 sentences > max_sentences 1");
    sentence long_one = make_sentence(MAX_S);
    long_one.len = MAX_S; /* then claim one more token than max_src */
    const sentence *just_long[] = {&long_one};
    batch_storage bl;
    make_batch(&bl, just_long, 1);
    bl.src_len[0] = MAX_S + 1;
    CHECK(nmt_cpu_encode(state, &bl.batch, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "sentence longer than max_src");
    bl.src_len[0] = MAX_S - 1;
    CHECK(nmt_cpu_encode(state, &bl.batch, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "src_len disagreeing with token_offset");
    bl.src_len[0] = MAX_S;
    bl.cols[0] = SRC_ROWS;
    CHECK(nmt_cpu_encode(state, &bl.batch, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "feature row outside the source table");

    nmt_cpu_state_free(state);
    nmt_cpu_state_free(alone);
    free(model.arena);
}

/* The fast path runs layer 0's feed and recurrent products once a parent
 * where rows share one, and its embedding product once a token
 * (cpu_state.h): rows sharing parents and tokens give the bits of the same
 * rows apart (one row a parent, distinct tokens), fp32 and int8, and so
 * does a second step without a reorder (the rows' states then differ). */
static void test_shared_parents(int int8)
{
    nmt_model model;
    build_model(&model, 1);
    nmt_error err = {0};
    nmt_cpu_state *shared = NULL, *apart = NULL;
    const nmt_cpu_fast fast = {.isa = NMT_CPU_ISA_AUTO, .threads = 1, .int8 = int8};
    CHECK(nmt_cpu_state_create(&model, 3, 3, MAX_S, &shared, &err) == 0 &&
              nmt_cpu_state_create(&model, 3, 3, MAX_S, &apart, &err) == 0 &&
              nmt_cpu_state_set_fast(shared, &fast, &err) == 0 &&
              nmt_cpu_state_set_fast(apart, &fast, &err) == 0,
          "%s", err.message);
    sentence s0 = make_sentence(3), s1 = make_sentence(1), s2 = make_sentence(MAX_S);
    const sentence *three[] = {&s0, &s1, &s2};
    batch_storage b3;
    make_batch(&b3, three, 3);
    const int32_t bos[] = {NMT_BOS_ID, NMT_BOS_ID, NMT_BOS_ID};
    const int32_t parent[] = {0, 0, 1, 2, 2, 2}, tok[] = {4, 7, 5, 4, 9, 10};
    const int32_t tok2[] = {3, 3, 6, 8, 8, 8};
    float lp[6 * V], lp_apart[3 * V], lp2[6 * V], lp2_apart[3 * V];
    int32_t am[6], am_apart[3], am2[6], am2_apart[3];
    nmt_step_model sm = nmt_cpu_step_model(shared), sm_apart = nmt_cpu_step_model(apart);
    CHECK(shared && apart && nmt_cpu_encode(shared, &b3.batch, &err) == 0 &&
              sm.step(sm.self, 3, bos, lp, am, &err) == 0 &&
              sm.reorder(sm.self, 6, parent, &err) == 0,
          "shared: %s", err.message);
    CHECK(shared && shared->n_parents == 3, "6 rows of 3 parents: %d",
          shared ? shared->n_parents : -1);
    CHECK(shared && sm.step(sm.self, 6, tok, lp, am, &err) == 0 &&
              sm.step(sm.self, 6, tok2, lp2, am2, &err) == 0,
          "shared steps: %s", err.message);
    /* Rows of sentences 0, 1 and 2 again, one row a sentence, no token twice. */
    const int32_t pick[3][3] = {{0, 2, 4}, {1, 2, 3}, {1, 2, 5}};
    for (int p = 0; p < 3 && shared && apart; p++) {
        const int32_t own[] = {0, 1, 2};
        const int32_t toks[] = {tok[pick[p][0]], tok[pick[p][1]], tok[pick[p][2]]};
        const int32_t toks2[] = {tok2[pick[p][0]], tok2[pick[p][1]], tok2[pick[p][2]]};
        CHECK(nmt_cpu_encode(apart, &b3.batch, &err) == 0 &&
                  sm_apart.step(sm_apart.self, 3, bos, lp_apart, am_apart, &err) == 0 &&
                  sm_apart.reorder(sm_apart.self, 3, own, &err) == 0 &&
                  sm_apart.step(sm_apart.self, 3, toks, lp_apart, am_apart, &err) == 0 &&
                  sm_apart.step(sm_apart.self, 3, toks2, lp2_apart, am2_apart, &err) == 0,
              "apart: %s", err.message);
        for (int i = 0; i < 3; i++) {
            const int32_t r = pick[p][i];
            CHECK(memcmp(lp_apart + i * V, lp + r * V, V * sizeof(float)) == 0 &&
                      am_apart[i] == am[r],
                  "int8 %d: row %d sharing a parent or token differs from its row apart", int8,
                  r);
            CHECK(memcmp(lp2_apart + i * V, lp2 + r * V, V * sizeof(float)) == 0 &&
                      am2_apart[i] == am2[r],
                  "int8 %d: row %d's next step differs from its row apart", int8, r);
        }
    }
    nmt_cpu_state_free(shared);
    nmt_cpu_state_free(apart);
    free(model.arena);
}

static void test_create_refusals(void)
{
    nmt_model model;
    build_model(&model, 1);
    nmt_cpu_state *state = (nmt_cpu_state *)&model; /* must be reset to NULL on failure */
    nmt_error err;
    CHECK(nmt_cpu_state_create(NULL, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "NULL model");
    CHECK(state == NULL, "state not reset on failure");
    CHECK(nmt_cpu_state_create(&model, 0, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "0 sentences");
    CHECK(nmt_cpu_state_create(&model, 1, 0, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "beam 0");
    CHECK(nmt_cpu_state_create(&model, 1, 1, 0, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "max_src 0");
    CHECK(nmt_cpu_state_create(&model, 1, 1, -5, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "max_src < 0");
    nmt_model bad = model;
    bad.hp.hidden_size = 7;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "odd H");
    bad = model;
    bad.hp.dec_layers = 1;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "init from encoder with unequal layers");
    bad.hp.dec_init_from_encoder = 0;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == 0, "unequal layers, zero init: %s",
          err.message);
    nmt_cpu_state_free(state);
    state = NULL;
    bad = model;
    bad.hp.enc_layers = NMT_MAX_LAYERS + 1;
    bad.hp.dec_layers = NMT_MAX_LAYERS + 1;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "too many layers");
    bad = model;
    bad.dec[0].input_size = E;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "decoder layer 0 without the input feed");
    bad = model;
    bad.out_b = NULL;
    CHECK(nmt_cpu_state_create(&bad, 1, 1, 1, &state, &err) == NMT_STATUS_ERROR_ARGUMENT, "NULL tensor");
    CHECK(nmt_cpu_state_create(&model, 1, 1, 1, NULL, &err) == NMT_STATUS_ERROR_ARGUMENT, "NULL out");
    nmt_cpu_state_free(NULL);
    free(model.arena);
}

int main(void)
{
    test_seed();
    test_engine(1);
    test_engine(0);
    test_shared_parents(0);
    if (nmt_cpu_int8_supported(NMT_CPU_ISA_AUTO))
        test_shared_parents(1);
    test_create_refusals();
    return test_finish("test_cpu_model");
}
