/* test_pipeline.c: the host pipeline (nmt_pipeline, engine/pipeline*.c) on
 * the CPU backend (reference kernels: a line's bits do not depend on its
 * batch) and the test model:
 * - a file of 300 lines (empty, too long, with a NUL, invalid UTF-8, CRLF
 *   endings, a last line without "\n") read from a descriptor gives every
 *   line the answer nmt_translate_batch gives it, bit for bit, in windows
 *   that come in input order and cover the input, with the text the
 *   built-in output writes; with 1 and 3 translators, 1 and 3 host threads
 *   or none (inline), windows of 1, 7 and 64 lines, and a ring of one;
 * - skip and limit number the lines of the whole input;
 * - pushed lines (wait 0, taking windows to make room) answer the same;
 * - a dry run echoes each line's tokens through the detokenizer;
 * - a translator that fails (NMT_TEST_TRANSLATOR_FAIL) at its first window
 *   (each holds its first until all have one: NMT_TEST_PIPELINE_HOLD) or at
 *   the input's window 13, whichever takes it: the others translate its
 *   windows, the same answers, and it alone is named failed; when none is
 *   left, windows fail with its error;
 * - a caller's format gets every line once with its number;
 * - refused: a translator of other input options, next without input, push
 *   after read_fd, bad options; a read error ends with NMT_STATUS_ERROR_IO. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, setenv */

#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include "pipeline_fixture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_LINES = 300, MAX_BYTES = 120 };

static const char *const words[] = {"der", "die", "Haus", "katze", "Hund", "MANN", "frau",
                                    "kind", "sieht", "Zebra", "xylophon", "kind.", "!", "?"};
static char text[N_LINES][400];
static size_t lengths[N_LINES]; /* as in the file (a NUL line is longer than its C string) */
static const char *lines[N_LINES];
static char path[64];
static nmt_result ref[N_LINES];

static nmt_options cpu_options(void)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = NMT_DEVICE_CPU;
    o.cpu_kernels = NMT_CPU_KERNELS_REFERENCE;
    o.beam_size = 2;
    o.max_len_b = 5;
    o.batch_size = 5;
    o.max_line_bytes = MAX_BYTES;
    return o;
}

/* The lines and the file: what the reference translates is what the
 * pipeline's reader must make of the file's bytes. */
static void make_input(void)
{
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        test_random_words(text[i], words, n_words, test_rand_int(0, 14));
        lengths[i] = strlen(text[i]);
        lines[i] = text[i];
    }
    strcpy(text[17], "ein \xff haus");                 /* invalid UTF-8 */
    lengths[17] = strlen(text[17]);
    memset(text[40], 'a', 300);                        /* too long */
    text[40][300] = '\0';
    lengths[40] = 300;
    memcpy(text[77], "ein \0 haus", 10);               /* a NUL: refused */
    lengths[77] = 10;
    strcpy(text[N_LINES - 1], "Hund !");               /* the last, without "\n": not empty */
    lengths[N_LINES - 1] = strlen(text[N_LINES - 1]);
    snprintf(path, sizeof path, "/tmp/test_pipeline_XXXXXX");
    const int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    for (int i = 0; f && i < N_LINES; i++) {
        fwrite(text[i], 1, lengths[i], f);
        if (i < N_LINES - 1) /* the last line has no newline; a few end in CR LF */
            fputs(i % 9 == 4 ? "\r\n" : "\n", f);
    }
    CHECK(f && fclose(f) == 0, "writing %s", path);
}

/* What the reference answers for the lines the pipeline refuses itself. */
static void refuse_reference(void)
{
    nmt_result_clear(&ref[77]);
    ref[77].status = NMT_STATUS_ERROR_INPUT;
    snprintf(ref[77].message, sizeof ref[77].message, "contains a NUL byte");
}

/* The text of the built-in output for lines [first, first + n) of the reference. */
static size_t expected_text(int first, int n, char *out, size_t size)
{
    size_t at = 0;
    for (int i = first; i < first + n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s\n",
                               ref[i].status == NMT_STATUS_OK && ref[i].n_hypotheses > 0
                                   ? ref[i].hypotheses[0].text
                                   : "");
    return at;
}

/* The pipeline's options: the defaults with a window and translators. */
static nmt_pipeline_options pipe_options(int window, int translators)
{
    nmt_pipeline_options po;
    nmt_pipeline_options_init(&po);
    po.window_lines = window;
    po.translators = translators;
    return po;
}

typedef struct run_config {
    const char *what;
    int translators, host_threads, window, dry_run;
    int64_t skip, limit;
} run_config;

