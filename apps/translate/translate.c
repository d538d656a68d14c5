/* translate: stdin -> stdout translation with the nmt library.
 *
 * One output line per input line, in order, always: a refused line is
 * reported on stderr with its line number and gives an empty line. The input
 * is read in windows of lines (--maxi-batch; one line at a time when stdin is
 * a terminal, so it answers as you type), each handed whole to
 * nmt_translate_batch, which sorts it by length and batches it (by sentences
 * or by source tokens, --batch-type). The run is a pipeline (pool.h): a
 * reader thread reads the next windows (reader.c) while the translators work
 * and this thread writes the finished windows in input order, so with one
 * translator reading and writing overlap decoding, and with --workers or
 * --devices several translators take windows in parallel; the output is the
 * same either way, and memory is bounded by the windows in flight.
 *
 * Every write is checked: an output that cannot be written (a full disk, a
 * closed pipe reader) ends the run with exit status 5 and says which. */
#include "nmt.h"
#include "fields.h"
#include "options.h"
#include "pool.h"
#include "reader.h"
#include "shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The default batch size for a file on CUDA (sentences): within 5% of the
 * sweep's best (4,096) on both models at beam 5 in half its device memory
 * (docs/performance.md, "Defaults"); a device that cannot hold it halves it
 * at create (create_translators). */
enum { TRANSLATE_CUDA_BATCH = 2048 };


/* Prints one input line's output: a line, or with --n-best N exactly N rows
 * (a refused line, or one with fewer hypotheses, is padded with rows of score
 * -inf and an empty text), each with the fields asked for (fields.h). Numbers
 * are printed as TRANSLATE_FLOAT (fields.h): they read back as the same float.
 * Returns a negative value when a write failed. */
static int print_result(const translate_args *args, FILE *out, long line_number,
                        const nmt_result *r)
{
    const char *ignored;
    const int n_best = args->engine.n_best;
    const int ok = r->status == NMT_STATUS_OK && r->n_hypotheses > 0;
    if (translate_args_target(args, &ignored) == TRANSLATE_TARGET_SCORE) {
        /* Scoring: LOGPROB<TAB>SCORE and the fields, one line a pair. */
        const nmt_hypothesis *h = ok ? &r->hypotheses[0] : NULL;
        const int written = h ? fprintf(out, TRANSLATE_FLOAT "\t" TRANSLATE_FLOAT, h->log_prob,
                                        h->score)
                              : fprintf(out, "-inf\t-inf");
        if (written < 0 || translate_print_fields(args, out, r, h) < 0)
            return -1;
        return fputc('\n', out) == EOF ? -1 : 0;
    }
    if (n_best > 1) {
        const int found = ok ? r->n_hypotheses : 0;
        for (int k = 0; k < n_best; k++) {
            const nmt_hypothesis *h = k < found ? &r->hypotheses[k] : NULL;
            int written;
            if (args->nbest_marian)
                written = translate_print_marian_row(args, out, line_number - 1, r, h);
            else if ((written = h ? fprintf(out, "%ld\t%d\t" TRANSLATE_FLOAT "\t%s", line_number,
                                            k + 1, h->score, h->text)
                                  : fprintf(out, "%ld\t%d\t-inf\t", line_number, k + 1)) >= 0)
                written = translate_print_fields(args, out, r, h);
            if (written < 0 || fputc('\n', out) == EOF)
                return -1;
        }
        return 0;
    }
    if (args->scores) {
        int written = ok ? fprintf(out, TRANSLATE_FLOAT "\t", r->hypotheses[0].score)
                         : fprintf(out, "-inf\t");
        if (written < 0)
            return -1;
    }
    if (fputs(ok ? r->hypotheses[0].text : "", out) == EOF)
        return -1;
    if (translate_print_fields(args, out, r, ok ? &r->hypotheses[0] : NULL) < 0)
        return -1;
    return fputc('\n', out) == EOF ? -1 : 0;
}

static void show_progress(long lines, long long tokens, double started, int final)
{
    double elapsed = translate_now_seconds() - started;
    fprintf(stderr, "\rtranslate: %ld lines, %.1f lines/s, %.0f target tokens/s%s", lines,
            elapsed > 0 ? (double)lines / elapsed : 0.0,
            elapsed > 0 ? (double)tokens / elapsed : 0.0, final ? "\n" : "");
    fflush(stderr);
}

