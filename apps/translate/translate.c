/* translate: stdin -> stdout translation with the nmt library.
 *
 * One output line per input line, in order, always: a refused line is
 * reported on stderr with its line number and gives an empty line. Lines are
 * read in chunks (one at a time when stdin is a terminal, so it answers as
 * you type) and each chunk is handed to nmt_translate_batch, which sorts by
 * length and batches internally. */
#include "nmt.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct input_line {
    char *text;
    size_t capacity;
    int has_nul; /* an embedded NUL byte: refused here, the library takes C strings */
} input_line;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads up to max_lines lines; returns how many. Strips "\n" and "\r\n". */
static int read_chunk(FILE *in, input_line *lines, int max_lines)
{
    int n = 0;
    while (n < max_lines) {
        input_line *line = &lines[n];
        ssize_t len = getline(&line->text, &line->capacity, in);
        if (len < 0)
            break;
        if (len > 0 && line->text[len - 1] == '\n')
            line->text[--len] = 0;
        if (len > 0 && line->text[len - 1] == '\r')
            line->text[--len] = 0;
        line->has_nul = strlen(line->text) != (size_t)len;
        n++;
    }
    return n;
}

static void print_result(const translate_args *args, long line_number, const nmt_result *r)
{
    const int n_best = args->engine.n_best;
    if (n_best > 1) {
        if (r->status != NMT_STATUS_OK || r->n_hypotheses == 0) {
            printf("%ld\t1\t-inf\t\n", line_number);
            return;
        }
        for (int k = 0; k < r->n_hypotheses; k++)
            printf("%ld\t%d\t%.6f\t%s\n", line_number, k + 1, r->hypotheses[k].score,
                   r->hypotheses[k].text);
        return;
    }
    const int ok = r->status == NMT_STATUS_OK && r->n_hypotheses > 0;
    if (args->scores) {
        if (ok)
            printf("%.6f\t", r->hypotheses[0].score);
        else
            printf("-inf\t");
    }
    printf("%s\n", ok ? r->hypotheses[0].text : "");
}

static void show_progress(long lines, double started, int final)
{
    double elapsed = now_seconds() - started;
    fprintf(stderr, "\rtranslate: %ld lines, %.1f lines/s%s", lines,
            elapsed > 0 ? (double)lines / elapsed : 0.0, final ? "\n" : "");
    fflush(stderr);
}

int main(int argc, char **argv)
{
    translate_args args;
    char message[1024];
    int code = translate_args_parse(argc, argv, &args, message, sizeof message);
    if (code != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return code;
    }
    if (args.show_help) {
        translate_print_help(argv[0]);
        return EXIT_OK;
    }
    if (args.show_version) {
        printf("translate (nmt) %s\n", NMT_VERSION_STRING);
        return EXIT_OK;
    }

    nmt_error err = {0};
    nmt_model *model = NULL;
    nmt_translator *translator = NULL;
    if (nmt_model_load(args.model_path, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "translate: cannot load the model: %s\n", err.message);
        return EXIT_MODEL;
    }
    if (nmt_translator_create(model, &args.engine, &translator, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "translate: %s\n", err.message);
        nmt_model_free(model);
        return err.status == NMT_STATUS_ERROR_ARGUMENT ? EXIT_USAGE : EXIT_FAILED;
    }
    if (args.engine.device == NMT_DEVICE_AUTO && nmt_translator_device(translator) == NMT_DEVICE_CPU)
        fprintf(stderr, "translate: no usable GPU, translating on the CPU\n");

    const int interactive = isatty(STDIN_FILENO);
    const int progress = args.progress < 0 ? isatty(STDERR_FILENO) && !interactive : args.progress;
    const int chunk = interactive ? 1 : args.engine.batch_size * 8;
    input_line *lines = calloc((size_t)chunk, sizeof *lines);
    const char **texts = calloc((size_t)chunk, sizeof *texts);
    nmt_result *results = calloc((size_t)chunk, sizeof *results);
    if (!lines || !texts || !results) {
        fprintf(stderr, "translate: out of memory\n");
        code = EXIT_FAILED;
        goto done;
    }

    long line_number = 0;
    int bad_lines = 0;
    const double started = now_seconds();
    int n;
    while ((n = read_chunk(stdin, lines, chunk)) > 0) {
        for (int i = 0; i < n; i++)
            texts[i] = lines[i].has_nul ? "" : lines[i].text;
        if (nmt_translate_batch(translator, texts, n, results, &err) != NMT_STATUS_OK) {
            fprintf(stderr, "translate: lines %ld-%ld: %s\n", line_number + 1, line_number + n,
                    err.message);
            code = EXIT_FAILED;
            goto done;
        }
        for (int i = 0; i < n; i++) {
            long number = line_number + 1 + i;
            if (lines[i].has_nul) {
                nmt_result_clear(&results[i]);
                results[i].status = NMT_STATUS_ERROR_INPUT;
                snprintf(results[i].message, sizeof results[i].message,
                         "contains a NUL byte");
            }
            if (results[i].status != NMT_STATUS_OK) {
                fprintf(stderr, "translate: line %ld: %s\n", number, results[i].message);
                bad_lines++;
            }
            print_result(&args, number, &results[i]);
            nmt_result_clear(&results[i]);
        }
        line_number += n;
        fflush(stdout);
        if (progress)
            show_progress(line_number, started, 0);
    }
    if (ferror(stdin)) {
        fprintf(stderr, "translate: error reading standard input after line %ld\n", line_number);
        code = EXIT_FAILED;
        goto done;
    }
    if (progress)
        show_progress(line_number, started, 1);
    if (bad_lines)
        fprintf(stderr, "translate: %d of %ld lines refused (empty output lines)\n", bad_lines,
                line_number);
    code = bad_lines ? EXIT_BAD_LINES : EXIT_OK;
    if (args.stats_path[0] &&
        translate_write_stats(&args, translator, line_number, message, sizeof message) != 0) {
        fprintf(stderr, "translate: %s\n", message);
        code = EXIT_FAILED;
    }
done:
    if (fflush(stdout) != 0 && code == EXIT_OK) {
        fprintf(stderr, "translate: error writing standard output\n");
        code = EXIT_FAILED;
    }
    if (lines)
        for (int i = 0; i < chunk; i++)
            free(lines[i].text);
    free(lines);
    free(texts);
    free(results);
    nmt_translator_free(translator);
    nmt_model_free(model);
    return code;
}
