/* test_pipeline_targets.c: the host pipeline with a target file beside the
 * input (nmt_pipeline_options.targets, nmt_pipeline_read_fd's target_fd) on
 * the CPU's reference kernels (a line's bits do not depend on its batch):
 * - scoring (NMT_TARGETS_SCORE) and prefixes (_PREFIX) give every line what
 *   nmt_score_batch and nmt_translate_batch_prefix give it in one call, bit
 *   for bit, with 1 and 3 translators, 3 host threads or none (inline),
 *   windows of 7 and 64 (the last window split among the translators), and
 *   skip/limit, which skip both files alike;
 * - a target line the reader refuses (too long, a NUL byte, past the end of
 *   a shorter file) is its line's error, named by options.target_name; a
 *   refused source line keeps its own error; the other lines are scored;
 * - a translator that fails (NMT_TEST_TRANSLATOR_FAIL) hands its windows,
 *   targets and all, to the others: the same answers;
 * - refused: push with targets, read_fd without the target file or with one
 *   the pipeline has no targets for, a dry run with targets, prefixes on a
 *   translator that shrinks its output layer. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, setenv */

#include "nmt.h"
#include "test_results.h"
#include "test_util.h"

#include "forced_fixture.h"
#include "pipeline_fixture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 120, MISSING = 3, MAX_BYTES = 200 };

static char src_text[N][512], tgt_text[N][512];
static const char *srcs[N], *tgts[N];
static char src_path[64], tgt_path[64];
static nmt_result scored[N], prefixed[N];

/* path (a temporary file) holds n lines; line `nul` gets a NUL byte. */
static void write_lines(char *path, const char *const *lines, int n, int nul)
{
    snprintf(path, 64, "/tmp/test_pipeline_targets_XXXXXX");
    const int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    for (int i = 0; f && i < n; i++) {
        if (i == nul)
            fwrite("der \0 hund", 1, 10, f);
        else
            fputs(lines[i], f);
        fputc('\n', f);
    }
    CHECK(f && fclose(f) == 0, "writing %s", path);
}

/* The lines: line 5's source is empty, line 11's too long; line 20's
 * target too long, line 30's has a NUL; the last MISSING have none. */
static void make_files(void)
{
    forced_lines(src_text, srcs, N, 10);
    forced_lines(tgt_text, tgts, N, 8);
    src_text[5][0] = '\0';
    memset(src_text[11], 'a', 300);
    src_text[11][300] = '\0';
    memset(tgt_text[20], 'b', 300);
    tgt_text[20][300] = '\0';
    tgt_text[40][0] = '\0'; /* a prefix: none; a target: the EOS alone */
    write_lines(src_path, srcs, N, -1);
    write_lines(tgt_path, tgts, N - MISSING, 30);
}

/* What the pipeline answers for a line whose target line it refuses. */
static void refuse(nmt_result *r, const char *message)
{
    nmt_result_clear(r);
    r->status = NMT_STATUS_ERROR_INPUT;
    snprintf(r->message, sizeof r->message, "%s", message);
}

static void make_references(nmt_translator *t)
{
    nmt_error err = {0};
    CHECK(nmt_score_batch(t, srcs, tgts, N, scored, &err) == NMT_STATUS_OK, "score: %s",
          err.message);
    CHECK(nmt_translate_batch_prefix(t, srcs, tgts, N, prefixed, &err) == NMT_STATUS_OK,
          "prefix: %s", err.message);
    char message[160];
    for (int k = 0; k < 2; k++) {
        nmt_result *ref = k ? prefixed : scored;
        snprintf(message, sizeof message, "the target too long: 300 bytes, the limit is %d",
                 MAX_BYTES);
        refuse(&ref[20], message);
        refuse(&ref[30], "the target contains a NUL byte");
        for (int i = N - MISSING; i < N; i++)
            refuse(&ref[i], "the target: none (the file has fewer lines than the input)");
    }
    CHECK(scored[5].status == NMT_STATUS_ERROR_INPUT && scored[11].status != NMT_STATUS_OK &&
              prefixed[11].status != NMT_STATUS_OK && scored[0].status == NMT_STATUS_OK,
          "the references refuse the empty and the long source");
}

typedef struct run_config {
    const char *what;
    nmt_targets targets;
    int translators, host_threads, window;
    int64_t skip, limit;
} run_config;

static nmt_options options(void)
{
    nmt_options o = forced_options(NMT_DEVICE_CPU, 3, 2, 4);
    o.max_line_bytes = MAX_BYTES;
    return o;
}