/* Flushes and closes an output; 0, or -1 with errno when a write failed
 * (fclose reports what the last flush could not write). */
static int close_output(FILE *out)
{
    const int earlier = ferror(out);
    const int saved = errno;
    if (fclose(out) != 0)
        return -1;
    if (earlier) {
        errno = saved ? saved : EIO;
        return -1;
    }
    return 0;
}

static int write_error(const char *what)
{
    fprintf(stderr, "translate: error writing %s: %s\n", what, strerror(errno ? errno : EIO));
    return EXIT_IO;
}

/* Writes a translated chunk: one line (or n-best rows) per input line, a
 * refused line reported on stderr. Returns -1 with errno when a write failed
 * (the rest is still reported and cleared). */
/* *r = the error of a line refused here (too long, a NUL byte; a target
 * line also missing), `what` naming it. */
static void refuse_line(const input_line *line, const char *what, size_t max_bytes,
                        nmt_result *r)
{
    nmt_result_clear(r);
    r->status = NMT_STATUS_ERROR_INPUT;
    if (line->missing)
        snprintf(r->message, sizeof r->message, "%s: none (the file has fewer lines than the "
                 "input)", what);
    else if (line->too_long)
        snprintf(r->message, sizeof r->message, "%s too long: %zu bytes, the limit is %zu",
                 what, line->bytes, max_bytes);
    else
        snprintf(r->message, sizeof r->message, "%s contains a NUL byte", what);
}

static int write_chunk(const translate_args *args, FILE *out, chunk_slot *slot,
                       size_t max_bytes, int *bad_lines, long long *target_tokens)
{
    int write_failed = 0; /* the errno of the first failed write */
    const char *ignored;
    const char *target_what = translate_args_target(args, &ignored) == TRANSLATE_TARGET_SCORE
                                  ? "--score-target line"
                                  : "--target-prefix line";
    for (int i = 0; i < slot->n; i++) {
        const long number = slot->first_line + 1 + i;
        const input_line *line = &slot->lines[i];
        const input_line *target = slot->target_lines ? &slot->target_lines[i] : NULL;
        nmt_result *r = &slot->results[i];
        if (line->has_nul || line->too_long)
            refuse_line(line, "line", max_bytes, r);
        else if (target && (target->has_nul || target->too_long || target->missing))
            refuse_line(target, target_what, max_bytes, r);
        if (r->status != NMT_STATUS_OK) {
            fprintf(stderr, "translate: line %ld: %s\n", number, r->message);
            (*bad_lines)++;
        }
        if (r->status == NMT_STATUS_OK && r->n_hypotheses > 0)
            *target_tokens += r->hypotheses[0].n_tokens;
        if (!write_failed && print_result(args, out, number, r) < 0)
            write_failed = errno ? errno : EIO;
        nmt_result_clear(r);
    }
    if (write_failed)
        errno = write_failed;
    return write_failed ? -1 : 0;
}

/* One translator, or one a worker: --workers N on the CPU, one a device of
 * --devices on CUDA. EXIT_OK, or the exit status with the reason printed. */