/* Runs the pipeline over the file and checks every window against the
 * reference (dry: each line's own text instead). Returns the windows seen. */
static int run_file(nmt_model *model, const run_config *c, nmt_translator **ts)
{
    nmt_options o = cpu_options();
    nmt_pipeline_options po = pipe_options(c->window, c->translators);
    po.host_threads = c->host_threads;
    po.dry_run = c->dry_run;
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    int windows = 0;
    const int fd = open(path, O_RDONLY);
    if (nmt_pipeline_create(model, &o, &po, &p, &err) != NMT_STATUS_OK ||
        nmt_pipeline_read_fd(p, fd, -1, c->skip, c->limit, &err) != NMT_STATUS_OK) {
        CHECK(0, "%s: set-up: %s", c->what, err.message);
        goto done;
    }
    for (int i = 0; !c->dry_run && i < c->translators; i++)
        CHECK(nmt_pipeline_add_translator(p, ts[i], &err) == NMT_STATUS_OK, "%s: add: %s",
              c->what, err.message);
    const int64_t end = c->limit >= 0 && c->skip + c->limit < N_LINES ? c->skip + c->limit
                                                                        : N_LINES;
    int64_t next = c->skip;
    nmt_pipeline_window *w;
    nmt_status st;
    static char want[N_LINES * 400];
    while ((st = nmt_pipeline_next(p, 1, &w, &err)) == NMT_STATUS_OK && w) {
        windows++;
        CHECK(w->status == NMT_STATUS_OK && w->first_line == next && w->n_lines > 0 &&
                  w->n_lines <= c->window && w->first_line + w->n_lines <= end,
              "%s: window %d: status %d, lines %lld + %d, want from %lld", c->what, windows,
              (int)w->status, (long long)w->first_line, w->n_lines, (long long)next);
        for (int i = 0; i < w->n_lines && w->first_line + i < N_LINES; i++) {
            const int line = (int)w->first_line + i;
            const nmt_result *r = &w->results[i];
            char why[256] = "";
            if (c->dry_run && ref[line].status == NMT_STATUS_OK && lengths[line] > 0)
                CHECK(r->status == NMT_STATUS_OK && r->n_hypotheses == 1 &&
                          !strcmp(r->hypotheses[0].text, text[line]),
                      "%s: line %d echoes '%s', want '%s'", c->what, line,
                      r->n_hypotheses ? r->hypotheses[0].text : "", text[line]);
            else if (!c->dry_run)
                CHECK(test_bitwise_line(r, &ref[line], why, sizeof why), "%s: line %d: %s",
                      c->what, line, why);
            CHECK(r->status == ref[line].status, "%s: line %d: status %d, want %d", c->what,
                  line, (int)r->status, (int)ref[line].status);
        }
        const size_t n = c->dry_run ? 0 : expected_text((int)w->first_line, w->n_lines, want,
                                                         sizeof want);
        CHECK(c->dry_run || (w->text_bytes == n && !memcmp(w->text, want, n)),
              "%s: window at line %lld: other text", c->what, (long long)w->first_line);
        next = w->first_line + w->n_lines;
        nmt_pipeline_release(p, w);
    }
    const nmt_pipeline_stats stats = pipeline_fixture_end(p, st, next, end, c->what);
    CHECK(stats.lines_read == end && stats.translators_failed == 0,
          "%s: stats: %lld lines read, %lld translators failed", c->what,
          (long long)stats.lines_read, (long long)stats.translators_failed);
done:
    nmt_pipeline_free(p);
    if (fd >= 0)
        close(fd);
    return windows;
}

/* Pushed lines, a few at a time, without waiting: windows are taken to make
 * room. */
