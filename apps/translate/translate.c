/* translate: stdin -> stdout translation with the nmt library.
 *
 * One output line per input line, in order, always: a refused line is
 * reported on stderr with its line number and gives an empty line. Lines are
 * read in chunks (one at a time when stdin is a terminal, so it answers as
 * you type) and each chunk is handed to nmt_translate_batch, which sorts by
 * length and batches internally. With --workers or --devices, several
 * translators take chunks in parallel and the chunks are written back in
 * input order (pool.h): the same output as one translator's. A line keeps at most --max-line-bytes (+1)
 * bytes in memory: the rest of a longer one is skipped, so one huge line
 * without a newline costs no more memory than a refused short one.
 *
 * Every write is checked: an output that cannot be written (a full disk, a
 * closed pipe reader) ends the run with exit status 5 and says which. */
#include "nmt.h"
#include "options.h"
#include "pool.h"
#include "shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads one line, keeping at most max_bytes + 1 bytes (room for a "\r" before
 * the "\n") and skipping the rest up to the newline. Returns 1 for a line, 0 at
 * the end of the input (or on a read error: see ferror), -1 out of memory. */
static int read_line(FILE *in, input_line *line, size_t max_bytes)
{
    const size_t keep = max_bytes + 1;
    size_t kept = 0, total = 0;
    int c, last = 0;
    while ((c = getc_unlocked(in)) != EOF && c != '\n') {
        if (kept < keep) {
            if (kept + 1 >= line->capacity) {
                size_t grown = line->capacity ? 2 * line->capacity : 256;
                if (grown > keep + 1)
                    grown = keep + 1;
                char *text = realloc(line->text, grown);
                if (!text)
                    return -1;
                line->text = text;
                line->capacity = grown;
            }
            line->text[kept++] = (char)c;
        }
        total++;
        last = c;
    }
    if (c == EOF && total == 0)
        return 0;
    if (!line->text) { /* an empty line: still a string */
        line->text = malloc(1);
        if (!line->text)
            return -1;
        line->capacity = 1;
    }
    if (last == '\r') {
        total--;
        if (kept > total)
            kept = total;
    }
    line->text[kept] = 0;
    line->bytes = total;
    line->too_long = total > max_bytes;
    line->has_nul = !line->too_long && memchr(line->text, 0, kept) != NULL;
    return 1;
}

/* Reads up to max_lines lines; returns how many, or -1 out of memory. */
static int read_chunk(FILE *in, input_line *lines, int max_lines, size_t max_bytes)
{
    int n = 0;
    while (n < max_lines) {
        int r = read_line(in, &lines[n], max_bytes);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n++;
    }
    return n;
}

/* " ||| s-t s-t ..." of a hypothesis (--alignment). */
static int print_alignment(FILE *out, const nmt_hypothesis *h)
{
    if (fputs(" |||", out) == EOF)
        return -1;
    for (int t = 0; t < h->n_tokens; t++)
        if (fprintf(out, " %d-%d", h->alignment ? h->alignment[t] : -1, t) < 0)
            return -1;
    return 0;
}

/* Prints one input line's output: a line, or with --n-best N exactly N rows
 * (a refused line, or one with fewer hypotheses, is padded with rows of score
 * -inf and an empty text). Returns a negative value when a write failed. */
static int print_result(const translate_args *args, FILE *out, long line_number,
                        const nmt_result *r)
{
    const int n_best = args->engine.n_best;
    const int ok = r->status == NMT_STATUS_OK && r->n_hypotheses > 0;
    if (n_best > 1) {
        const int found = ok ? r->n_hypotheses : 0;
        for (int k = 0; k < n_best; k++) {
            const nmt_hypothesis *h = k < found ? &r->hypotheses[k] : NULL;
            int written;
            if (args->nbest_marian)
                written = h ? fprintf(out, "%ld ||| %s ||| F0= %.6f ||| %.6f", line_number - 1,
                                      h->text, h->log_prob, h->score)
                            : fprintf(out, "%ld |||  ||| F0= -inf ||| -inf", line_number - 1);
            else
                written = h ? fprintf(out, "%ld\t%d\t%.6f\t%s", line_number, k + 1, h->score,
                                      h->text)
                            : fprintf(out, "%ld\t%d\t-inf\t", line_number, k + 1);
            if (written < 0 || (args->alignment && k < found &&
                                print_alignment(out, &r->hypotheses[k]) < 0) ||
                (args->alignment && k >= found && fputs(" |||", out) == EOF) ||
                fputc('\n', out) == EOF)
                return -1;
        }
        return 0;
    }
    if (args->scores) {
        int written = ok ? fprintf(out, "%.6f\t", r->hypotheses[0].score) : fprintf(out, "-inf\t");
        if (written < 0)
            return -1;
    }
    if (fputs(ok ? r->hypotheses[0].text : "", out) == EOF)
        return -1;
    if (args->alignment && (ok ? print_alignment(out, &r->hypotheses[0]) : (fputs(" |||", out) == EOF ? -1 : 0)) < 0)
        return -1;
    return fputc('\n', out) == EOF ? -1 : 0;
}