static int create_translators(const translate_args *args, const app_models *models,
                              nmt_translator **out, char (*labels)[48], int *n_out)
{
    nmt_options o = args->engine;
    int n = 1, devices[64];
    if (args->n_devices != 0) {
        if (o.device == NMT_DEVICE_CPU) {
            fprintf(stderr, "translate: --devices is for CUDA (use --workers on the CPU)\n");
            return EXIT_USAGE;
        }
        o.device = NMT_DEVICE_CUDA;
        n = args->n_devices > 0 ? args->n_devices : nmt_cuda_available(); /* all: visible */
        if (n == 0) {
            fprintf(stderr, "translate: --devices all: no CUDA device is visible\n");
            return EXIT_USAGE;
        }
        n = n < 64 ? n : 64;
        for (int i = 0; i < n; i++)
            devices[i] = args->n_devices > 0 ? args->devices[i] : i;
    } else if (args->workers > 1) {
        if (o.device == NMT_DEVICE_CUDA) {
            fprintf(stderr, "translate: --workers is for the CPU (use --devices on CUDA)\n");
            return EXIT_USAGE;
        }
        n = args->workers;
    }
    for (int i = 0; i < n; i++) {
        nmt_options oi = o;
        if (oi.threads == 0) /* the cores shared by the workers */
            oi.threads = nmt_cpu_default_threads(n);
        if (args->n_devices != 0)
            oi.device_index = devices[i];
        nmt_error err = {0};
        nmt_status created;
        /* A device without memory for the batch: the library halves it (its
         * stats say the size chosen). */
        created = app_translator_create(args, models, &oi, &out[i], &err);
        nmt_stats chosen;
        if (created == NMT_STATUS_OK && !args->quiet &&
            nmt_translator_stats(out[i], &chosen, &err) == NMT_STATUS_OK &&
            chosen.batch_size < oi.batch_size)
            fprintf(stderr, "translate: note: the device has room for --batch-size %lld of %d\n",
                    (long long)chosen.batch_size, oi.batch_size);
        if (created != NMT_STATUS_OK) {
            /* A bad option, or a device this build or machine does not have: both
             * are the configuration's fault, not a failed translation. */
            if (err.status == NMT_STATUS_ERROR_UNSUPPORTED && oi.device == NMT_DEVICE_CUDA)
                fprintf(stderr, "translate: --device cuda: %s (use --device cpu or auto)\n",
                        err.message);
            else
                fprintf(stderr, "translate: %s%s\n", err.message,
                        args->n_devices != 0 ? " (--devices)" : "");
            return err.status == NMT_STATUS_ERROR_ARGUMENT ||
                           err.status == NMT_STATUS_ERROR_UNSUPPORTED
                       ? EXIT_USAGE
                       : EXIT_FAILED;
        }
        *n_out = i + 1;
        if (nmt_translator_device(out[i]) == NMT_DEVICE_CUDA) /* for the failure messages */
            snprintf(labels[i], sizeof labels[i], "CUDA device %d (translator %d)",
                     oi.device_index, i);
        else
            snprintf(labels[i], sizeof labels[i], "CPU worker %d", i);
        if (i == 0 && args->workers > 1 && nmt_translator_device(out[0]) == NMT_DEVICE_CUDA) {
            fprintf(stderr, "translate: --workers is for the CPU (use --devices on CUDA)\n");
            return EXIT_USAGE;
        }
    }
    return EXIT_OK;
}

/* --help and --version: the text, then a checked close of stdout. */
static int print_info(const translate_args *args, const char *program)
{
    errno = 0;
    int written = args->show_help ? translate_print_help(program)
                                  : printf("translate (nmt) %s\n", NMT_VERSION_STRING);
    if (written < 0 || close_output(stdout) != 0)
        return write_error("standard output");
    return EXIT_OK;
}

/* -i (and --score-target, --target-prefix): opened before the model
 * loads. A directory opens on Linux and fails only at the first read, so it
 * is refused here by name. 0, or -1 said. */
static int open_input(const char *option, const char *path, FILE **in)
{
    struct stat st;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "translate: %s %s: cannot open: %s\n", option, path, strerror(errno));
        return -1;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "translate: %s %s: is a directory\n", option, path);
        fclose(f);
        return -1;
    }
    *in = f;
    return 0;
}

/* A closed standard input or output that the run would use fails at once
 * (the guard put /dev/null there): reading nothing or writing nowhere would
 * look like success. */
static int check_std_streams(const translate_args *args, int closed[3])
{
    const int info = args->show_help || args->show_version;
    if (closed[0] && !info && !args->input_path[0]) {
        fprintf(stderr, "translate: standard input is closed (give -i FILE)\n");
        return EXIT_IO;
    }
    if (closed[1] && (info || !args->output_path[0])) {
        fprintf(stderr, "translate: standard output is closed%s\n",
                info ? "" : " (give -o FILE)");
        return EXIT_IO;
    }
    return EXIT_OK;
}

/* Under --mpi on CUDA: a rank told no GPU (--devices, --device-index, on the
 * command line or in the file) takes GPU local_rank modulo the visible ones,
 * so the ranks of a host spread over its GPUs instead of all using GPU 0. */
static void pick_rank_device(translate_args *args, const translate_shard *shard)
{
    const int visible = nmt_cuda_available();
    if (!args->device_given && args->engine.device != NMT_DEVICE_CPU && visible > 0)
        args->engine.device_index = shard->local_rank % visible;
}