static void run_files(nmt_model *model, const run_config *c, nmt_translator **ts)
{
    const nmt_options o = options();
    nmt_pipeline_options po;
    nmt_pipeline_options_init(&po);
    po.window_lines = c->window;
    po.translators = c->translators;
    po.host_threads = c->host_threads;
    po.targets = c->targets;
    po.target_name = "the target";
    const nmt_result *ref = c->targets == NMT_TARGETS_SCORE ? scored : prefixed;
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    const int fd = open(src_path, O_RDONLY), target_fd = open(tgt_path, O_RDONLY);
    int64_t next = c->skip;
    if (nmt_pipeline_create(model, &o, &po, &p, &err) != NMT_STATUS_OK ||
        nmt_pipeline_read_fd(p, fd, target_fd, c->skip, c->limit, &err) != NMT_STATUS_OK) {
        CHECK(0, "%s: set-up: %s", c->what, err.message);
        goto done;
    }
    for (int i = 0; i < c->translators; i++)
        CHECK(nmt_pipeline_add_translator(p, ts[i], &err) == NMT_STATUS_OK, "%s: add: %s",
              c->what, err.message);
    const int64_t end = c->limit >= 0 && c->skip + c->limit < N ? c->skip + c->limit : N;
    nmt_pipeline_window *w;
    nmt_status st;
    while ((st = nmt_pipeline_next(p, 1, &w, &err)) == NMT_STATUS_OK && w) {
        CHECK(w->status == NMT_STATUS_OK && w->first_line == next && w->n_lines > 0,
              "%s: window at %lld: status %d '%s', want line %lld", c->what,
              (long long)w->first_line, (int)w->status, w->error.message, (long long)next);
        for (int i = 0; i < w->n_lines; i++) {
            const int line = (int)w->first_line + i;
            char why[256] = "";
            CHECK(line < N && test_bitwise_line(&w->results[i], &ref[line], why, sizeof why),
                  "%s: line %d: %s", c->what, line, why);
        }
        next = w->first_line + w->n_lines;
        nmt_pipeline_release(p, w);
    }
    const nmt_pipeline_stats stats = pipeline_fixture_end(p, st, next, end, c->what);
    CHECK(stats.translators_failed == (getenv("NMT_TEST_TRANSLATOR_FAIL") != NULL),
          "%s: %lld translators failed", c->what, (long long)stats.translators_failed);
done:
    nmt_pipeline_free(p);
    close(fd);
    close(target_fd);
}

static void check_refusals(nmt_model *model)
{
    nmt_options o = options();
    nmt_pipeline_options po;
    nmt_pipeline_options_init(&po);
    nmt_pipeline *p = NULL;
    nmt_error err = {0};
    const int fd = open(src_path, O_RDONLY);
    po.targets = NMT_TARGETS_SCORE;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_OK, "create: %s",
          err.message);
    CHECK(nmt_pipeline_push(p, srcs, 1, 1, &err) == -1 && strstr(err.message, "targets"),
          "push with targets: '%s'", err.message);
    CHECK(nmt_pipeline_read_fd(p, fd, -1, 0, -1, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "read_fd without the target file");
    nmt_pipeline_free(p);
    po.targets = NMT_TARGETS_NONE;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_OK, "create: %s",
          err.message);
    CHECK(nmt_pipeline_read_fd(p, fd, fd, 0, -1, &err) == NMT_STATUS_ERROR_ARGUMENT,
          "read_fd with a target file and no targets");
    nmt_pipeline_free(p);
    p = NULL;
    po.targets = NMT_TARGETS_PREFIX;
    po.dry_run = 1;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p,
          "a dry run with targets was taken");
    po.dry_run = 0;
    po.targets = (nmt_targets)3;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p,
          "targets 3 taken");
    po.targets = NMT_TARGETS_PREFIX;
    o.shrink.mode = NMT_SHRINK_TOP;
    o.shrink.top = 20;
    CHECK(nmt_pipeline_create(model, &o, &po, &p, &err) == NMT_STATUS_ERROR_ARGUMENT && !p &&
              strstr(err.message, "full softmax"),
          "prefixes on a shrinking translator: '%s'", err.message);
    close(fd);
}

int main(void)
{
    test_seed();
    make_files();
    const nmt_options o = options();
    pipeline_fixture f;
    if (!pipeline_fixture_open(&f, &o) || test_failures)
        goto done;
    nmt_model *model = f.model;
    nmt_translator **ts = f.ts;
    make_references(ts[0]);
    static const run_config runs[] = {
        {"score, 1 translator, windows of 7", NMT_TARGETS_SCORE, 1, 0, 7, 0, -1},
        {"score, 3 translators, 3 threads, windows of 64", NMT_TARGETS_SCORE, 3, 3, 64, 0, -1},
        {"score, inline, skip 33, limit 50", NMT_TARGETS_SCORE, 1, -1, 7, 33, 50},
        {"score, skip past the target file's end", NMT_TARGETS_SCORE, 1, 2, 7, N - 2, -1},
        {"prefix, 3 translators, windows of 64", NMT_TARGETS_PREFIX, 3, 2, 64, 0, -1},
        {"prefix, inline, windows of 1, skip 15", NMT_TARGETS_PREFIX, 1, -1, 1, 15, 30},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        run_files(model, &runs[r], ts);
    setenv("NMT_TEST_TRANSLATOR_FAIL", "1", 1);
    setenv("NMT_TEST_PIPELINE_HOLD", "1", 1);
    const run_config failing = {"score, translator 1 fails", NMT_TARGETS_SCORE, 3, 2, 10, 0, -1};
    run_files(model, &failing, ts);
    unsetenv("NMT_TEST_TRANSLATOR_FAIL");
    unsetenv("NMT_TEST_PIPELINE_HOLD");
    check_refusals(model);
done:
    for (int i = 0; i < N; i++) {
        nmt_result_clear(&scored[i]);
        nmt_result_clear(&prefixed[i]);
    }
    pipeline_fixture_free(&f);
    unlink(src_path);
    unlink(tgt_path);
    return test_finish("test_pipeline_targets");
}