static void check_push(nmt_model *model, nmt_translator *t)
{
    nmt_options o = cpu_options();
    nmt_pipeline_options po = pipe_options(16, 1);
    po.output = NMT_PIPELINE_OUTPUT_SCORES;
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    int next = 0, pushed = 0;
    if (nmt_pipeline_create(model, &o, &po, &p, &err) != NMT_STATUS_OK ||
        nmt_pipeline_add_translator(p, t, &err) != NMT_STATUS_OK) {
        CHECK(0, "push: set-up: %s", err.message);
        nmt_pipeline_free(p);
        return;
    }
    nmt_pipeline_window *w = NULL;
    for (;;) {
        if (pushed < N_LINES) {
            const int n = N_LINES - pushed < 7 ? N_LINES - pushed : 7;
            const int took = nmt_pipeline_push(p, lines + pushed, n, 0, &err);
            CHECK(took >= 0, "push: %s", err.message);
            pushed += took > 0 ? took : 0;
            if (pushed == N_LINES)
                nmt_pipeline_end(p);
            if (took == n)
                continue;
        }
        const nmt_status st = nmt_pipeline_next(p, 1, &w, &err);
        if (st == NMT_STATUS_BUSY)
            continue; /* nothing in flight: push more */
        if (st != NMT_STATUS_OK || !w)
            break;
        for (int i = 0; i < w->n_lines; i++) {
            char why[256] = "";
            const int line = (int)w->first_line + i;
            if (line != 77) /* a C string: no NUL to refuse */
                CHECK(test_bitwise_line(&w->results[i], &ref[line], why, sizeof why),
                      "push: line %d: %s", line, why);
        }
        CHECK(w->first_line == next && w->text && w->text[0] != '\0', "push: window at %lld",
              (long long)w->first_line);
        next = (int)(w->first_line + w->n_lines);
        nmt_pipeline_release(p, w);
    }
    CHECK(next == N_LINES, "push: %d lines came back of %d", next, N_LINES);
    CHECK(nmt_pipeline_push(p, lines, 1, 0, &err) == -1, "push after end: taken");
    nmt_pipeline_free(p);
}

/* A caller's format: each line's number, once. */
static int number_lines(void *self, int64_t first_line, const nmt_result *results, int n,
                        FILE *out)
{
    (void)results;
    int *calls = self;
    __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < n; i++)
        if (fprintf(out, "%lld\n", (long long)(first_line + i)) < 0)
            return -1;
    return 0;
}

static void check_format(nmt_model *model, nmt_translator *t)
{
    nmt_options o = cpu_options();
    nmt_pipeline_options po = pipe_options(600, 1); /* several parts on 3 threads */
    po.host_threads = 3;
    int calls = 0;
    po.format = number_lines;
    po.format_self = &calls;
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    const int fd = open(path, O_RDONLY);
    if (nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_OK &&
        nmt_pipeline_add_translator(p, t, &err) == NMT_STATUS_OK &&
        nmt_pipeline_read_fd(p, fd, -1, 0, -1, &err) == NMT_STATUS_OK) {
        nmt_pipeline_window *w;
        CHECK(nmt_pipeline_next(p, 1, &w, &err) == NMT_STATUS_OK && w, "format: %s",
              err.message);
        char want[N_LINES * 8];
        size_t n = 0;
        for (int i = 0; i < N_LINES; i++)
            n += (size_t)snprintf(want + n, sizeof want - n, "%d\n", i);
        CHECK(w && w->text_bytes == n && !memcmp(w->text, want, n),
              "format: the numbers are not 0..%d in order", N_LINES - 1);
        nmt_pipeline_release(p, w);
    } else {
        CHECK(0, "format: set-up: %s", err.message);
    }
    nmt_pipeline_free(p);
    close(fd);
}

/* fail: NMT_TEST_TRANSLATOR_FAIL; survivors: 1 when the others go on. */
static void check_failure(nmt_model *model, nmt_translator **ts, int n, const char *fail,
                          int survivors)
{
    setenv("NMT_TEST_TRANSLATOR_FAIL", fail, 1);
    setenv("NMT_TEST_PIPELINE_HOLD", "1", 1);
    nmt_options o = cpu_options();
    nmt_pipeline_options po = pipe_options(10, n);
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    const int fd = open(path, O_RDONLY);
    int ok_lines = 0, failed_windows = 0, failed = -1;
    if (nmt_pipeline_create(model, &o, &po, &p, &err) != NMT_STATUS_OK ||
        nmt_pipeline_read_fd(p, fd, -1, 0, -1, &err) != NMT_STATUS_OK) {
        CHECK(0, "failure %s: set-up: %s", fail, err.message);
        goto done;
    }
    for (int i = 0; i < n; i++)
        nmt_pipeline_add_translator(p, ts[i], &err);
    nmt_pipeline_window *w;
    while (nmt_pipeline_next(p, 1, &w, &err) == NMT_STATUS_OK && w) {
        if (w->status == NMT_STATUS_OK) {
            for (int i = 0; i < w->n_lines; i++) {
                char why[256] = "";
                CHECK(test_bitwise_line(&w->results[i], &ref[w->first_line + i], why,
                                        sizeof why),
                      "failure %s: line %lld: %s", fail, (long long)w->first_line + i, why);
            }
            ok_lines += w->n_lines;
        } else {
            failed_windows++;
            CHECK(w->status == NMT_STATUS_ERROR_CUDA &&
                      strstr(w->error.message, "NMT_TEST_TRANSLATOR_FAIL") &&
                      w->results[0].status == NMT_STATUS_ERROR_CUDA,
                  "failure %s: a failed window: status %d, '%s'", fail, (int)w->status,
                  w->error.message);
        }
        nmt_pipeline_release(p, w);
    }
    if (survivors)
        CHECK(ok_lines == N_LINES && failed_windows == 0,
              "failure %s: %d lines translated, %d windows failed", fail, ok_lines,
              failed_windows);
    else
        CHECK(failed_windows > 0 && ok_lines > 0 && ok_lines < N_LINES,
              "failure %s: %d lines translated, %d windows failed", fail, ok_lines,
              failed_windows);
    for (int i = 0; i < n; i++) {
        if (!nmt_pipeline_translator_failed(p, i, &err))
            continue;
        CHECK(failed < 0 && strstr(err.message, "injected failure"),
              "failure %s: translator %d failed too ('%s')", fail, i, err.message);
        failed = i;
    }
    CHECK(failed >= 0 && (fail[0] == '*' || failed == atoi(fail)),
          "failure %s: translator %d named failed", fail, failed);
done:
    nmt_pipeline_free(p);
    close(fd);
    unsetenv("NMT_TEST_TRANSLATOR_FAIL");
    unsetenv("NMT_TEST_PIPELINE_HOLD");
}

