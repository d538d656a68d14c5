/* models.c: the registry of the models nmt-server serves (server.h).
 *
 * A model is its spec, its weights (nmt_model, host memory) and its service
 * (the workers' translators, and on CUDA their device memory). It loads at
 * start (spec.load) or at its first request; requests for a model being
 * loaded wait for that load. It goes after spec.timeout_s without a request
 * (on_timeout: "to_cpu" frees the service and keeps the weights, so the next
 * request only makes translators again; "unload" frees both), on
 * /translator/unload_model (both), or, under --max-loaded-models, to make
 * room for another (both: the model idle longest, never one in use; when
 * every loaded model is in use, the request waits up to --timeout for one
 * to fall idle).
 *
 * Everything is under one lock, held only to read and change the state:
 * loading a file and creating or freeing a service happen outside it. A
 * request holds its model's service (server_loaded.users) from acquire to
 * release; a service taken away meanwhile is detached and freed by its last
 * holder, and the weights it runs on stay until then (refs). So the memory
 * held is the loaded models', plus, briefly, a taken-away service whose
 * requests are finishing. */
#include "server.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct server_weights {
    nmt_model *model;
    int refs; /* the entry's (kept by to_cpu) and each service's on it */
} server_weights;

struct server_loaded {
    nmt_service *service;
    server_weights *weights;
    int users;    /* requests holding it */
    int detached; /* no longer its model's: its last user frees it */
};

typedef struct model_entry {
    const server_model_spec *spec;
    server_loaded *live;     /* the service requests get; NULL: none */
    server_weights *weights; /* kept for the next service (to_cpu); NULL: none */
    int loading;             /* a request is making its service */
    double last_used;        /* loaded, or its last request released */
} model_entry;

struct server_models {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a load ended, or a service's last request released it */
    server_settings settings;
    server_model_spec *specs;
    model_entry *entries;
    int n;
};

server_models *server_models_create(server_model_spec *specs, int n_specs,
                                    const server_settings *settings)
{
    server_models *m = calloc(1, sizeof *m);
    model_entry *entries = calloc((size_t)n_specs, sizeof *entries);
    if (!m || !entries) {
        free(m);
        free(entries);
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->changed, NULL);
    m->settings = *settings;
    m->specs = specs;
    m->entries = entries;
    m->n = n_specs;
    for (int i = 0; i < n_specs; i++)
        entries[i].spec = &specs[i];
    return m;
}

static model_entry *find(const server_models *m, int id)
{
    for (int i = 0; i < m->n; i++)
        if (m->entries[i].spec->id == id)
            return &m->entries[i];
    return NULL;
}

const server_model_spec *server_models_find(const server_models *m, int id)
{
    const model_entry *e = find(m, id);
    return e ? e->spec : NULL;
}

/* Under the lock: drops a reference; the model to free (outside it) at the last. */
static nmt_model *unref_weights(server_weights *w)
{
    if (!w || --w->refs > 0)
        return NULL;
    nmt_model *model = w->model;
    free(w);
    return model;
}

/* Under the lock: takes e's service away; it, when no request holds it (the
 * caller frees it outside the lock), else NULL (its last user will). */
static server_loaded *detach(model_entry *e)
{
    server_loaded *l = e->live;
    e->live = NULL;
    if (!l)
        return NULL;
    l->detached = 1;
    return l->users == 0 ? l : NULL;
}

/* Outside the lock: frees a detached service nobody holds, then its weights
 * reference. */
static void free_loaded(server_models *m, server_loaded *l)
{
    if (!l)
        return;
    nmt_service_free(l->service);
    pthread_mutex_lock(&m->lock);
    nmt_model *model = unref_weights(l->weights);
    pthread_mutex_unlock(&m->lock);
    nmt_model_free(model);
    free(l);
}

/* What a detach or an unload leaves to free outside the lock. */
typedef struct doomed {
    server_loaded *loaded;
    nmt_model *weights;
} doomed;

