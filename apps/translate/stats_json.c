/* stats_json.c: the --stats file of translate: the library's counters
 * (nmt_translator_stats) as one JSON object, with the derived means that the
 * evaluation scripts (dev/eval/lsh-grid) read. */
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *share_name(nmt_lsh_share share)
{
    return share == NMT_LSH_SHARE_ROW ? "row" : share == NMT_LSH_SHARE_SENTENCE ? "sentence"
                                                                               : "batch";
}

int translate_open_stats(const translate_args *args, stats_output *out, char *message,
                         size_t message_size)
{
    out->file = NULL;
    out->created = 0;
    int fd = open(args->stats_path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd >= 0)
        out->created = 1;
    else if (errno == EEXIST)
        fd = open(args->stats_path, O_WRONLY);
    if (fd < 0 || !(out->file = fdopen(fd, "w"))) {
        snprintf(message, message_size, "%s: cannot write %s: %s", args->stats_option,
                 args->stats_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        translate_discard_stats(args, out);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

void translate_discard_stats(const translate_args *args, stats_output *out)
{
    if (out->file)
        fclose(out->file);
    if (out->created)
        unlink(args->stats_path);
    out->file = NULL;
    out->created = 0;
}

/* Every fprintf is checked through the stream's error flag at the end
 * (ferror, then fclose's own flush): a full disk loses no counter silently. */
/* Each translator's sentences, then its decode seconds, as JSON arrays. */
static void write_per_worker(FILE *f, const nmt_stats *each, int n)
{
    fprintf(f, "  \"worker_sentences\": [");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)each[i].sentences);
    fprintf(f, "],\n  \"worker_decode_seconds\": [");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.6f", i ? ", " : "", each[i].decode_seconds);
    fprintf(f, "],\n");
}

/* --timing's clock (translate_timing) and the pipeline's lines a second. */
static void write_timing(FILE *f, const translate_timing *t)
{
    fprintf(f, "  \"model_load_seconds\": %.6f,\n  \"startup_seconds\": %.6f,\n",
            t->model_load, t->startup);
    fprintf(f, "  \"model_read_seconds\": %.6f,\n  \"driver_start_seconds\": %.6f,\n",
            t->model_read, t->driver_start);
    if (t->first_output > 0)
        fprintf(f, "  \"first_output_seconds\": %.6f,\n", t->first_output);
    else
        fprintf(f, "  \"first_output_seconds\": null,\n");
    fprintf(f, "  \"pipeline_seconds\": %.6f,\n  \"lines_per_second\": %.1f,\n",
            t->pipeline, t->pipeline > 0 ? (double)t->pipeline_lines / t->pipeline : 0.0);
    fprintf(f, "  \"host_threads\": %d,\n  \"dry_run\": %s,\n  \"warmup\": %s,\n",
            t->host_threads, t->dry_run ? "true" : "false", t->warmup ? "true" : "false");
}

int translate_write_stats(const translate_args *args, const nmt_translator *const *translators,
                          int n_translators, const translate_timing *timing, stats_output *out,
                          char *message, size_t message_size)
{
    nmt_stats st;
    memset(&st, 0, sizeof st);
    nmt_error err = {0};
    const nmt_translator *translator = n_translators > 0 ? translators[0] : NULL;
    nmt_stats *each = calloc(n_translators > 0 ? (size_t)n_translators : 1, sizeof *each);
    if (!each) {
        snprintf(message, message_size, "%s: out of memory", args->stats_option);
        translate_discard_stats(args, out);
        return EXIT_FAILED;
    }
    /* Several workers: their counters summed (decode_seconds_summed: the
     * workers' decode times; decode_seconds is the wall time). */
    for (int i = 0; i < n_translators; i++) {
        nmt_stats one;
        if (nmt_translator_stats(translators[i], &one, &err) != NMT_STATUS_OK) {
            snprintf(message, message_size, "%s: %s", args->stats_option, err.message);
            translate_discard_stats(args, out);
            free(each);
            return EXIT_FAILED;
        }
        each[i] = one;
        if (i == 0) {
            st = one;
            continue;
        }
        st.sentences += one.sentences;
        st.steps += one.steps;
        st.decode_seconds += one.decode_seconds;
        st.output_layer_ms = st.output_layer_ms >= 0 && one.output_layer_ms >= 0
                                 ? st.output_layer_ms + one.output_layer_ms
                                 : -1.0;
        st.row_steps += one.row_steps;
        st.recall_hits += one.recall_hits;
        st.candidate_words += one.candidate_words;
        st.graph_runs += one.graph_runs;
        st.eager_runs += one.eager_runs;
        st.split_batches += one.split_batches;
        st.sparse_matrices = one.sparse_matrices; /* the same options on every translator */
        st.batch_size = one.batch_size < st.batch_size ? one.batch_size : st.batch_size;
        /* each device's own peak: the largest */
        st.device_memory_bytes = one.device_memory_bytes > st.device_memory_bytes
                                     ? one.device_memory_bytes
                                     : st.device_memory_bytes;
        st.device_memory_used = one.device_memory_used > st.device_memory_used
                                    ? one.device_memory_used
                                    : st.device_memory_used;
        /* the translators start side by side: the slowest of each phase */
        st.startup_context_seconds = fmax(st.startup_context_seconds, one.startup_context_seconds);
        st.startup_upload_seconds = fmax(st.startup_upload_seconds, one.startup_upload_seconds);
        st.startup_warmup_seconds = fmax(st.startup_warmup_seconds, one.startup_warmup_seconds);
    }
    FILE *f = out->file;
    out->file = NULL;
    out->created = 0;
    struct stat st_file;
    if (fstat(fileno(f), &st_file) == 0 && S_ISREG(st_file.st_mode) &&
        ftruncate(fileno(f), 0) != 0) {
        snprintf(message, message_size, "%s: cannot truncate %s: %s", args->stats_option,
                 args->stats_path, strerror(errno));
        fclose(f);
        free(each);
        return EXIT_IO;
    }
    const nmt_shrink_options *sh = &args->engine.shrink;
    const int cuda = translator && nmt_translator_device(translator) == NMT_DEVICE_CUDA;
    const char *mode = sh->mode == NMT_SHRINK_LSH ? "lsh" : sh->mode == NMT_SHRINK_TOP ? "top"
                                                                                      : "full";
    fprintf(f, "{\n  \"device\": \"%s\",\n  \"precision\": \"%s\",\n  \"lines\": %ld,\n"
            "  \"sentences\": %lld,\n", !translator ? "none" : cuda ? "cuda" : "cpu",
            translator ? app_precision_name((nmt_precision)st.precision) : "none", timing->lines,
            (long long)st.sentences);
    fprintf(f, "  \"decode_seconds\": %.6f,\n  \"decode_seconds_summed\": %.6f,\n",
            timing->decode_wall, st.decode_seconds);
    write_timing(f, timing);
    fprintf(f, "  \"startup_context_seconds\": %.6f,\n  \"startup_upload_seconds\": %.6f,\n"
            "  \"startup_warmup_seconds\": %.6f,\n", st.startup_context_seconds,
            st.startup_upload_seconds, st.startup_warmup_seconds);
    write_per_worker(f, each, n_translators);
    free(each);
    fprintf(f, "  \"steps\": %lld,\n  \"row_steps\": %lld,\n", (long long)st.steps,
            (long long)st.row_steps);
    fprintf(f, "  \"graph_runs\": %lld,\n  \"eager_runs\": %lld,\n", (long long)st.graph_runs,
            (long long)st.eager_runs);
    fprintf(f, "  \"batch_size\": %lld,\n  \"split_batches\": %lld,\n",
            (long long)st.batch_size, (long long)st.split_batches);
    fprintf(f, "  \"sparse_matrices\": %lld,\n", (long long)st.sparse_matrices);
    if (cuda)
        fprintf(f, "  \"device_memory_bytes\": %lld,\n  \"device_memory_used\": %lld,\n",
                (long long)st.device_memory_bytes, (long long)st.device_memory_used);
    else
        fprintf(f, "  \"device_memory_bytes\": null,\n  \"device_memory_used\": null,\n");
    if (st.output_layer_ms >= 0)
        fprintf(f, "  \"output_layer_ms\": %.4f,\n", st.output_layer_ms);
    else
        fprintf(f, "  \"output_layer_ms\": null,\n");
    fprintf(f, "  \"vocab_mode\": \"%s\",\n", mode);
    if (sh->mode == NMT_SHRINK_NONE)
        fprintf(f, "  \"lsh\": null,\n");
    else {
        /* TOP hashes nothing: its K, u, W and t are 0. */
        const int lsh = sh->mode == NMT_SHRINK_LSH;
        fprintf(f, "  \"lsh\": {\"k\": %d, \"u\": %d, \"w\": %d, \"top\": %d, \"threshold\": %d, "
                   "\"share\": \"%s\", \"seed\": %u},\n",
                lsh * sh->k, lsh * sh->u, lsh * sh->w, sh->top, lsh * sh->threshold,
                share_name(sh->share), sh->seed);
    }
    if (st.row_steps > 0) {
        fprintf(f, "  \"candidates_per_row\": %.3f,\n",
                (double)st.candidate_words / (double)st.row_steps);
        fprintf(f, "  \"recall\": %.6f,\n", (double)st.recall_hits / (double)st.row_steps);
    } else {
        fprintf(f, "  \"candidates_per_row\": null,\n  \"recall\": null,\n");
    }
    fprintf(f, "  \"recall_rows\": %lld,\n  \"recall_hits\": %lld\n}\n", (long long)st.row_steps,
            (long long)st.recall_hits);
    const int write_error = ferror(f);
    if (fclose(f) != 0 || write_error) {
        snprintf(message, message_size, "%s: error writing %s: %s", args->stats_option,
                 args->stats_path, strerror(errno));
        return EXIT_IO;
    }
    return EXIT_OK;
}