int translate_main(int argc, char **argv, const translate_shard *shard)
{
    translate_args args;
    char message[1024];
    int closed[3];
    if (app_guard_std_streams(closed) != 0)
        return EXIT_IO; /* no /dev/null: nowhere to say so */
    int code = translate_args_parse(argc, argv, &args, message, sizeof message);
    if (code != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return code;
    }
    code = check_std_streams(&args, closed);
    if (code != EXIT_OK)
        return code;
    if (args.show_help || args.show_version)
        return print_info(&args, argv[0]);
    if (args.mpi && !shard) {
        fprintf(stderr, "translate: --mpi: this build has no MPI (install libopenmpi-dev and "
                        "rebuild), or start it with mpirun\n");
        return EXIT_USAGE;
    }
    if (shard) { /* this rank's lines, into its own part of the output */
        args.skip_lines = shard->first;
        args.limit_lines = shard->count;
        snprintf(args.output_path, sizeof args.output_path, "%s", shard->part_path);
        if (shard->rank != 0)
            args.progress = 0;
        pick_rank_device(&args, shard);
    }

    /* The --stats / --timing file is opened now: a bad path fails before
     * the model is loaded, not after the whole input is translated. */
    stats_output stats = {NULL, 0};
    if (args.stats_path[0] &&
        translate_open_stats(&args, &stats, message, sizeof message) != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return EXIT_USAGE;
    }

    /* -i and -o are opened now too, for the same reason. */
    FILE *in = stdin, *out = stdout;
    const char *out_name = args.output_path[0] ? args.output_path : "standard output";
    const char *in_name = args.input_path[0] ? args.input_path : "standard input";
    if (args.input_path[0] && open_input("-i", args.input_path, &in) != 0) {
        translate_discard_stats(&args, &stats);
        return EXIT_USAGE;
    }
    const char *target_path = NULL;
    const translate_target target_mode = translate_args_target(&args, &target_path);
    FILE *targets = NULL;
    if (target_mode != TRANSLATE_TARGET_NONE &&
        open_input(target_mode == TRANSLATE_TARGET_SCORE ? "--score-target" : "--target-prefix",
                   target_path, &targets) != 0) {
        translate_discard_stats(&args, &stats);
        if (in != stdin)
            fclose(in);
        return EXIT_USAGE;
    }
    if (args.output_path[0] && !(out = fopen(args.output_path, "w"))) {
        fprintf(stderr, "translate: -o %s: cannot open: %s\n", args.output_path, strerror(errno));
        translate_discard_stats(&args, &stats);
        if (in != stdin)
            fclose(in);
        if (targets)
            fclose(targets);
        return EXIT_USAGE;
    }

    app_models models = {0};
    nmt_translator *translators[64] = {NULL};
    char worker_labels[64][48]; /* "CUDA device N" / "CPU worker N" */
    int n_translators = 0;
    chunk_pool *pool = NULL;
    translate_reader *reader = NULL;
    if (app_models_load(&args, &models, message, sizeof message) != EXIT_OK) {
        fprintf(stderr, "translate: cannot load the model: %s\n", message);
        code = EXIT_MODEL;
        goto done;
    }
    /* A file (not a terminal) on CUDA: batches of TRANSLATE_CUDA_BATCH
     * sentences unless --batch-size is given; the library's 32 suits the CPU
     * and interactive use (docs/performance.md, "Defaults"). */
    if (!args.batch_size_given && !args.batch_tokens && !isatty(fileno(in)) &&
        (args.engine.device == NMT_DEVICE_CUDA ||
         (args.engine.device == NMT_DEVICE_AUTO && nmt_cuda_available())))
        args.engine.batch_size = TRANSLATE_CUDA_BATCH;
    code = create_translators(&args, &models, translators, worker_labels, &n_translators);
    if (code != EXIT_OK)
        goto done;
    nmt_translator *const translator = translators[0];
    if (args.engine.device == NMT_DEVICE_AUTO && nmt_translator_device(translator) == NMT_DEVICE_CPU &&
        !args.quiet)
        fprintf(stderr, "translate: no usable GPU, translating on the CPU\n");

    const int interactive = isatty(fileno(in));
    const int progress = args.quiet ? 0
                         : args.progress < 0 ? isatty(STDERR_FILENO) && !interactive
                                             : args.progress;
    const size_t max_bytes = (size_t)args.engine.max_line_bytes;
    const int window = translate_window_lines(&args, interactive);
    /* A terminal with one translator: read, translate and write on this
     * thread, a line at a time. The pipeline's threads would put two
     * wake-ups (reader -> worker -> writer) on the path of every answer
     * (docs/performance.md, "Batch-1 latency"). */
    const int one_thread = interactive && n_translators == 1;
    if (chunk_pool_create(translators, n_translators, window, one_thread, target_mode, &pool) !=
            0 ||
        translate_reader_start(pool, fileno(in), targets ? fileno(targets) : -1, &args, window,
                               !one_thread, &reader) != 0) {
        fprintf(stderr, "translate: out of memory\n");
        code = EXIT_FAILED;
        goto done;
    }

    long line_number = args.skip_lines, lines_read = 0;
    long long target_tokens = 0; /* of the best hypotheses, for the progress line */
    int bad_lines = 0, read_errno = 0;
    const double started = translate_now_seconds();
    double shown = 0; /* when the progress line was last written */
    for (;;) {
        if (one_thread)
            translate_reader_next(reader); /* the next window, read on this thread */
        chunk_slot *slot = chunk_pool_oldest(pool);
        if (!slot)
            break;
        if (slot->status != NMT_STATUS_OK) {
            /* Everything before this window is written (and flushed): the
             * output is a complete prefix, never a gap. */
            fprintf(stderr, "translate: lines %ld-%ld failed on %s: %s\n"
                            "translate: lines %ld and after were not written; resume with "
                            "--skip-lines %ld\n",
                    slot->first_line + 1, slot->first_line + slot->n,
                    worker_labels[slot->worker], slot->err.message, slot->first_line + 1,
                    slot->first_line);
            code = EXIT_FAILED;
            goto done;
        }
        if (write_chunk(&args, out, slot, max_bytes, &bad_lines, &target_tokens) != 0 ||
            fflush(out) != 0 || ferror(out)) {
            code = write_error(out_name);
            goto done;
        }
        line_number = slot->first_line + slot->n; /* skipped lines count, as in messages */
        chunk_pool_release(pool, slot);
        if (progress && translate_now_seconds() - shown >= 0.25) {
            shown = translate_now_seconds();
            show_progress(line_number, target_tokens, started, 0);
        }
    }
    const int outcome = translate_reader_finish(reader, 0, &lines_read, &read_errno);
    reader = NULL;
    line_number = lines_read; /* every window read was written; and the lines skipped */
    if (outcome == READER_NO_MEMORY) {
        fprintf(stderr, "translate: out of memory reading line %ld\n", lines_read + 1);
        code = EXIT_FAILED;
        goto done;
    }
    if (outcome == READER_ERROR) {
        fprintf(stderr, "translate: error reading %s after line %ld: %s\n", in_name,
                line_number, strerror(read_errno));
        code = EXIT_IO;
        goto done;
    }
    if (progress)
        show_progress(line_number, target_tokens, started, 1);
    if (bad_lines)
        fprintf(stderr, "translate: %d of %ld lines refused (empty output lines)\n", bad_lines,
                line_number);
    code = bad_lines ? EXIT_BAD_LINES : EXIT_OK;
    {
        FILE *closing = out;
        out = NULL;
        if (close_output(closing) != 0) {
            code = write_error(out_name);
            goto done;
        }
    }
    if (stats.file) {
        int stats_code = translate_write_stats(&args, (const nmt_translator *const *)translators,
                                               n_translators, line_number,
                                               chunk_pool_decode_seconds(pool), &stats, message,
                                               sizeof message);
        if (stats_code != EXIT_OK) {
            fprintf(stderr, "translate: %s\n", message);
            code = stats_code;
        }
    }
done:
    translate_reader_finish(reader, 1, NULL, NULL); /* a run that gave up: stop reading */
    translate_discard_stats(&args, &stats); /* a run that did not get to write it */
    if (out && out != stdout)
        fclose(out); /* the run failed already; what was written stays */
    if (in != stdin)
        fclose(in);
    if (targets)
        fclose(targets);
    chunk_pool_free(pool); /* then the workers: they use the translators */
    for (int i = 0; i < n_translators; i++)
        nmt_translator_free(translators[i]);
    app_models_free(&models);
    return code;
}

#ifndef NMT_WITH_MPI
int main(int argc, char **argv)
{
    return translate_main(argc, argv, NULL);
}
#endif
