/* translate_api.c: OpenNMT-py's REST API over the models (server.h; the
 * shapes in docs/server.md, written from OpenNMT-py's onmt/bin/server.py and
 * translation_server.py).
 *
 * POST /translator/translate: the body is a JSON array of items {"src":
 * text, "id": model id}; every item goes to the first item's model (id 0
 * when it names none), as OpenNMT-py's TranslationServer.run. The answer is
 * one list per n-best rank, each with one hypothesis per item in item order:
 * answer[k][i] = {"src", "tgt", "n_best", "pred_score"} of item i's (k+1)-th
 * best, or {"error", "status": "error"} with a 4xx/5xx code. An item may
 * also set the fields of item_fields.c's table (search options, "target_prefix",
 * "return_alternatives", "align", "token_scores", "attention"); an unknown
 * field is a 400 naming it under --strict 1. Each item is one service
 * request; everything is checked before anything is queued.
 *
 * POST /translator/score: the same items with a string "tgt" each, the
 * translation to score (forced decoding, nmt_score_batch); one rank, its
 * elements with "log_prob" (the target's log-probability) beside
 * "pred_score" (that normalized).
 *
 * GET /translator/models lists the models as OpenNMT-py's ServerModel
 * .to_dict; GET (OpenNMT-py's) or POST /translator/unload_model/ID unloads
 * one: {"model_id", "status": "ok"}. */
#include "server.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
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

/* A 200 answer of doc (taken), or a 500 when it cannot be written. */
static void answer_json(server_response *out, json_t *doc)
{
    out->code = 200;
    out->content_type = "application/json";
    out->body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    out->length = out->body ? strlen(out->body) : 0;
    json_decref(doc);
    if (!out->body)
        server_error(out, 500, "out of memory");
}

/* ---- a request ------------------------------------------------------------------ */

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

/* A checked request: its model, its items' options and its one n_best;
 * score: /translator/score's. */
typedef struct checked_request {
    const server_model_spec *spec;
    nmt_request_options *options;
    int n_best;
    int score;
} checked_request;

/* The request's model (the first item's "id", 0 without one) and every item
 * checked: 0, or the HTTP code with the message. */
static unsigned check_request(const server *s, json_t *root, checked_request *c, char *msg,
                              size_t size)
{
    const size_t n = json_array_size(root);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(root, i);
        if (!json_is_object(item) || !json_is_string(json_object_get(item, "src"))) {
            snprintf(msg, size, "item %zu: must be an object with a string \"src\"", i);
            return 400;
        }
    }
    json_t *first_id = json_object_get(json_array_get(root, 0), "id");
    if (first_id && (!json_is_integer(first_id) || json_integer_value(first_id) < 0 ||
                     json_integer_value(first_id) > INT_MAX)) {
        snprintf(msg, size, "item 0: \"id\" must be a model id, an integer in 0..%d "
                 "(GET /translator/models lists them)", INT_MAX);
        return 400;
    }
    const int id = first_id ? (int)json_integer_value(first_id) : 0;
    if (!(c->spec = server_models_find(s->models, id))) {
        snprintf(msg, size, "no model %d (GET /translator/models lists them)", id);
        return 404;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(root, i), *item_id = json_object_get(item, "id");
        nmt_request_options *o = &c->options[i];
        if (!server_read_item(s, c->spec, item, i, c->score, o, msg, size))
            return 400;
        if (item_id && json_integer_value(item_id) != id) {
            snprintf(msg, size, "item %zu: model %d, item 0's %d: a request goes to one model, "
                     "the first item's \"id\"", i, (int)json_integer_value(item_id), id);
            return 400;
        }
        const int n_best = c->score ? 1 /* a scored pair's one hypothesis */
                           : o->n_best > 0 ? o->n_best : c->spec->args.engine.n_best;
        if (i > 0 && n_best != c->n_best) {
            snprintf(msg, size, "item %zu: n_best %d, item 0's %d: a request has one n_best "
                     "(the answer is a list per rank)", i, n_best, c->n_best);
            return 400;
        }
        c->n_best = n_best;
    }
    return 0;
}