static void free_doomed(server_models *m, doomed d)
{
    free_loaded(m, d.loaded);
    nmt_model_free(d.weights);
}

/* Under the lock: takes e's service and weights away. */
static doomed unload_entry(model_entry *e)
{
    doomed d = {.loaded = detach(e), .weights = unref_weights(e->weights)};
    e->weights = NULL;
    return d;
}

static nmt_service_options service_options(const server_settings *s, const translate_args *a)
{
    nmt_service_options o;
    nmt_service_options_init(&o);
    const int service_batch_size = o.translator.batch_size;
    o.translator = a->engine;
    o.cpu_workers = a->workers;
    o.queue_capacity = s->queue_capacity;
    o.max_delay_us = s->max_delay_us;
    o.continuous = s->continuous;
    o.join_every = s->join_every;
    o.workers_per_device = s->workers_per_device;
    if (a->batch_size_given) /* else the service's default, not translate's */
        o.translator.batch_size = a->engine.batch_size;
    else
        o.translator.batch_size = service_batch_size;
    o.max_batch_tokens = a->engine.max_batch_tokens; /* translate's option */
    o.n_devices = a->n_devices;
    o.devices = a->devices;
    return o;
}

/* Outside the lock: the service of e's spec on weights w (loaded from the
 * file when NULL). A new server_loaded, or NULL with the message and *code
 * EXIT_MODEL (the file) or EXIT_FAILED (the service). */
static server_loaded *load(server_models *m, const model_entry *e, server_weights *w,
                           int *code, char *message, size_t size)
{
    nmt_error err = {0};
    const server_model_spec *spec = e->spec;
    server_loaded *l = calloc(1, sizeof *l);
    nmt_model *model = NULL;
    if (!l || (!w && !(w = calloc(1, sizeof *w)))) {
        free(l);
        snprintf(message, size, "model %d: out of memory", spec->id);
        *code = EXIT_FAILED;
        return NULL;
    }
    if (!w->model && nmt_model_load(spec->args.model_path, &model, &err) != NMT_STATUS_OK) {
        snprintf(message, size, "model %d: %s", spec->id, err.message);
        *code = EXIT_MODEL;
        free(w);
        free(l);
        return NULL;
    }
    if (!w->model) {
        w->model = model;
        w->refs = 1; /* this service's */
    }
    const nmt_service_options so = service_options(&m->settings, &spec->args);
    if (nmt_service_create(w->model, &so, &l->service, &err) != NMT_STATUS_OK) {
        snprintf(message, size, "model %d: %s", spec->id, err.message);
        *code = EXIT_FAILED;
        pthread_mutex_lock(&m->lock);
        model = unref_weights(w);
        pthread_mutex_unlock(&m->lock);
        nmt_model_free(model);
        free(l);
        return NULL;
    }
    l->weights = w;
    return l;
}

/* Under the lock, e not loaded: room for one more service under
 * max_loaded, made by unloading the model idle longest. 1, or 0 when every
 * loaded model is in use. */
static int make_room(server_models *m, doomed *freed)
{
    int loaded = 0;
    model_entry *idlest = NULL;
    for (int i = 0; i < m->n; i++) {
        model_entry *o = &m->entries[i];
        loaded += o->live || o->loading;
        if (o->live && o->live->users == 0 && (!idlest || o->last_used < idlest->last_used))
            idlest = o;
    }
    if (m->settings.max_loaded == 0 || loaded < m->settings.max_loaded)
        return 1;
    if (!idlest)
        return 0;
    *freed = unload_entry(idlest);
    return 1;
}

/* Under the lock: waits for m->changed until `until` (server_now()); 0 once
 * it has passed. */