static void show_progress(long lines, long long tokens, double started, int final)
{
    double elapsed = now_seconds() - started;
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
static int write_chunk(const translate_args *args, FILE *out, chunk_slot *slot,
                       size_t max_bytes, int *bad_lines, long long *target_tokens)
{
    int write_failed = 0; /* the errno of the first failed write */
    for (int i = 0; i < slot->n; i++) {
        const long number = slot->first_line + 1 + i;
        const input_line *line = &slot->lines[i];
        nmt_result *r = &slot->results[i];
        if (line->has_nul || line->too_long) {
            nmt_result_clear(r);
            r->status = NMT_STATUS_ERROR_INPUT;
            if (line->too_long)
                snprintf(r->message, sizeof r->message,
                         "line too long: %zu bytes, the limit is %zu", line->bytes, max_bytes);
            else
                snprintf(r->message, sizeof r->message, "contains a NUL byte");
        }
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
static int create_translators(const translate_args *args, const nmt_model *model,
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
        if (args->n_devices != 0)
            oi.device_index = devices[i];
        nmt_error err = {0};
        if (nmt_translator_create(model, &oi, &out[i], &err) != NMT_STATUS_OK) {
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
            snprintf(labels[i], sizeof labels[i], "CUDA device %d", oi.device_index);
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

int translate_main(int argc, char **argv, const translate_shard *shard)
{
    translate_args args;
    char message[1024];
    int code = translate_args_parse(argc, argv, &args, message, sizeof message);
    if (code != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return code;
    }
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
    if (args.input_path[0] && !(in = fopen(args.input_path, "r"))) {
        fprintf(stderr, "translate: -i %s: cannot open: %s\n", args.input_path, strerror(errno));
        translate_discard_stats(&args, &stats);
        return EXIT_USAGE;
    }
    if (args.output_path[0] && !(out = fopen(args.output_path, "w"))) {
        fprintf(stderr, "translate: -o %s: cannot open: %s\n", args.output_path, strerror(errno));
        translate_discard_stats(&args, &stats);
        if (in != stdin)
            fclose(in);
        return EXIT_USAGE;
    }

    nmt_error err = {0};
    nmt_model *model = NULL;
    nmt_translator *translators[64] = {NULL};
    char worker_labels[64][48]; /* "CUDA device N" / "CPU worker N" */
    int n_translators = 0;
    chunk_pool *pool = NULL;
    int chunk = 0;
    if (nmt_model_load(args.model_path, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "translate: cannot load the model: %s\n", err.message);
        code = EXIT_MODEL;
        goto done;
    }
    code = create_translators(&args, model, translators, worker_labels, &n_translators);
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
    chunk = interactive ? 1 : args.engine.batch_size * 8;
    if (chunk_pool_create(translators, n_translators, chunk, &pool) != 0) {
        fprintf(stderr, "translate: out of memory\n");
        code = EXIT_FAILED;
        goto done;
    }

    long line_number = 0, lines_read = 0;
    long long target_tokens = 0; /* of the best hypotheses, for the progress line */
    int bad_lines = 0, eof = 0, in_flight = 0, n = 0;
    const double started = now_seconds();
    /* --skip-lines: read past them (a rerun resumes where a failed one stopped);
     * line numbers in messages stay those of the whole input. */
    for (input_line *scratch = chunk_pool_next(pool)->lines; lines_read < args.skip_lines;
         lines_read++) {
        const int r = read_line(in, scratch, max_bytes);
        if (r <= 0) {
            n = r;
            eof = 1;
            break;
        }
    }
    line_number = lines_read;
    for (;;) {
        /* Read ahead while a slot is free (one chunk at a time when typing). */
        while (!eof && in_flight < chunk_pool_capacity(pool) && !(interactive && in_flight)) {
            chunk_slot *slot = chunk_pool_next(pool);
            long want = chunk;
            if (args.limit_lines >= 0 && args.skip_lines + args.limit_lines - lines_read < want)
                want = args.skip_lines + args.limit_lines - lines_read;
            n = want > 0 ? read_chunk(in, slot->lines, (int)want, max_bytes) : 0;
            if (n <= 0) {
                eof = 1;
                break;
            }
            for (int i = 0; i < n; i++)
                slot->texts[i] = slot->lines[i].has_nul || slot->lines[i].too_long
                                     ? ""
                                     : slot->lines[i].text;
            slot->n = n;
            slot->first_line = lines_read;
            lines_read += n;
            chunk_pool_submit(pool, slot);
            in_flight++;
        }
        chunk_slot *slot = chunk_pool_oldest(pool);
        if (!slot)
            break;
        in_flight--;
        if (slot->status != NMT_STATUS_OK) {
            /* Everything before this chunk is written (and flushed): the
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
        line_number += slot->n;
        chunk_pool_release(pool, slot);
        if (progress)
            show_progress(line_number, target_tokens, started, 0);
    }
    if (n < 0) {
        fprintf(stderr, "translate: out of memory reading line %ld\n", lines_read + 1);
        code = EXIT_FAILED;
        goto done;
    }
    if (ferror(in)) {
        fprintf(stderr, "translate: error reading %s after line %ld: %s\n", in_name,
                line_number, strerror(errno));
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
                                               n_translators, line_number, &stats, message,
                                               sizeof message);
        if (stats_code != EXIT_OK) {
            fprintf(stderr, "translate: %s\n", message);
            code = stats_code;
        }
    }
done:
    translate_discard_stats(&args, &stats); /* a run that did not get to write it */
    if (out && out != stdout)
        fclose(out); /* the run failed already; what was written stays */
    if (in != stdin)
        fclose(in);
    chunk_pool_free(pool); /* first: its workers use the translators */
    for (int i = 0; i < n_translators; i++)
        nmt_translator_free(translators[i]);
    nmt_model_free(model);
    return code;
}

#ifndef NMT_WITH_MPI
int main(int argc, char **argv)
{
    return translate_main(argc, argv, NULL);
}
#endif