static void check_refusals(nmt_model *model, nmt_translator *t)
{
    nmt_options o = cpu_options();
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    nmt_pipeline_options po = pipe_options(0, 1);
    po.host_threads = -2;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p,
          "host_threads -2 taken");
    o.max_src_tokens = 7; /* t's are the default's */
    CHECK(nmt_pipeline_create(model, &o, NULL, &p, &err) == NMT_STATUS_OK, "create: %s",
          err.message);
    CHECK(nmt_pipeline_add_translator(p, t, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "a translator of other input options was taken");
    nmt_pipeline_window *w = NULL;
    CHECK(nmt_pipeline_next(p, 1, &w, &err) == NMT_STATUS_ERROR_ARGUMENT && !w,
          "next without an input");
    const int dir = open("/tmp", O_RDONLY);
    CHECK(nmt_pipeline_read_fd(p, dir, -1, 0, -1, &err) == NMT_STATUS_OK, "read_fd: %s",
          err.message);
    CHECK(nmt_pipeline_push(p, lines, 1, 1, &err) == -1, "push after read_fd: taken");
    CHECK(nmt_pipeline_next(p, 1, &w, &err) == NMT_STATUS_ERROR_IO && !w &&
              strstr(err.message, "after line 0"),
          "reading a directory: status %d '%s'", (int)err.status, err.message);
    nmt_pipeline_free(p);
    close(dir);
    nmt_pipeline_free(NULL);
}

int main(void)
{
    test_seed();
    make_input();
    const nmt_options o = cpu_options();
    pipeline_fixture f;
    nmt_error err = {0};
    if (!pipeline_fixture_open(&f, &o) || test_failures)
        goto done;
    nmt_model *model = f.model;
    nmt_translator **ts = f.ts;
    CHECK(nmt_translate_batch(ts[0], lines, N_LINES, ref, &err) == NMT_STATUS_OK, "reference: %s",
          err.message);
    refuse_reference();
    CHECK(ref[17].status == NMT_STATUS_ERROR_INPUT && ref[40].status == NMT_STATUS_ERROR_INPUT,
          "the reference refuses lines 17 and 40");
    static const run_config runs[] = {
        {"1 translator, windows of 7", 1, 0, 7, 0, 0, -1},
        {"3 translators, 3 threads, windows of 64", 3, 3, 64, 0, 0, -1},
        {"inline, windows of 1", 1, -1, 1, 0, 0, -1},
        {"1 thread, skip 33, limit 100", 1, 1, 7, 0, 33, 100},
        {"3 translators, skip 290, limit past the end", 3, 2, 64, 0, 290, 50},
        {"dry run", 0, 2, 16, 1, 0, -1},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        run_file(model, &runs[r], ts);
    setenv("NMT_TEST_PIPELINE_SLOTS", "1", 1);
    run_config one_slot = {"a ring of one, 3 translators", 3, 2, 7, 0, 0, -1};
    run_file(model, &one_slot, ts);
    unsetenv("NMT_TEST_PIPELINE_SLOTS");
    check_push(model, ts[0]);
    check_format(model, ts[0]);
    check_failure(model, ts, 3, "1", 1);
    check_failure(model, ts, 3, "*,13", 1);
    check_failure(model, ts, 1, "0,2", 0);
    check_refusals(model, ts[0]);
done:
    for (int i = 0; i < N_LINES; i++)
        nmt_result_clear(&ref[i]);
    pipeline_fixture_free(&f);
    unlink(path);
    return test_finish("test_pipeline");
}