static int wait_changed(server_models *m, double until)
{
    const double left = until - server_now();
    if (left <= 0.0)
        return 0;
    struct timespec wake;
    clock_gettime(CLOCK_REALTIME, &wake);
    const double at = (double)wake.tv_nsec * 1e-9 + (left < 1.0 ? left : 1.0);
    wake.tv_sec += (time_t)at;
    wake.tv_nsec = (long)((at - floor(at)) * 1e9);
    pthread_cond_timedwait(&m->changed, &m->lock, &wake);
    return 1;
}

/* Under the lock (released while loading): e's service, loaded when it is
 * not. Under max_loaded it waits up to the server's --timeout for a loaded
 * model to fall idle. 0, or *code (EXIT_MODEL, EXIT_FAILED, or -1: no room)
 * with the message. */
static int ensure_loaded(server_models *m, model_entry *e, int *code, char *message, size_t size)
{
    const double until = server_now() + m->settings.timeout_s;
    doomed freed = {0};
    for (;;) {
        while (e->loading)
            pthread_cond_wait(&m->changed, &m->lock);
        if (e->live)
            return 0;
        if (make_room(m, &freed))
            break;
        if (!wait_changed(m, until)) {
            snprintf(message, size, "model %d: the %d models loaded (--max-loaded-models) "
                     "stayed in use for --timeout %d s; retry", e->spec->id,
                     m->settings.max_loaded, m->settings.timeout_s);
            *code = -1;
            return -1;
        }
    }
    e->loading = 1;
    server_weights *w = e->weights;
    if (w)
        w->refs++; /* the new service's */
    pthread_mutex_unlock(&m->lock);
    free_doomed(m, freed);
    server_loaded *l = load(m, e, w, code, message, size);
    pthread_mutex_lock(&m->lock);
    e->loading = 0;
    pthread_cond_broadcast(&m->changed);
    if (!l)
        return -1;
    if (e->spec->keep_weights && !e->weights) {
        e->weights = l->weights;
        e->weights->refs++;
    }
    e->live = l;
    e->last_used = server_now();
    return 0;
}

unsigned server_models_acquire(server_models *m, int id, server_use *use, char *message,
                               size_t size)
{
    model_entry *e = find(m, id);
    if (!e) {
        snprintf(message, size, "no model %d (GET /translator/models lists them)", id);
        return 404;
    }
    int code = 0;
    pthread_mutex_lock(&m->lock);
    if (ensure_loaded(m, e, &code, message, size) != 0) {
        pthread_mutex_unlock(&m->lock);
        return code == -1 ? 503 : 500;
    }
    e->live->users++;
    *use = (server_use){.spec = e->spec, .service = e->live->service, .loaded = e->live};
    pthread_mutex_unlock(&m->lock);
    return 0;
}

void server_models_release(server_models *m, server_use *use)
{
    server_loaded *l = use->loaded;
    if (!l)
        return;
    pthread_mutex_lock(&m->lock);
    model_entry *e = find(m, use->spec->id);
    if (e->live == l)
        e->last_used = server_now(); /* the idle time starts again */
    const int last = --l->users == 0 && l->detached;
    if (l->users == 0)
        pthread_cond_broadcast(&m->changed); /* room for a model waiting to load */
    pthread_mutex_unlock(&m->lock);
    if (last)
        free_loaded(m, l);
    use->loaded = NULL;
}

int server_models_load_all(server_models *m, char *message, size_t size)
{
    int at_start = 0;
    for (int i = 0; i < m->n; i++)
        at_start += m->entries[i].spec->load;
    if (m->settings.max_loaded > 0 && at_start > m->settings.max_loaded) {
        snprintf(message, size, "%d models have \"load\": true, more than --max-loaded-models "
                 "%d", at_start, m->settings.max_loaded);
        return EXIT_USAGE;
    }
    for (int i = 0; i < m->n; i++) {
        int code = EXIT_OK;
        if (!m->entries[i].spec->load)
            continue;
        pthread_mutex_lock(&m->lock);
        const int failed = ensure_loaded(m, &m->entries[i], &code, message, size);
        pthread_mutex_unlock(&m->lock);
        if (failed)
            return code > 0 ? code : EXIT_FAILED;
    }
    return EXIT_OK;
}

