/* translate: stdin -> stdout translation with the nmt library.
 *
 * One output line per input line, in order, always: a refused line is
 * reported on stderr with its line number and gives an empty line. The run
 * is the library's host pipeline (nmt_pipeline, docs/scale-out.md): it reads
 * the input in windows of lines (--maxi-batch; one line at a time when stdin
 * is a terminal, so it answers as you type), tokenizes and formats them on
 * a pool of host threads, and hands each window whole to a translator,
 * which sorts it by length and batches it (by sentences or by source
 * tokens, --batch-type); this thread writes the windows in input order. The
 * pipeline starts reading while the translators start up (on CUDA, one
 * thread a device), and with --workers or --devices several translators
 * take windows in parallel; the output is the same either way, and memory
 * is bounded by the windows in flight. A translator that fails gives its
 * windows to the others, and the run ends with a warning naming it. With
 * --score-target or --target-prefix the pipeline reads that file's line
 * beside each input line and carries it with its line.
 *
 * Every write is checked: an output that cannot be written (a full disk, a
 * closed pipe reader) ends the run with exit status 5 and says which. */
#include "nmt.h"
#include "fields.h"
#include "options.h"
#include "shard.h"
#include "translators.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The default batch size for a file on CUDA (sentences): within 5% of the
 * sweep's best (4,096) on both models at beam 5 in half its device memory
 * (docs/performance.md, "Defaults"); a device that cannot hold it halves it
 * at create (translators.c). */
enum { TRANSLATE_CUDA_BATCH = 2048, TRANSLATE_MAX_DEFAULT_WINDOW = 65536 };

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The lines of one window: --maxi-batch, else one when the input is a
 * terminal (it answers as you type), else 8 batches of --batch-size
 * sentences, or with --batch-type tokens one line a token of the budget (8
 * or more batches at 8 tokens a line or more), at most 65536. */
static int window_lines(const translate_args *args, int interactive)
{
    if (args->maxi_batch > 0)
        return args->maxi_batch;
    if (interactive)
        return 1;
    const long lines = args->batch_tokens ? (long)args->engine.max_batch_tokens
                                          : 8L * args->engine.batch_size;
    return lines < TRANSLATE_MAX_DEFAULT_WINDOW ? (int)lines : TRANSLATE_MAX_DEFAULT_WINDOW;
}

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

/* The pipeline's format (nmt_pipeline_format): a window's part, on a pool
 * thread. */
static int format_lines(void *self, int64_t first_line, const nmt_result *results, int n,
                        FILE *out)
{
    const translate_args *args = self;
    for (int i = 0; i < n; i++)
        if (print_result(args, out, (long)first_line + 1 + i, &results[i]) < 0)
            return -1;
    return 0;
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

/* All of bytes to fd; 0, or -1 with errno. */
static int write_all(int fd, const char *bytes, size_t n)
{
    while (n > 0) {
        const ssize_t wrote = write(fd, bytes, n);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            errno = wrote < 0 ? errno : EIO;
            return -1;
        }
        bytes += wrote;
        n -= (size_t)wrote;
    }
    return 0;
}

/* A window's refused lines on stderr, in order, and its target tokens. */
static void report_lines(const nmt_pipeline_window *w, int *bad_lines, long long *target_tokens)
{
    for (int i = 0; i < w->n_lines; i++) {
        const nmt_result *r = &w->results[i];
        if (r->status != NMT_STATUS_OK) {
            fprintf(stderr, "translate: line %lld: %s\n", (long long)w->first_line + 1 + i,
                    r->message);
            (*bad_lines)++;
        } else if (r->n_hypotheses > 0) {
            *target_tokens += r->hypotheses[0].n_tokens;
        }
    }
}

/* Every translator that failed while others went on (but `last`, the one
 * a failed window names). */