/* Queues every item on use's service; on success *requests holds n handles. */
static int submit_all(const server_use *use, json_t *root, const checked_request *c,
                      nmt_request **requests, server_response *out)
{
    char msg[300];
    const size_t n = json_array_size(root);
    for (size_t i = 0; i < n; i++) {
        nmt_error err = {0};
        json_t *item = json_array_get(root, i), *src = json_object_get(item, "src");
        nmt_request_options o = c->options[i];
        int failed = 0;
        char *suppress = server_sequences_text(json_object_get(item, "suppress"), &failed);
        o.suppress = suppress;
        nmt_status st = NMT_STATUS_ERROR_MEMORY;
        if (failed)
            snprintf(err.message, sizeof err.message, "out of memory");
        else
            st = nmt_service_submit(use->service, json_string_value(src), &o, NULL, NULL,
                                    &requests[i], &err);
        free(suppress);
        if (st != NMT_STATUS_OK) {
            for (size_t k = 0; k < i; k++)
                nmt_request_free(requests[k]); /* cancels what is queued */
            snprintf(msg, sizeof msg, "item %zu: %s", i, err.message);
            server_error(out, code_for(st), msg);
            out->retry_after = st == NMT_STATUS_BUSY ? 1 : 0;
            return 0;
        }
    }
    return 1;
}

/* ---- the answer ------------------------------------------------------------------ */

