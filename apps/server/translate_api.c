/* translate_api.c: POST /translator/translate, OpenNMT-py's REST API over the
 * service (server.h). The body is a JSON array of items {"src": text, "id":
 * any}; the answer is [[{"src", "tgt", "n_best", "pred_score"}, ...]], each
 * item's n_best hypotheses in item order, or {"error", "status": "error"}
 * with a 4xx/5xx code. An item may also set beam_size, n_best, alpha,
 * max_len_a, max_len_b, shrink (bool) and deadline_ms, and "align": true
 * adds OpenNMT-py's "align" to each hypothesis (["s-t s-t ..."]: source
 * token s is the one target token t attended most, 0-based, as tokenized),
 * "token_scores": true the log-probability of each target token (the EOS's
 * last), and "attention": true (a server started with --attention) the
 * source and target tokens and the soft attention weights. Sampling and the
 * logit rules: sampling_topk, sampling_topp, sampling_temperature, seed,
 * sample_key (default: the item's index), min_length, no_repeat_ngram_size,
 * repetition_penalty, ban_unk / disable_unk, suppress (a list of token
 * sequences), coverage_penalty and coverage_beta.
 * Each item is one service request. Everything is checked before anything
 * is queued. */
#include "server.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void server_error(server_response *out, unsigned code, const char *message)
{
    json_t *o = json_pack("{s:s, s:s}", "error", message, "status", "error");
    out->code = code;
    out->content_type = "application/json";
    out->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    out->length = out->body ? strlen(out->body) : 0;
    json_decref(o);
}

/* How often a waiting handler looks at the drain's deadline. */
enum { kDrainCheckMs = 100 };

/* Waits for request r: 1 once complete, 0 when a stop's drain deadline
 * passed first (the answer is then a 503, not a wait past --timeout). */
static int wait_request(server *s, nmt_request *r)
{
    for (;;) {
        if (nmt_request_wait(r, kDrainCheckMs))
            return 1;
        pthread_mutex_lock(&s->lock);
        const double deadline = s->drain_deadline;
        pthread_mutex_unlock(&s->lock);
        if (deadline > 0.0 && server_now() >= deadline)
            return 0;
    }
}

/* An optional integer / number / boolean field of item i; 0 with a message
 * when present with the wrong type or out of range. */
static int get_int(json_t *item, const char *key, int lo, int hi, int *out, char *msg,
                   size_t size, size_t i)
{
    json_t *v = json_object_get(item, key);
    if (!v)
        return 1;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(msg, size, "item %zu: \"%s\" must be an integer in %d..%d", i, key, lo, hi);
        return 0;
    }
    *out = (int)json_integer_value(v);
    return 1;
}

static int get_number(json_t *item, const char *key, double lo, double hi, double *out,
                      char *msg, size_t size, size_t i)
{
    json_t *v = json_object_get(item, key);
    if (!v)
        return 1;
    if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
        snprintf(msg, size, "item %zu: \"%s\" must be a number in %g..%g", i, key, lo, hi);
        return 0;
    }
    *out = json_number_value(v);
    return 1;
}

/* An optional boolean field of item i; 0 with a message when present and
 * not a boolean. */
static int check_bool(json_t *item, const char *key, char *msg, size_t size, size_t i)
{
    json_t *v = json_object_get(item, key);
    if (v && !json_is_boolean(v)) {
        snprintf(msg, size, "item %zu: \"%s\" must be true or false", i, key);
        return 0;
    }
    return 1;
}

/* Item i's request options; 0 with a message for a bad field. */
static int item_options(const server *s, json_t *item, size_t i, nmt_request_options *o,
                        char *msg, size_t size)
{
    nmt_request_options_init(o);
    double alpha = -1.0, len_a = -1.0, deadline = 0.0;
    json_t *shrink = json_object_get(item, "shrink");
    if (!get_int(item, "beam_size", 1, 256, &o->beam_size, msg, size, i) ||
        !get_int(item, "n_best", 1, 256, &o->n_best, msg, size, i) ||
        !get_int(item, "max_len_b", 0, 10000, &o->max_len_b, msg, size, i) ||
        !get_number(item, "alpha", 0.0, 10.0, &alpha, msg, size, i) ||
        !get_number(item, "max_len_a", 0.0, 100.0, &len_a, msg, size, i) ||
        !get_number(item, "deadline_ms", 0.0, 1e9, &deadline, msg, size, i))
        return 0;
    if (shrink && !json_is_boolean(shrink)) {
        snprintf(msg, size, "item %zu: \"shrink\" must be true or false", i);
        return 0;
    }
    if (!check_bool(item, "align", msg, size, i) ||
        !check_bool(item, "token_scores", msg, size, i) ||
        !check_bool(item, "attention", msg, size, i))
        return 0;
    if (json_is_true(json_object_get(item, "attention")) && !s->attention) {
        snprintf(msg, size, "item %zu: \"attention\" needs a server started with --attention "
                 "(it keeps the weights)", i);
        return 0;
    }
    if (shrink)
        o->shrink = json_is_true(shrink);
    if (alpha >= 0.0)
        o->alpha = (float)alpha;
    if (len_a >= 0.0)
        o->max_len_a = (float)len_a;
    o->deadline_ms = deadline;
    return 1;
}

