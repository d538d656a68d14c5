/* nmt.h: the one public header of the nmt library.
 *
 * An LSTM + attention sequence-to-sequence translator (model v1, see
 * docs/model-format.md) with batched beam search on the CPU or a CUDA GPU.
 *
 * Threads: an nmt_model is immutable once loaded and may be shared by any
 * number of threads. An nmt_translator owns workspaces (and, on CUDA, a stream
 * and a cuBLAS handle): use one translator per thread.
 *
 * Errors: every fallible call returns an nmt_status (0 ok, negative error) and,
 * when `err` is not NULL, fills it with a message naming what was wrong (file,
 * field, input line). The library never exits, aborts or prints to stdout. */
#ifndef NMT_H
#define NMT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NMT_VERSION_STRING "0.1.0"

typedef enum nmt_status {
    NMT_STATUS_OK = 0,
    NMT_STATUS_ERROR_IO = -1,          /* a file could not be opened or read */
    NMT_STATUS_ERROR_FORMAT = -2,      /* a model file is malformed */
    NMT_STATUS_ERROR_INPUT = -3,       /* an input line is invalid (UTF-8, length) */
    NMT_STATUS_ERROR_ARGUMENT = -4,    /* a caller passed an invalid argument */
    NMT_STATUS_ERROR_MEMORY = -5,      /* an allocation failed */
    NMT_STATUS_ERROR_CUDA = -6,        /* a CUDA, cuBLAS or cuSPARSE call failed */
    NMT_STATUS_ERROR_UNSUPPORTED = -7, /* e.g. CUDA asked for but not built or no GPU */
    NMT_STATUS_ERROR_INTERNAL = -8     /* a broken invariant: a bug, please report */
} nmt_status;

/* Filled by a failing call: the status and a message naming the cause. */
typedef struct nmt_error {
    nmt_status status;
    char message[512];
} nmt_error;

typedef enum nmt_device {
    NMT_DEVICE_AUTO = 0, /* CUDA when built and a GPU exists, else the CPU */
    NMT_DEVICE_CPU = 1,
    NMT_DEVICE_CUDA = 2
} nmt_device;

/* Translation options. Initialize with nmt_options_init, then override. */
typedef struct nmt_options {
    int beam_size;       /* B, default 5 */
    int n_best;          /* N <= B hypotheses returned per line, default 1 */
    float alpha;         /* length penalty: score / len^alpha, default 1.0 */
    float max_len_a;     /* max target length floor(a*S + b), default 2 */
    int max_len_b;       /* default 10 */
    int batch_size;      /* sentences decoded together, default 32 */
    int max_line_bytes;  /* longer input lines are refused, default 4096 */
    int max_src_tokens;  /* lines with more tokens are refused, default 256 */
    int unk_replace;     /* replace UNK by the most attended source word, default 1 */
    nmt_device device;   /* default NMT_DEVICE_AUTO */
    int device_index;    /* CUDA device ordinal, default 0 */
} nmt_options;

typedef struct nmt_model nmt_model;
typedef struct nmt_translator nmt_translator;

/* One hypothesis of one input line. */
typedef struct nmt_hypothesis {
    char *text;       /* detokenized UTF-8, owned by the result */
    float score;      /* log-probability / length^alpha (length counts EOS) */
    float log_prob;   /* sum of token log-probabilities, EOS included */
    int n_tokens;     /* target tokens, EOS excluded */
} nmt_hypothesis;

/* The outcome for one input line: either hypotheses or a per-line error.
 * A bad line never fails the batch: its status says why, the others translate. */
typedef struct nmt_result {
    nmt_status status;
    char message[256];
    int n_hypotheses;
    nmt_hypothesis *hypotheses; /* best first */
} nmt_result;

const char *nmt_status_string(nmt_status status);

void nmt_options_init(nmt_options *options);

/* Loads and validates a model file; refuses malformed files with the reason. */
nmt_status nmt_model_load(const char *path, nmt_model **model, nmt_error *err);
void nmt_model_free(nmt_model *model);

/* A short human-readable description (sizes, vocabularies). */
const char *nmt_model_describe(const nmt_model *model);

/* 1 when the library was built with CUDA and a GPU is visible, else 0. */
int nmt_cuda_available(void);

nmt_status nmt_translator_create(const nmt_model *model, const nmt_options *options,
                                 nmt_translator **translator, nmt_error *err);
void nmt_translator_free(nmt_translator *translator);

/* The device the translator actually runs on (never NMT_DEVICE_AUTO). */
nmt_device nmt_translator_device(const nmt_translator *translator);

/* Translates n_lines lines (UTF-8, no newline). results[i] receives line i's
 * outcome; release each with nmt_result_clear. Returns an error only when the
 * whole batch failed (device error, out of memory); per-line problems are
 * reported in results[i].status. */
nmt_status nmt_translate_batch(nmt_translator *translator, const char *const *lines, int n_lines,
                               nmt_result *results, nmt_error *err);

void nmt_result_clear(nmt_result *result);

#ifdef __cplusplus
}
#endif

#endif /* NMT_H */