unsigned server_models_unload(server_models *m, int id, char *message, size_t size)
{
    model_entry *e = find(m, id);
    if (!e) {
        snprintf(message, size, "no model %d (GET /translator/models lists them)", id);
        return 404;
    }
    pthread_mutex_lock(&m->lock);
    while (e->loading)
        pthread_cond_wait(&m->changed, &m->lock);
    const doomed d = unload_entry(e);
    pthread_mutex_unlock(&m->lock);
    free_doomed(m, d);
    return 0;
}

void server_models_expire(server_models *m, double now)
{
    for (int i = 0; i < m->n; i++) {
        model_entry *e = &m->entries[i];
        doomed d = {0};
        pthread_mutex_lock(&m->lock);
        const double timeout = e->spec->timeout_s;
        if (e->live && e->live->users == 0 && timeout >= 0 && now - e->last_used >= timeout) {
            if (e->spec->keep_weights)
                d.loaded = detach(e);
            else
                d = unload_entry(e);
        }
        pthread_mutex_unlock(&m->lock);
        free_doomed(m, d);
    }
}

/* One model as OpenNMT-py's ServerModel.to_dict: model_id, opt (as given),
 * models, loaded, timeout. */
static json_t *model_json(const model_entry *e)
{
    const server_model_spec *s = e->spec;
    json_t *opt = json_loads(s->opt_json, 0, NULL);
    const double t = s->timeout_s < 0 ? -1.0 : s->timeout_s;
    json_t *timeout = t == floor(t) ? json_integer((json_int_t)t) : json_real(t);
    json_t *doc = opt && timeout ? json_pack("{s:i, s:O, s:[s], s:b, s:O}", "model_id", s->id,
                                             "opt", opt, "models", s->args.model_path, "loaded",
                                             e->live || e->weights || e->loading, "timeout",
                                             timeout)
                                 : NULL;
    json_decref(opt);
    json_decref(timeout);
    return doc;
}

char *server_models_list_json(server_models *m)
{
    json_t *list = json_array();
    pthread_mutex_lock(&m->lock);
    for (int i = 0; list && i < m->n; i++)
        if (json_array_append_new(list, model_json(&m->entries[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    pthread_mutex_unlock(&m->lock);
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return text;
}

void server_models_stats(server_models *m, nmt_service_stats *sum, int *loaded)
{
    memset(sum, 0, sizeof *sum);
    *loaded = 0;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->n; i++) {
        if (!m->entries[i].live)
            continue;
        nmt_service_stats st;
        nmt_service_stats_get(m->entries[i].live->service, &st);
        ++*loaded;
        sum->queued += st.queued;
        sum->running += st.running;
        sum->submitted += st.submitted;
        sum->completed += st.completed;
        sum->failed += st.failed;
        sum->cancelled += st.cancelled;
        sum->expired += st.expired;
        sum->rejected += st.rejected;
        sum->batches += st.batches;
        sum->batch_sentences += st.batch_sentences;
        /* each service reports its devices' memory: the same GPU's, counted once */
        if (st.device_memory_used > sum->device_memory_used)
            sum->device_memory_used = st.device_memory_used;
        if (st.device_memory_total > sum->device_memory_total)
            sum->device_memory_total = st.device_memory_total;
    }
    pthread_mutex_unlock(&m->lock);
}

void server_models_free(server_models *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++) {
        pthread_mutex_lock(&m->lock);
        const doomed d = unload_entry(&m->entries[i]);
        pthread_mutex_unlock(&m->lock);
        free_doomed(m, d);
    }
    pthread_cond_destroy(&m->changed);
    pthread_mutex_destroy(&m->lock);
    server_model_specs_free(m->specs, m->n);
    free(m->entries);
    free(m);
}
