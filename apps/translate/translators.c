/* translators.c: translate's translators (translators.h): one, or one a
 * worker (--workers N on the CPU), or one a device (--devices on CUDA).
 * CUDA devices start up in parallel, a thread each (context, weight upload,
 * warm-up), so another GPU adds no serial start-up; CPU workers one after
 * the other, since the BLAS keeps one thread count for the process. */
#include "translators.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct create_job {
    const nmt_model *model;
    nmt_options options;
    nmt_translator *translator;
    nmt_status status;
    nmt_error err;
    pthread_t thread;
    int started;
} create_job;

static void *create_main(void *arg)
{
    create_job *job = arg;
    job->status = nmt_translator_create(job->model, &job->options, &job->translator, &job->err);
    return NULL;
}

int translate_translators_planned(const translate_args *args)
{
    if (args->dry_run)
        return 0;
    if (args->n_devices > 0)
        return args->n_devices < TRANSLATE_MAX_TRANSLATORS ? args->n_devices
                                                           : TRANSLATE_MAX_TRANSLATORS;
    if (args->n_devices < 0) { /* all: the visible ones */
        const int visible = nmt_cuda_available();
        return visible < TRANSLATE_MAX_TRANSLATORS ? visible : TRANSLATE_MAX_TRANSLATORS;
    }
    return args->workers > 1 ? args->workers : 1;
}

/* The options of translator i, or EXIT_USAGE said. */
static int options_of(const translate_args *args, int n, int i, nmt_options *o)
{
    *o = args->engine;
    if (args->n_devices != 0) {
        if (o->device == NMT_DEVICE_CPU) {
            fprintf(stderr, "translate: --devices is for CUDA (use --workers on the CPU)\n");
            return EXIT_USAGE;
        }
        if (n == 0) {
            fprintf(stderr, "translate: --devices all: no CUDA device is visible\n");
            return EXIT_USAGE;
        }
        o->device = NMT_DEVICE_CUDA;
        o->device_index = args->n_devices > 0 ? args->devices[i] : i;
    } else if (args->workers > 1 && o->device == NMT_DEVICE_CUDA) {
        fprintf(stderr, "translate: --workers is for the CPU (use --devices on CUDA)\n");
        return EXIT_USAGE;
    }
    if (o->threads == 0) /* the cores shared by the workers */
        o->threads = nmt_cpu_default_threads(n);
    return EXIT_OK;
}

/* Says why job i failed; the exit status. */
static int report_failure(const translate_args *args, const create_job *job)
{
    /* A bad option, or a device this build or machine does not have: both
     * are the configuration's fault, not a failed translation. */
    if (job->err.status == NMT_STATUS_ERROR_UNSUPPORTED && job->options.device == NMT_DEVICE_CUDA)
        fprintf(stderr, "translate: --device cuda: %s (use --device cpu or auto)\n",
                job->err.message);
    else
        fprintf(stderr, "translate: %s%s\n", job->err.message,
                args->n_devices != 0 ? " (--devices)" : "");
    return job->err.status == NMT_STATUS_ERROR_ARGUMENT ||
                   job->err.status == NMT_STATUS_ERROR_UNSUPPORTED
               ? EXIT_USAGE
               : EXIT_FAILED;
}

int translate_create_translators(const translate_args *args, const nmt_model *model,
                                 translate_translators *out)
{
    create_job jobs[TRANSLATE_MAX_TRANSLATORS];
    const int n = translate_translators_planned(args);
    int code = EXIT_OK;
    memset(jobs, 0, sizeof jobs);
    memset(out, 0, sizeof *out);
    if (args->n_devices != 0 && n == 0)
        return options_of(args, 0, 0, &jobs[0].options);
    for (int i = 0; i < n && code == EXIT_OK; i++) {
        jobs[i].model = model;
        code = options_of(args, n, i, &jobs[i].options);
    }
    if (code != EXIT_OK)
        return code;
    const int parallel = args->n_devices != 0 && n > 1;
    int made = n;
    for (int i = 0; i < n; i++) {
        if (parallel && pthread_create(&jobs[i].thread, NULL, create_main, &jobs[i]) == 0) {
            jobs[i].started = 1;
            continue;
        }
        create_main(&jobs[i]);
        if (!parallel && jobs[i].status != NMT_STATUS_OK) {
            made = i + 1; /* the first failure says it; no more are made */
            break;
        }
    }
    for (int i = 0; i < n; i++)
        if (jobs[i].started)
            pthread_join(jobs[i].thread, NULL);
    for (int i = 0; i < made; i++) {
        const create_job *job = &jobs[i];
        if (job->status != NMT_STATUS_OK) {
            if (code == EXIT_OK)
                code = report_failure(args, job);
            continue;
        }
        out->translators[out->n++] = job->translator;
        /* A device without memory for the batch: the library halves it (its
         * stats say the size chosen). */
        nmt_stats chosen;
        nmt_error err = {0};
        if (!args->quiet && code == EXIT_OK &&
            nmt_translator_stats(job->translator, &chosen, &err) == NMT_STATUS_OK &&
            chosen.batch_size < job->options.batch_size)
            fprintf(stderr, "translate: note: the device has room for --batch-size %lld of %d\n",
                    (long long)chosen.batch_size, job->options.batch_size);
        if (nmt_translator_device(job->translator) == NMT_DEVICE_CUDA) /* for the messages */
            snprintf(out->labels[out->n - 1], sizeof out->labels[0],
                     "CUDA device %d (translator %d)", job->options.device_index, out->n - 1);
        else
            snprintf(out->labels[out->n - 1], sizeof out->labels[0], "CPU worker %d", i);
        if (code == EXIT_OK && args->workers > 1 &&
            nmt_translator_device(job->translator) == NMT_DEVICE_CUDA) {
            fprintf(stderr, "translate: --workers is for the CPU (use --devices on CUDA)\n");
            code = EXIT_USAGE;
        }
    }
    return code;
}

void translate_free_translators(translate_translators *t)
{
    for (int i = 0; i < t->n; i++)
        nmt_translator_free(t->translators[i]);
    t->n = 0;
}