/* An optional string field: one of choices' names, its value in *out. */
static int get_choice(json_t *item, const char *key, const char *const *choices, int *out,
                      char *msg, size_t size, size_t i)
{
    json_t *v = json_object_get(item, key);
    if (!v)
        return 1;
    for (int c = 0; json_is_string(v) && choices[c]; c++)
        if (!strcmp(json_string_value(v), choices[c])) {
            *out = c;
            return 1;
        }
    snprintf(msg, size, "item %zu: \"%s\" must be one of %s", i, key, choices[0]);
    for (int c = 1; choices[c]; c++)
        snprintf(msg + strlen(msg), size - strlen(msg), ", %s", choices[c]);
    return 0;
}

/* "suppress": a list of sequences, each a string of space-separated target
 * tokens or a list of them, as one text (one sequence a line) in *text
 * (malloc'd; NULL when absent). */
static int get_suppress(json_t *item, char **text, char *msg, size_t size, size_t i)
{
    json_t *list = json_object_get(item, "suppress"), *seq, *token;
    size_t k, t, bytes = 1, at = 0;
    *text = NULL;
    if (!list)
        return 1;
    int ok = json_is_array(list);
    json_array_foreach(list, k, seq) {
        ok = ok && (json_is_string(seq) || json_is_array(seq));
        if (json_is_string(seq))
            bytes += json_string_length(seq) + 1;
        json_array_foreach(json_is_array(seq) ? seq : NULL, t, token) {
            ok = ok && json_is_string(token);
            bytes += (json_is_string(token) ? json_string_length(token) : 0) + 1;
        }
    }
    if (!ok) {
        snprintf(msg, size, "item %zu: \"suppress\" must be a list of sequences, each a "
                 "string of target tokens or a list of them", i);
        return 0;
    }
    if (!(*text = malloc(bytes))) {
        snprintf(msg, size, "item %zu: out of memory", i);
        return 0;
    }
    json_array_foreach(list, k, seq) {
        if (json_is_string(seq))
            at += (size_t)snprintf(*text + at, bytes - at, "%s", json_string_value(seq));
        json_array_foreach(json_is_array(seq) ? seq : NULL, t, token)
            at += (size_t)snprintf(*text + at, bytes - at, "%s%s", t ? " " : "",
                                   json_string_value(token));
        at += (size_t)snprintf(*text + at, bytes - at, "\n");
    }
    return 1;
}

/* Item i's sampling and logit rules (CTranslate2's names; docs/server.md):
 * its sampling key is its index in the request unless it gives one. */
static int item_rules(json_t *item, size_t i, nmt_request_options *o, char **suppress,
                      char *msg, size_t size)
{
    static const char *const coverage[] = {"none", "wu", "summary", NULL};
    double topp = -1.0, temperature = -1.0, penalty = -1.0, beta = -1.0, seed = -1.0;
    double key = (double)i;
    int ban = -1, disable = -1;
    if (!get_int(item, "sampling_topk", 0, 512, &o->sampling_topk, msg, size, i) ||
        !get_number(item, "sampling_topp", 0.0, 1.0, &topp, msg, size, i) ||
        !get_number(item, "sampling_temperature", 0.0, 100.0, &temperature, msg, size, i) ||
        !get_number(item, "seed", 0.0, 9007199254740991.0, &seed, msg, size, i) ||
        !get_number(item, "sample_key", 0.0, 9007199254740991.0, &key, msg, size, i) ||
        !get_int(item, "min_length", 0, 10000, &o->min_length, msg, size, i) ||
        !get_int(item, "no_repeat_ngram_size", 0, 64, &o->no_repeat_ngram_size, msg, size,
                 i) ||
        !get_number(item, "repetition_penalty", 0.0, 100.0, &penalty, msg, size, i) ||
        !check_bool(item, "ban_unk", msg, size, i) ||
        !check_bool(item, "disable_unk", msg, size, i) ||
        !get_choice(item, "coverage_penalty", coverage, &o->coverage_penalty, msg, size, i) ||
        !get_number(item, "coverage_beta", 0.0, 100.0, &beta, msg, size, i) ||
        !get_suppress(item, suppress, msg, size, i))
        return 0;
    if (json_object_get(item, "ban_unk"))
        ban = json_is_true(json_object_get(item, "ban_unk"));
    if (json_object_get(item, "disable_unk"))
        disable = json_is_true(json_object_get(item, "disable_unk"));
    o->ban_unk = ban > disable ? ban : disable;
    o->sampling_topp = (float)topp;
    o->sampling_temperature = (float)temperature;
    o->repetition_penalty = (float)penalty;
    o->coverage_beta = (float)beta;
    o->seed = seed >= 0.0 ? (int64_t)seed : -1;
    o->line_key = (uint64_t)key;
    o->suppress = *suppress;
    return 1;
}