static int by_source_then_target(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* OpenNMT-py's "align": ["s-t s-t ..."], target token t attending source
 * token s most, the pairs sorted by s then t (its build_align_pharaoh). */
static json_t *alignment_json(const nmt_hypothesis *h)
{
    const size_t n = (size_t)h->n_tokens;
    int *pairs = malloc(2 * n * sizeof *pairs + 1);
    char *text = malloc(1 + 24 * n); /* "s-t ", two ints and a space each */
    json_t *list = NULL;
    if (pairs && text) {
        for (size_t t = 0; t < n; t++) {
            pairs[2 * t] = h->alignment ? h->alignment[t] : -1;
            pairs[2 * t + 1] = (int)t;
        }
        qsort(pairs, n, 2 * sizeof *pairs, by_source_then_target);
        size_t at = 0;
        text[0] = '\0';
        for (size_t k = 0; k < n; k++)
            at += (size_t)snprintf(text + at, 1 + 24 * n - at, "%s%d-%d", k ? " " : "",
                                   pairs[2 * k], pairs[2 * k + 1]);
        list = json_pack("[s]", text);
    }
    free(pairs);
    free(text);
    return list;
}

/* OpenNMT-py's "align_score": ["t-w t-w ..."], w the largest attention
 * weight of target token t over its row's sum, 5 decimals; NULL without
 * weights. */
static json_t *align_score_json(const nmt_result *r, const nmt_hypothesis *h)
{
    if (!h->attention || r->n_src <= 0)
        return NULL;
    const size_t n = (size_t)h->n_tokens, size = 1 + 32 * n;
    char *text = malloc(size);
    if (!text)
        return NULL;
    size_t at = 0;
    text[0] = '\0';
    for (size_t t = 0; t < n; t++) {
        const float *row = h->attention + t * (size_t)r->n_src;
        double sum = 0.0, best = 0.0;
        for (int j = 0; j < r->n_src; j++) {
            sum += row[j];
            best = row[j] > best ? row[j] : best;
        }
        at += (size_t)snprintf(text + at, size - at, "%s%zu-%.5f", t ? " " : "", t,
                               sum > 0.0 ? best / sum : 0.0);
    }
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

/* Item i's hypothesis h with the fields the item or its model asks for;
 * NULL when out of memory. Past its hypotheses (h NULL), "tgt" is "" and
 * "pred_score" 0 for an empty line (OpenNMT-py's n_best empty translations
 * of an empty input), else null. */
static json_t *hypothesis_json(const checked_request *c, json_t *item, const nmt_result *r,
                               const nmt_hypothesis *h)
{
    json_t *score = h ? json_real((double)h->score) : r->n_src == 0 ? json_real(0.0)
                                                                     : json_null();
    json_t *e = json_pack("{s:O, s:s, s:i, s:o}", "src", json_object_get(item, "src"), "tgt",
                          h ? h->text : "", "n_best", c->n_best, "pred_score", score);
    /* an empty line has no alignment (OpenNMT-py leaves it out) */
    const int align = r->n_src > 0 && (c->spec->report_align ||
                                       json_is_true(json_object_get(item, "align")));
    int ok = e != NULL;
    if (ok && h && align) {
        json_t *score = align_score_json(r, h);
        ok = json_object_set_new(e, "align", alignment_json(h)) == 0 &&
             (!score || json_object_set_new(e, "align_score", score) == 0);
    }
    if (ok && h && c->score)
        ok = json_object_set_new(e, "log_prob", json_real((double)h->log_prob)) == 0;
    if (ok && h && json_is_true(json_object_get(item, "token_scores")))
        ok = json_object_set_new(e, "token_scores", token_scores_json(h)) == 0;
    if (ok && h && json_is_true(json_object_get(item, "attention")))
        ok = json_object_set_new(e, "attention", attention_json(r, h)) == 0;
    if (!ok)
        json_decref(e);
    return ok ? e : NULL;
}

/* Waits for every request and writes OpenNMT-py's answer (or the first
 * failed item's error, or 503 at the drain's deadline). The requests not
 * waited for are cancelled by the caller's nmt_request_free. */
static void answer(server *s, json_t *root, const checked_request *c, nmt_request **requests,
                   server_response *out)
{
    const size_t n = json_array_size(root);
    json_t *ranks = json_array(); /* ranks[k][i]: item i's hypothesis k */
    char msg[400];
    for (int k = 0; ranks && k < c->n_best; k++)
        if (json_array_append_new(ranks, json_array()) != 0) {
            json_decref(ranks);
            ranks = NULL;
        }
    for (size_t i = 0; ranks && i < n; i++) {
        if (!wait_request(s, requests[i])) {
            server_error(out, 503, "the server is shutting down: not translated within "
                                   "--timeout of the stop");
            json_decref(ranks);
            return;
        }
        const nmt_result *r = nmt_request_result(requests[i]);
        if (r->status != NMT_STATUS_OK) {
            snprintf(msg, sizeof msg, "item %zu: %s", i, r->message);
            server_error(out, code_for(r->status), msg);
            json_decref(ranks);
            return;
        }
        for (int k = 0; ranks && k < c->n_best; k++) {
            const nmt_hypothesis *h = k < r->n_hypotheses ? &r->hypotheses[k] : NULL;
            if (json_array_append_new(json_array_get(ranks, k),
                                      hypothesis_json(c, json_array_get(root, i), r, h)) != 0) {
                json_decref(ranks);
                ranks = NULL;
            }
        }
    }
    answer_json(out, ranks);
}

/* /translator/translate (score 0) and /translator/score (1). */
static void serve_items(server *s, const char *body, size_t length, int score,
                        server_response *out)
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
    checked_request c = {.options = calloc(n, sizeof *c.options), .score = score};
    nmt_request **requests = calloc(n, sizeof *requests);
    server_use use = {0};
    unsigned code;
    if (!requests || !c.options) {
        server_error(out, 500, "out of memory");
    } else if ((code = check_request(s, root, &c, msg, sizeof msg)) != 0 ||
               (code = server_models_acquire(s->models, c.spec->id, &use, msg, sizeof msg)) != 0) {
        server_error(out, code, msg);
        out->retry_after = code == 503 ? 1 : 0;
    } else {
        if (submit_all(&use, root, &c, requests, out)) {
            answer(s, root, &c, requests, out);
            for (size_t i = 0; i < n; i++)
                nmt_request_free(requests[i]);
            if (out->code == 200)
                server_metrics_translation(&s->metrics, (int)n, server_now() - started);
        }
        server_models_release(s->models, &use);
    }
    free(requests);
    free(c.options);
    json_decref(root);
}

void server_translate(server *s, const char *body, size_t length, server_response *out)
{
    serve_items(s, body, length, 0, out);
}

void server_score(server *s, const char *body, size_t length, server_response *out)
{
    serve_items(s, body, length, 1, out);
}

/* ---- the models ------------------------------------------------------------------ */

void server_list_models(server *s, server_response *out)
{
    out->code = 200;
    out->content_type = "application/json";
    out->body = server_models_list_json(s->models);
    out->length = out->body ? strlen(out->body) : 0;
    if (!out->body)
        server_error(out, 500, "out of memory");
}

void server_unload_model(server *s, const char *id_text, server_response *out)
{
    char msg[200], *end = NULL;
    /* digits only, as OpenNMT-py's <int:model_id> route */
    const long id = id_text[0] >= '0' && id_text[0] <= '9' && strlen(id_text) <= 10
                        ? strtol(id_text, &end, 10)
                        : -1;
    if (id < 0 || id > INT_MAX || !end || *end) {
        server_error(out, 404, "no such path: /translator/unload_model/ takes a model id");
        return;
    }
    const unsigned code = server_models_unload(s->models, (int)id, msg, sizeof msg);
    json_t *doc = code ? json_pack("{s:i, s:s, s:s}", "model_id", (int)id, "status", "error",
                                   "error", msg)
                       : json_pack("{s:i, s:s}", "model_id", (int)id, "status", "ok");
    answer_json(out, doc);
    if (code && out->code == 200)
        out->code = code;
}
