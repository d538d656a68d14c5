/* test_gpu_translate.c: the CUDA engine against the CPU engine through the
 * public API. On the test model (NMT_TEST_MODEL), random lines of 1..20
 * source words (known words in several casings, unknown words, punctuation)
 * are translated with --device cpu and --device cuda at several batch sizes,
 * beams and n-best sizes. Every hypothesis text must be identical on >= 99%
 * of the lines and the scores within 1e-3; differing lines are printed with
 * both scores. Exit 77 without a GPU. NMT_TEST_SMALL=1 (under
 * compute-sanitizer, which is ~100x slower): 12 lines, two configurations. */
#include "nmt.h"
#include "cuda_ctx.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LINES 100
#define N_LINES_SMALL 12
static int n_lines = N_LINES;

static const char *const words[] = {
    "der", "die", "das", "und", "ist", "ein", "eine", "Haus", "katze", "Hund", "MANN", "frau",
    "kind", "sieht", "hat", "nicht", "sehr", "gro\xc3\x9f", "klein", "sch\xc3\xb6n", "Heute",
    "wir", "ich", "du", "sie", "es", "mit", "auf", "gut", "Buch", "liest", "m\xc3\xbc" "de",
    "\xc3\x84pfel", "?", "Zebra", "xylophon", "kind.", "hund,", "\"", "!"};

static void make_lines(char lines[N_LINES][512])
{
    const int n_words = (int)(sizeof words / sizeof words[0]);
    for (int i = 0; i < N_LINES; i++) {
        int len = test_rand_int(1, 21);
        lines[i][0] = '\0';
        for (int w = 0; w < len; w++) {
            if (w)
                strcat(lines[i], " ");
            strcat(lines[i], words[test_rand_int(0, n_words)]);
        }
    }
}

static int translate(const nmt_model *model, nmt_device device, int batch, int beam, int n_best,
                     const char *const *lines, nmt_result *results)
{
    nmt_options o;
    nmt_options_init(&o);
    o.device = device;
    o.batch_size = batch;
    o.beam_size = beam;
    o.n_best = n_best;
    nmt_translator *t = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    nmt_status st = nmt_translator_create(model, &o, &t, &err);
    CHECK(st == NMT_STATUS_OK, "translator (device %d): %s", (int)device, err.message);
    if (st != NMT_STATUS_OK)
        return 0;
    CHECK(nmt_translator_device(t) == device, "runs on device %d, asked %d",
          (int)nmt_translator_device(t), (int)device);
    st = nmt_translate_batch(t, lines, n_lines, results, &err);
    CHECK(st == NMT_STATUS_OK, "translate (device %d, batch %d): %s", (int)device, batch,
          err.message);
    nmt_translator_free(t);
    return st == NMT_STATUS_OK;
}

/* 1 when every hypothesis of the line has the same text, length and a score
 * within 1e-3 on both devices. */
static int same_line(const nmt_result *a, const nmt_result *b)
{
    if (a->status != b->status || a->n_hypotheses != b->n_hypotheses)
        return 0;
    for (int h = 0; h < a->n_hypotheses; h++) {
        const nmt_hypothesis *x = &a->hypotheses[h], *y = &b->hypotheses[h];
        if (strcmp(x->text, y->text) || x->n_tokens != y->n_tokens ||
            fabsf(x->score - y->score) > 1e-3f || fabsf(x->log_prob - y->log_prob) > 1e-3f)
            return 0;
    }
    return 1;
}

static void compare(const nmt_model *model, int batch, int beam, int n_best,
                    const char *const *lines)
{
    static nmt_result cpu[N_LINES], gpu[N_LINES];
    int ok = translate(model, NMT_DEVICE_CPU, batch, beam, n_best, lines, cpu) &&
             translate(model, NMT_DEVICE_CUDA, batch, beam, n_best, lines, gpu);
    if (ok) {
        int differing = 0;
        for (int i = 0; i < n_lines; i++) {
            if (same_line(&cpu[i], &gpu[i]))
                continue;
            differing++;
            fprintf(stderr, "batch %d beam %d n_best %d line %d: %s\n", batch, beam, n_best, i,
                    lines[i]);
            for (int d = 0; d < 2; d++) {
                const nmt_result *r = d ? &gpu[i] : &cpu[i];
                fprintf(stderr, "  %s status %d:", d ? "cuda" : "cpu ", (int)r->status);
                for (int h = 0; h < r->n_hypotheses; h++)
                    fprintf(stderr, " [%.5f / %.5f] %s;", r->hypotheses[h].score,
                            r->hypotheses[h].log_prob, r->hypotheses[h].text);
                fprintf(stderr, "\n");
            }
        }
        /* <= 1% of the lines, and at least one line may differ (near-ties). */
        CHECK(differing <= (n_lines + 99) / 100, "batch %d beam %d n_best %d: %d of %d lines "
              "differ", batch, beam, n_best, differing, n_lines);
        fprintf(stderr, "batch %d beam %d n_best %d: %d of %d lines differ\n", batch, beam,
                n_best, differing, n_lines);
    }
    for (int i = 0; i < n_lines; i++) {
        nmt_result_clear(&cpu[i]);
        nmt_result_clear(&gpu[i]);
    }
}

int main(void)
{
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    nmt_model *model = NULL;
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(NMT_TEST_MODEL, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", NMT_TEST_MODEL, err.message);
        return 1;
    }
    static char text[N_LINES][512];
    const char *lines[N_LINES];
    make_lines(text);
    for (int i = 0; i < N_LINES; i++)
        lines[i] = text[i];
    const char *small = getenv("NMT_TEST_SMALL");
    if (small && *small == '1') {
        n_lines = N_LINES_SMALL;
        compare(model, 1, 5, 1, lines);
        compare(model, 7, 3, 2, lines);
    } else {
        compare(model, 1, 5, 1, lines);
        compare(model, 7, 3, 2, lines);
        compare(model, 37, 5, 3, lines);
        compare(model, 100, 1, 1, lines);
        compare(model, 37, 12, 12, lines);
    }
    nmt_model_free(model);
    return test_finish("test_gpu_translate");
}