/* The HTTP answer for a failed item's status. */
static unsigned code_for(nmt_status status)
{
    switch (status) {
    case NMT_STATUS_ERROR_INPUT:
    case NMT_STATUS_ERROR_ARGUMENT: return 400;
    case NMT_STATUS_BUSY:
    case NMT_STATUS_CLOSED:
    case NMT_STATUS_CANCELLED: return 503;
    case NMT_STATUS_DEADLINE: return 504;
    default: return 500;
    }
}

/* Checks the body and queues every item; on success *requests holds n handles. */
static int submit_all(server *s, json_t *root, nmt_request **requests, server_response *out)
{
    char msg[300];
    const size_t n = json_array_size(root);
    nmt_request_options *options = calloc(n, sizeof *options);
    char **suppress = calloc(n, sizeof *suppress); /* the items' own, freed below */
    int ok = 0;
    if (!options || !suppress) {
        server_error(out, 500, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(root, i);
        json_t *src = json_object_get(item, "src");
        if (!json_is_object(item) || !json_is_string(src)) {
            snprintf(msg, sizeof msg, "item %zu: must be an object with a string \"src\"", i);
            server_error(out, 400, msg);
            goto done;
        }
        if (!item_options(s, item, i, &options[i], msg, sizeof msg) ||
            !item_rules(item, i, &options[i], &suppress[i], msg, sizeof msg)) {
            server_error(out, 400, msg);
            goto done;
        }
    }
    for (size_t i = 0; i < n; i++) {
        nmt_error err = {0};
        json_t *src = json_object_get(json_array_get(root, i), "src");
        const nmt_status st = nmt_service_submit(s->service, json_string_value(src), &options[i],
                                                 NULL, NULL, &requests[i], &err);
        if (st != NMT_STATUS_OK) {
            for (size_t k = 0; k < i; k++)
                nmt_request_free(requests[k]); /* cancels what is queued */
            snprintf(msg, sizeof msg, "item %zu: %s", i, err.message);
            server_error(out, code_for(st), msg);
            out->retry_after = st == NMT_STATUS_BUSY ? 1 : 0;
            goto done;
        }
    }
    ok = 1;
done:
    for (size_t i = 0; suppress && i < n; i++)
        free(suppress[i]);
    free(suppress);
    free(options);
    return ok;
}

/* OpenNMT-py's alignment of a hypothesis: ["s-t s-t ..."]. */
static json_t *alignment_json(const nmt_hypothesis *h)
{
    const size_t size = 1 + 24 * (size_t)h->n_tokens; /* " s-t", two ints and a space each */
    size_t at = 0;
    char *text = malloc(size);
    if (!text)
        return NULL;
    text[0] = '\0';
    for (int t = 0; t < h->n_tokens; t++)
        at += (size_t)snprintf(text + at, size - at, "%s%d-%d", t ? " " : "",
                               h->alignment ? h->alignment[t] : -1, t);
    json_t *list = json_pack("[s]", text);
    free(text);
    return list;
}

/* The log-probability of each target token, then the EOS's. */
static json_t *token_scores_json(const nmt_hypothesis *h)
{
    json_t *list = json_array();
    for (int t = 0; list && h->token_scores && t <= h->n_tokens; t++)
        if (json_array_append_new(list, json_real((double)h->token_scores[t])) != 0) {
            json_decref(list);
            return NULL;
        }
    return list;
}

static json_t *strings_json(char *const *strings, int n)
{
    json_t *list = json_array();
    for (int i = 0; list && strings && i < n; i++)
        if (json_array_append_new(list, json_string(strings[i] ? strings[i] : "")) != 0) {
            json_decref(list);
            return NULL;
        }
    return list;
}

/* {"src": [...], "tgt": [...], "weights": [[...], ...]}: weights[t][s] is
 * target token t's attention on source token s. */
static json_t *attention_json(const nmt_result *r, const nmt_hypothesis *h)
{
    const int n_src = r->src_tokens ? r->n_src : 0;
    const int n_tgt = h->tokens && h->attention ? h->n_tokens : 0;
    json_t *weights = json_array();
    int ok = weights != NULL;
    for (int t = 0; ok && t < n_tgt; t++) {
        json_t *row = json_array();
        ok = row != NULL;
        for (int j = 0; ok && j < n_src; j++)
            ok = json_array_append_new(row, json_real((double)h->attention[(size_t)t * n_src + j]))
                 == 0;
        ok = ok && json_array_append(weights, row) == 0;
        json_decref(row);
    }
    json_t *src = strings_json(r->src_tokens, n_src), *tgt = strings_json(h->tokens, n_tgt);
    json_t *doc = ok && src && tgt ? json_pack("{s:O, s:O, s:O}", "src", src, "tgt", tgt,
                                               "weights", weights)
                                   : NULL;
    json_decref(weights);
    json_decref(src);
    json_decref(tgt);
    return doc;
}

/* Adds the fields item asks for (align, token_scores, attention) to e; 0
 * when out of memory. */
static int add_fields(json_t *e, json_t *item, const nmt_result *r, const nmt_hypothesis *h)
{
    static const char *const keys[3] = {"align", "token_scores", "attention"};
    for (int k = 0; k < 3; k++) {
        if (!json_is_true(json_object_get(item, keys[k])))
            continue;
        json_t *v = k == 0 ? alignment_json(h) : k == 1 ? token_scores_json(h)
                                                        : attention_json(r, h);
        if (!v || json_object_set_new(e, keys[k], v) != 0)
            return 0;
    }
    return 1;
}

/* Waits for every request and writes the OpenNMT-py answer (or the first
 * failed item's error, or 503 at the drain's deadline). The requests not
 * waited for are cancelled by the caller's nmt_request_free. */
static void answer(server *s, json_t *root, nmt_request **requests, size_t n,
                   server_response *out)
{
    json_t *list = json_array(), *wrapper = json_array();
    char msg[400];
    int failed = 0;
    for (size_t i = 0; i < n && !failed; i++) {
        if (!wait_request(s, requests[i])) {
            server_error(out, 503, "the server is shutting down: not translated within "
                                   "--timeout of the stop");
            failed = 1;
            break;
        }
        const nmt_result *r = nmt_request_result(requests[i]);
        if (r->status != NMT_STATUS_OK) {
            snprintf(msg, sizeof msg, "item %zu: %s", i, r->message);
            server_error(out, code_for(r->status), msg);
            failed = 1;
            continue;
        }
        json_t *item = json_array_get(root, i);
        for (int h = 0; h < r->n_hypotheses; h++) {
            json_t *e = json_pack("{s:O, s:s, s:i, s:f}", "src", json_object_get(item, "src"),
                                  "tgt", r->hypotheses[h].text, "n_best", r->n_hypotheses,
                                  "pred_score", (double)r->hypotheses[h].score);
            json_t *id = json_object_get(item, "id");
            if (e && id)
                json_object_set(e, "id", id);
            if (e && !add_fields(e, item, r, &r->hypotheses[h])) {
                json_decref(e);
                e = NULL;
            }
            if (!e || json_array_append_new(list, e) != 0) {
                server_error(out, 500, "out of memory");
                failed = 1;
                break;
            }
        }
    }
    if (!failed) {
        json_array_append(wrapper, list);
        out->code = 200;
        out->content_type = "application/json";
        out->body = json_dumps(wrapper, JSON_COMPACT);
        out->length = out->body ? strlen(out->body) : 0;
        if (!out->body)
            server_error(out, 500, "out of memory");
    }
    json_decref(list);
    json_decref(wrapper);
}

void server_translate(server *s, const char *body, size_t length, server_response *out)
{
    json_error_t error;
    char msg[300];
    const double started = server_now();
    json_t *root = json_loadb(body, length, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        snprintf(msg, sizeof msg, "malformed JSON at line %d column %d: %s", error.line,
                 error.column, error.text);
        server_error(out, 400, msg);
        return;
    }
    const size_t n = json_is_array(root) ? json_array_size(root) : 0;
    if (n == 0 || n > (size_t)s->settings.max_sentences) {
        snprintf(msg, sizeof msg, "the body must be a JSON array of 1..%d items",
                 s->settings.max_sentences);
        server_error(out, n > 0 ? 413 : 400, msg);
        json_decref(root);
        return;
    }
    nmt_request **requests = calloc(n, sizeof *requests);
    if (!requests) {
        server_error(out, 500, "out of memory");
    } else if (submit_all(s, root, requests, out)) {
        answer(s, root, requests, n, out);
        for (size_t i = 0; i < n; i++)
            nmt_request_free(requests[i]);
        if (out->code == 200)
            server_metrics_translation(&s->metrics, (int)n, server_now() - started);
    }
    free(requests);
    json_decref(root);
}