static void warn_failed(nmt_pipeline *pipeline, const translate_translators *t, int last)
{
    nmt_error err;
    for (int i = 0; i < t->n; i++)
        if (i != last && nmt_pipeline_translator_failed(pipeline, i, &err))
            fprintf(stderr, "translate: warning: %s failed (%s); its windows went to the "
                            "other translators\n",
                    t->labels[i], err.message);
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

/* Starts the CUDA driver; *seconds: how long that took. */
static void *probe_cuda(void *seconds)
{
    const double started = now_seconds();
    nmt_cuda_available();
    *(double *)seconds = now_seconds() - started;
    return NULL;
}

/* One run's state, for run_pipeline and its clean-up. */
typedef struct translate_run {
    translate_args *args;
    FILE *in, *out;
    FILE *targets; /* --score-target or --target-prefix, or NULL */
    const char *in_name, *out_name;
    stats_output stats;
    app_models models; /* -m: one, or an ensemble's */
    translate_translators translators;
    nmt_pipeline *pipeline;
    translate_timing timing;
    double process_start;
} translate_run;

/* The pipeline's options: the window, the pool, the format. */
static nmt_pipeline_options pipeline_options(translate_args *args, int interactive, int planned)
{
    nmt_pipeline_options po;
    nmt_pipeline_options_init(&po);
    po.window_lines = window_lines(args, interactive);
    /* A terminal with one translator: read, translate and write on this
     * thread, a line at a time. The pipeline's threads would put two
     * wake-ups (reader -> translator -> writer) on the path of every answer
     * (docs/performance.md, "Batch-1 latency"). */
    po.host_threads = interactive && planned <= 1 ? -1 : args->host_threads;
    po.translators = planned > 0 ? planned : 1;
    po.dry_run = args->dry_run;
    po.format = format_lines;
    po.format_self = args;
    const char *ignored;
    const translate_target target = translate_args_target(args, &ignored);
    po.targets = target == TRANSLATE_TARGET_SCORE    ? NMT_TARGETS_SCORE
                 : target == TRANSLATE_TARGET_PREFIX ? NMT_TARGETS_PREFIX
                                                     : NMT_TARGETS_NONE;
    po.target_name = po.targets == NMT_TARGETS_SCORE ? "--score-target line"
                                                     : "--target-prefix line";
    return po;
}

/* A regular file read to its end before any translator starts, of one
 * batch or less: no warm-up, which would delay its one batch more than it
 * speeds it up (docs/performance.md, "Start-up"). Reading such a file takes
 * microseconds; the wait for it is bounded (20 ms). */
static void skip_warmup_for_small_file(translate_run *run)
{
    translate_args *args = run->args;
    struct stat st;
    if (args->dry_run || args->warmup_given || !args->engine.warmup ||
        args->engine.device == NMT_DEVICE_CPU || fstat(fileno(run->in), &st) != 0 ||
        !S_ISREG(st.st_mode))
        return;
    nmt_pipeline_stats ps;
    for (int waited_ms = 0;; waited_ms++) {
        nmt_pipeline_stats_get(run->pipeline, &ps);
        if (ps.input_ended || ps.lines_read - args->skip_lines > args->engine.batch_size ||
            waited_ms == 20)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (ps.input_ended && ps.lines_read - args->skip_lines <= args->engine.batch_size)
        args->engine.warmup = 0;
}

/* Reads, translates and writes everything; the exit status. */
static int run_pipeline(translate_run *run)
{
    translate_args *args = run->args;
    nmt_error err = {0};
    const int interactive = isatty(fileno(run->in));
    const int planned = translate_translators_planned(args);
    nmt_pipeline_options po = pipeline_options(args, interactive, planned);
    const double pipeline_start = now_seconds();
    if (nmt_pipeline_create(run->models.models[0], &args->engine, &po, &run->pipeline, &err) !=
            NMT_STATUS_OK ||
        nmt_pipeline_read_fd(run->pipeline, fileno(run->in),
                             run->targets ? fileno(run->targets) : -1, args->skip_lines,
                             args->limit_lines, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "translate: %s\n", err.message);
        return err.status == NMT_STATUS_ERROR_ARGUMENT ? EXIT_USAGE : EXIT_FAILED;
    }
    /* The input is read and tokenized while the translators start up. */
    skip_warmup_for_small_file(run);
    run->timing.warmup = !args->dry_run && args->engine.warmup;
    int code = translate_create_translators(args, &run->models, &run->translators);
    for (int i = 0; code == EXIT_OK && i < run->translators.n; i++)
        if (nmt_pipeline_add_translator(run->pipeline, run->translators.translators[i], &err) !=
            NMT_STATUS_OK) {
            fprintf(stderr, "translate: %s\n", err.message);
            code = EXIT_FAILED;
        }
    if (code != EXIT_OK)
        return code;
    run->timing.startup = now_seconds() - run->process_start;
    if (!args->dry_run && args->engine.device == NMT_DEVICE_AUTO && !args->quiet &&
        nmt_translator_device(run->translators.translators[0]) == NMT_DEVICE_CPU)
        fprintf(stderr, "translate: no usable GPU, translating on the CPU\n");

    const int progress = args->quiet ? 0
                         : args->progress < 0 ? isatty(STDERR_FILENO) && !interactive
                                              : args->progress;
    long line_number = args->skip_lines;
    long long target_tokens = 0; /* of the best hypotheses, for the progress line */
    int bad_lines = 0;
    const double started = now_seconds();
    double shown = 0; /* when the progress line was last written */
    nmt_pipeline_window *w = NULL;
    nmt_status status;
    while ((status = nmt_pipeline_next(run->pipeline, 1, &w, &err)) == NMT_STATUS_OK && w) {
        if (w->status != NMT_STATUS_OK) {
            /* Everything before this window is written: the output is a
             * complete prefix, never a gap. */
            warn_failed(run->pipeline, &run->translators, w->translator);
            fprintf(stderr, "translate: lines %lld-%lld failed on %s: %s\n"
                            "translate: lines %lld and after were not written; resume with "
                            "--skip-lines %lld\n",
                    (long long)w->first_line + 1, (long long)w->first_line + w->n_lines,
                    w->translator >= 0 ? run->translators.labels[w->translator] : "the host",
                    w->error.message, (long long)w->first_line + 1, (long long)w->first_line);
            return EXIT_FAILED;
        }
        report_lines(w, &bad_lines, &target_tokens);
        errno = 0;
        if (write_all(fileno(run->out), w->text, w->text_bytes) != 0)
            return write_error(run->out_name);
        if (run->timing.first_output == 0 && w->n_lines > 0)
            run->timing.first_output = now_seconds() - run->process_start;
        line_number = (long)(w->first_line + w->n_lines); /* skipped lines count */
        nmt_pipeline_release(run->pipeline, w);
        if (progress && now_seconds() - shown >= 0.25) {
            shown = now_seconds();
            show_progress(line_number, target_tokens, started, 0);
        }
    }
    nmt_pipeline_stats ps;
    nmt_pipeline_stats_get(run->pipeline, &ps);
    line_number = (long)ps.lines_read; /* every window read was written; and the lines skipped */
    if (status == NMT_STATUS_ERROR_MEMORY) {
        fprintf(stderr, "translate: %s\n", err.message);
        return EXIT_FAILED;
    }
    if (status != NMT_STATUS_OK) {
        fprintf(stderr, "translate: error reading %s %s\n", run->in_name, err.message);
        return EXIT_IO;
    }
    warn_failed(run->pipeline, &run->translators, -1);
    run->timing.pipeline = now_seconds() - pipeline_start;
    run->timing.pipeline_lines = line_number - args->skip_lines;
    run->timing.lines = line_number;
    run->timing.decode_wall = ps.decode_seconds;
    run->timing.host_threads = (int)ps.host_threads;
    if (progress)
        show_progress(line_number, target_tokens, started, 1);
    if (bad_lines)
        fprintf(stderr, "translate: %d of %ld lines refused (empty output lines)\n", bad_lines,
                line_number);
    return bad_lines ? EXIT_BAD_LINES : EXIT_OK;
}

/* Opens -i, --score-target or --target-prefix, -o and the --stats file
 * before the model loads (a bad path fails at once, not after the whole
 * input is translated); EXIT_OK or the exit status, said. */
static int open_files(translate_run *run)
{
    translate_args *args = run->args;
    char message[1024];
    if (args->stats_path[0] &&
        translate_open_stats(args, &run->stats, message, sizeof message) != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return EXIT_USAGE;
    }
    const char *target_path;
    const translate_target target = translate_args_target(args, &target_path);
    if (args->input_path[0] && open_input("-i", args->input_path, &run->in) != 0)
        return EXIT_USAGE;
    if (target != TRANSLATE_TARGET_NONE &&
        open_input(target == TRANSLATE_TARGET_SCORE ? "--score-target" : "--target-prefix",
                   target_path, &run->targets) != 0)
        return EXIT_USAGE;
    if (args->output_path[0] && !(run->out = fopen(args->output_path, "w"))) {
        fprintf(stderr, "translate: -o %s: cannot open: %s\n", args->output_path, strerror(errno));
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int translate_main(int argc, char **argv, const translate_shard *shard)
{
    translate_args args;
    char message[1024];
    int closed[3];
    translate_run run = {.args = &args, .in = stdin, .out = stdout,
                         .process_start = now_seconds()};
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
    run.in_name = args.input_path[0] ? args.input_path : "standard input";
    run.out_name = args.output_path[0] ? args.output_path : "standard output";
    code = open_files(&run);
    if (code != EXIT_OK)
        goto done;
    /* The CUDA driver starts (its first call) while the model loads. */
    pthread_t probe;
    const int probing = args.engine.device != NMT_DEVICE_CPU &&
                        pthread_create(&probe, NULL, probe_cuda, &run.timing.driver_start) == 0;
    const int loaded = app_models_load(&args, &run.models, message, sizeof message);
    run.timing.model_read = now_seconds() - run.process_start;
    if (probing)
        pthread_join(probe, NULL);
    if (loaded != EXIT_OK) {
        fprintf(stderr, "translate: cannot load the model: %s\n", message);
        code = EXIT_MODEL;
        goto done;
    }
    run.timing.model_load = now_seconds() - run.process_start;
    /* A file (not a terminal) on CUDA: batches of TRANSLATE_CUDA_BATCH
     * sentences unless --batch-size is given; the library's 32 suits the CPU
     * and interactive use (docs/performance.md, "Defaults"). */
    if (!args.batch_size_given && !args.batch_tokens && !isatty(fileno(run.in)) &&
        (args.engine.device == NMT_DEVICE_CUDA ||
         (args.engine.device == NMT_DEVICE_AUTO && nmt_cuda_available())))
        args.engine.batch_size = TRANSLATE_CUDA_BATCH;
    code = run_pipeline(&run);
    if (code != EXIT_OK && code != EXIT_BAD_LINES)
        goto done;
    {
        FILE *closing = run.out;
        run.out = NULL;
        if (close_output(closing) != 0) {
            code = write_error(run.out_name);
            goto done;
        }
    }
    if (run.stats.file) {
        run.timing.dry_run = args.dry_run;
        const int stats_code = translate_write_stats(
            &args, (const nmt_translator *const *)run.translators.translators,
            run.translators.n, &run.timing, &run.stats, message, sizeof message);
        if (stats_code != EXIT_OK) {
            fprintf(stderr, "translate: %s\n", message);
            code = stats_code;
        }
    }
done:
    nmt_pipeline_free(run.pipeline); /* stops reading; then the translators it used */
    translate_discard_stats(&args, &run.stats); /* a run that did not get to write it */
    if (run.out && run.out != stdout)
        fclose(run.out); /* the run failed already; what was written stays */
    if (run.in && run.in != stdin)
        fclose(run.in);
    if (run.targets)
        fclose(run.targets);
    translate_free_translators(&run.translators);
    app_models_free(&run.models);
    return code;
}

#ifndef NMT_WITH_MPI
int main(int argc, char **argv)
{
    return translate_main(argc, argv, NULL);
}
#endif
