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

/* nmt_status, nmt_error and nmt_status_string: the ground floor's status
 * types (core/nmt_status.h; the installed nmt.h carries them inline). */
#include "nmt_enums.h"
#include "nmt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NMT_VERSION_STRING "0.1.0"


typedef enum nmt_device {
    NMT_DEVICE_AUTO = 0, /* CUDA when built and a GPU exists, else the CPU */
    NMT_DEVICE_CPU = 1,
    NMT_DEVICE_CUDA = 2
} nmt_device;

/* Output-vocabulary shrinking (docs/lsh.md; its enums, and nmt_precision,
 * nmt_search_rules and nmt_cpu_isa, are nmt_enums.h's). */
typedef struct nmt_shrink_options {
    nmt_shrink_mode mode; /* default NMT_SHRINK_NONE */
    int k, u, w;          /* WTA hashing {K, u, W}, default 8, 3, 500 */
    int top;              /* T: the most frequent target words always scored, default 2000 */
    int threshold;        /* t: a word is a candidate when >= t bands match, default 6 */
    nmt_lsh_share share;  /* default NMT_LSH_SHARE_SENTENCE */
    unsigned seed;        /* permutations and hash tables, default 1 */
    nmt_lsh_lists lists;  /* default NMT_LSH_LISTS_AUTO; the CPU ignores it */
} nmt_shrink_options;

/* Matrices the model file stores sparse (docs/model-format.md, section SPRS). */
typedef enum nmt_sparse {
    NMT_SPARSE_AUTO = 0, /* the CPU multiplies them in CSR form (SpMM); CUDA where its SpMM
                            was measured faster than the dense GEMM of the precision at the
                            step's row count, else the dense expansion (default) */
    NMT_SPARSE_ON = 1,   /* the CSR form, always (an error when the model has no sparse
                            matrix) */
    NMT_SPARSE_OFF = 2   /* the dense expansion everywhere (the same results on the CPU) */
} nmt_sparse;

/* The CPU's kernels (nmt_options.cpu_kernels). */
typedef enum nmt_cpu_kernels {
    NMT_CPU_KERNELS_AUTO = 0,      /* fast (default) */
    NMT_CPU_KERNELS_BLAS = 1,      /* fast's network on the BLAS's SGEMM (an error when built
                                      without a BLAS, and under batch invariance where a probe
                                      finds the BLAS's rows moving with the row count, as
                                      OpenBLAS's Haswell/Zen kernels do) */
    NMT_CPU_KERNELS_REFERENCE = 2, /* the plain-C oracle: double sums, a sentence at a time */
    NMT_CPU_KERNELS_FAST = 3       /* every dense product on the engine's own vectorized,
                                      threaded fp32 product (nmt_options.cpu_isa), the
                                      encoder batched over the sentences, the cells,
                                      attention and softmax in vectorized fp32 */
} nmt_cpu_kernels;

/* Translation options. Initialize with nmt_options_init, then override. */
typedef struct nmt_options {
    int beam_size;       /* B, default 5 */
    int n_best;          /* N <= B hypotheses returned per line, default 1 */
    float alpha;         /* length penalty: score / len^alpha, default 1.0 */
    float max_len_a;     /* max target length floor(a*S + b), default 2 */
    int max_len_b;       /* default 10 */
    int batch_size;      /* sentences decoded together at most, default 32; CUDA halves it
                            at create while the device runs out of memory creating the
                            translator (nmt_stats.batch_size says the size chosen) */
    int max_line_bytes;  /* longer input lines are refused, default 4096 */
    int max_src_tokens;  /* lines with more tokens are refused, default 256 */
    int unk_replace;     /* replace UNK by the most attended source word, default 1 */
    nmt_device device;   /* default NMT_DEVICE_AUTO */
    int device_index;    /* CUDA device ordinal, default 0 */
    nmt_shrink_options shrink; /* default: off (full softmax) */
    int collect_stats;   /* fill nmt_stats: 0 off (default); 1 sentences, steps and
                            wall time (free); 2 also the output layer's GPU time
                            (events) and, with shrinking on, recall (slower: the
                            full softmax is computed too) */
    int cuda_graphs;     /* CUDA: replay decoder steps and encoder passes that recur
                            as CUDA graphs (fewer launches), default 1; 0 launches
                            every kernel (the same results) */
    int warmup;          /* CUDA: decode small synthetic batches when the translator
                            is created (~0.5 s at 2,048 sentences), so that the first
                            real batches do not pay one-time CUDA/cuBLAS costs
                            (~150 ms), default 1 */
    nmt_precision precision; /* CUDA: the GEMMs' arithmetic, default NMT_PRECISION_AUTO
                                (as translate's and nmt-server's). At each precision a
                                line's outputs have the same bits in any batch
                                (docs/decoding.md, "Batch invariance") */
    int check_every;     /* CUDA: the host reads the sentences' done flags every this
                            many steps (1..64, default 1): finished sentences leave
                            the batch and the loop stops at most 2x this many steps
                            after the GPU knows; never a wait on the step in flight */
    int input_tokens;    /* 1: lines are pre-tokenized, tokens separated by whitespace and
                            taken as they are (docs/tokenization.md); 0: raw text, split by
                            the engine's tokenizer or, when the model file says
                            tokenizer=sentencepiece, by its SentencePiece model; -1
                            (default): as the model file says (tokenizer=pretokenized: 1) */
    int output_tokens;   /* 1: hypotheses are the target tokens separated by single spaces,
                            not detokenized; 0: text (a SentencePiece model's pieces joined
                            by its decoder); -1 (default): as the model file says */
    int max_batch_tokens; /* a batch holds at most this many source tokens (lines sorted
                             longest first; a longer line goes alone) as well as at most
                             batch_size lines; 0 (default): only batch_size */
    nmt_search_rules search_rules; /* default NMT_SEARCH_RULES_V1 */
    int64_t max_memory;  /* CUDA: bytes of device memory the translator may allocate, 0
                            (default): no cap. Before creating its backend the translator
                            measures what the backend allocates for (batch_size, beam_size,
                            max_src_tokens): weights, the network's workspaces, the search's
                            buffers (not the CUDA context, cuBLAS's handles or the shrink
                            wing); over the cap it halves batch_size until it fits
                            (nmt_stats.batch_size says the size chosen); when even one
                            sentence does not fit, create fails with
                            NMT_STATUS_ERROR_MEMORY naming the need and the cap. The CPU
                            ignores it */
    nmt_sparse sparse;   /* sparse matrices, default NMT_SPARSE_AUTO */
    int attention_weights; /* 1: every hypothesis carries its soft attention weights, its
                              target tokens and the line its source tokens
                              (nmt_hypothesis.attention, .tokens, nmt_result.src_tokens;
                              docs/decoding.md, "Attention weights and token scores"); the
                              search then keeps a weights history (memory: on CUDA about
                              batch_size x (2 max_src_tokens + 10) x beam_size x
                              max_src_tokens floats, three times). 0 (default): none */
    int batch_invariant; /* 1 (default): every output of a line (text, scores, token
                            scores, alignment, attention) has the same bits whatever it
                            is batched with, on a given device kind and precision
                            (docs/decoding.md, "Batch invariance"); 0: CUDA may run
                            faster kernels whose last bits depend on the batch */
    nmt_cpu_kernels cpu_kernels; /* CPU: default NMT_CPU_KERNELS_AUTO. All keep batch
                                    invariance; their outputs differ by fp32 rounding */
    int threads;         /* CPU, fast and blas: threads a product may use, 0 (default):
                            the machine's cores (nmt_cpu_default_threads(1)). OpenBLAS
                            keeps one count for the process: with blas, give every
                            translator of a process the same */
    nmt_cpu_isa cpu_isa; /* CPU, fast: the instructions of its product, default
                            NMT_CPU_ISA_AUTO (the best this CPU runs); a path the CPU
                            lacks is an error at create. The paths' last bits differ:
                            one path everywhere gives every machine the same bits */
} nmt_options;

typedef struct nmt_model nmt_model;
typedef struct nmt_translator nmt_translator;

/* One hypothesis of one input line. */
typedef struct nmt_hypothesis {
    char *text;       /* detokenized UTF-8 (output_tokens: the tokens), owned by the result */
    float score;      /* log-probability / length^alpha (length counts EOS) */
    float log_prob;   /* sum of token log-probabilities, EOS included */
    int n_tokens;     /* target tokens, EOS excluded */
    int *alignment;   /* [n_tokens]: for each target token, the source token (0-based, as
                         tokenized) it attended most; owned by the result */
    float *token_scores; /* [n_tokens + 1]: the log-probability of each target token, then
                            the EOS's (0 for a hypothesis the onmt rules cut at the max
                            length, which has none); they sum to log_prob up to float
                            rounding; owned by the result */
    float *attention;    /* attention_weights: [n_tokens x n_src] (nmt_result.n_src), row t
                            the attention weights of target token t over the source tokens
                            (each row sums to 1; alignment[t] is its largest); else NULL.
                            Owned by the result */
    char **tokens;       /* attention_weights: [n_tokens] the target tokens the text is made
                            of (unknown words replaced, not detokenized); else NULL. Owned */
} nmt_hypothesis;

/* The outcome for one input line: either hypotheses or a per-line error.
 * A bad line never fails the batch: its status says why, the others translate. */
typedef struct nmt_result {
    nmt_status status;
    char message[256];
    int n_hypotheses;
    nmt_hypothesis *hypotheses; /* best first */
    int n_src;                  /* the line's source tokens, as tokenized (0: an empty or
                                   refused line) */
    char **src_tokens;          /* attention_weights: [n_src] those tokens; else NULL. Owned */
} nmt_result;

void nmt_options_init(nmt_options *options);

/* sizeof of a public struct by its name ("nmt_options", "nmt_hypothesis",
 * "nmt_result", "nmt_stats", "nmt_error", "nmt_service_options",
 * "nmt_request_options", "nmt_service_stats", "nmt_shrink_options"), 0 for
 * another name: a binding (python/nmt) checks its own layouts against the
 * library it loaded, so a library of another version is refused at load
 * instead of misread. */
size_t nmt_struct_size(const char *name);

/* Loads and validates a model file; refuses malformed files with the reason. */
nmt_status nmt_model_load(const char *path, nmt_model **model, nmt_error *err);
void nmt_model_free(nmt_model *model);

/* A short human-readable description (sizes, vocabularies). */
const char *nmt_model_describe(const nmt_model *model);

/* The number of visible CUDA devices: 0 when the library was built without
 * CUDA or no GPU is visible (so it also reads as "is CUDA available"). */
int nmt_cuda_available(void);

/* The threads each of `workers` CPU translators of one process gets
 * when nmt_options.threads is 0: the machine's cores divided among them, at
 * least 1 (CTranslate2's inter_threads x intra_threads). */
int nmt_cpu_default_threads(int workers);

nmt_status nmt_translator_create(const nmt_model *model, const nmt_options *options,
                                 nmt_translator **translator, nmt_error *err);
void nmt_translator_free(nmt_translator *translator);

/* The device the translator actually runs on (never NMT_DEVICE_AUTO). */
nmt_device nmt_translator_device(const nmt_translator *translator);

/* Translates n_lines lines (UTF-8, no newline). results[i] receives line i's
 * outcome; release each with nmt_result_clear. Returns an error only when the
 * whole batch failed (device error, host out of memory); per-line problems are
 * reported in results[i].status. A batch the device has no memory for is
 * decoded again as two halves (down to one sentence): the same translations;
 * a sentence that does not fit alone gets NMT_STATUS_ERROR_MEMORY with the
 * cause in its message, and the other lines are translated. */
nmt_status nmt_translate_batch(nmt_translator *translator, const char *const *lines, int n_lines,
                               nmt_result *results, nmt_error *err);

/* nmt_translate_batch in two halves, for a pipeline that prepares the next
 * lines while the translator decodes the last ones. prepare does the host
 * work that comes before decoding (each line checked and tokenized, the
 * lines ordered by length); it reads only the translator's model and input
 * options, so it may run on another thread while any translator of that
 * model decodes. translate_prepared decodes them with a translator of the
 * same model and input options (max_line_bytes, max_src_tokens,
 * input_tokens; NMT_STATUS_ERROR_ARGUMENT otherwise) into results[0 ..
 * n_lines), exactly as nmt_translate_batch would; once, then free it. */
typedef struct nmt_prepared nmt_prepared;
nmt_status nmt_translator_prepare(const nmt_translator *translator, const char *const *lines,
                                  int n_lines, nmt_prepared **prepared, nmt_error *err);
nmt_status nmt_translate_prepared(nmt_translator *translator, nmt_prepared *prepared,
                                  nmt_result *results, nmt_error *err);
void nmt_prepared_free(nmt_prepared *prepared); /* NULL: nothing */

void nmt_result_clear(nmt_result *result);

/* Counters summed over every nmt_translate_batch call of a translator made
 * with collect_stats (zeros otherwise). Rows are hypotheses; a row-step is
 * one live hypothesis scored at one step. */
typedef struct nmt_stats {
    int64_t sentences;       /* lines translated */
    int64_t steps;           /* decoder steps, summed over batches */
    double decode_seconds;   /* wall time inside nmt_translate_batch */
    double output_layer_ms;  /* CUDA: GPU time of the output layer (logits, softmax,
                                top-K, and the LSH work), events; -1 on the CPU */
    int64_t row_steps;       /* live row-steps (shrinking on; CUDA) */
    int64_t recall_hits;     /* row-steps whose full-softmax top-B words are all candidates */
    int64_t candidate_words; /* candidate words scored, summed over row-steps */
    int64_t graph_runs;      /* CUDA: decoder steps and encoder passes run as CUDA graphs
                                (captured or replayed; cuda_graphs) */
    int64_t eager_runs;      /* CUDA: the same, launched kernel by kernel */
    int64_t batch_size;      /* the batch size the translator runs with: options.batch_size,
                                or less where max_memory lowered it (always filled) */
    int64_t split_batches;   /* batches decoded again as two halves after the device ran
                                out of memory */
    int64_t device_memory_bytes; /* CUDA: the most device memory the backend held at once
                                    (weights, workspaces, search buffers; as max_memory
                                    counts them); 0 on the CPU */
    int64_t device_memory_used;  /* CUDA: the device's bytes in use, every process's
                                    (cudaMemGetInfo), when that peak was reached */
    int64_t sparse_matrices;     /* matrices multiplied in CSR form (options.sparse): on the
                                    CPU each one the file stores sparse; on CUDA those run
                                    as SpMM at some row count */
    int64_t precision;           /* the nmt_precision the GEMMs run in (NMT_PRECISION_AUTO
                                    resolved; on the CPU NMT_PRECISION_FP32, or INT8 when
                                    asked; always filled) */
} nmt_stats;

nmt_status nmt_translator_stats(const nmt_translator *translator, nmt_stats *stats,
                                nmt_error *err);

/* ---- the service: many callers, one sentence each ------------------------
 *
 * A thread-safe, asynchronous front over translators (engine/service.c):
 * any thread submits a line and gets a request handle back at once; worker
 * threads (one per device, or cpu_workers on the CPU) take queued requests
 * in arrival order, batch the ones with the same search options, translate
 * them and complete the handles (and call the callback, if any). A
 * sentence's translation does not depend on what it was batched with: the
 * service answers what nmt_translate_batch answers for the same options. */
typedef struct nmt_service nmt_service;
typedef struct nmt_request nmt_request;

typedef struct nmt_service_options {
    nmt_options translator;  /* each worker's translator; beam_size is the largest beam a
                                request may ask for, batch_size the most sentences a batch
                                holds; device AUTO/CPU/CUDA as for a translator */
    int n_devices;           /* CUDA: workers on these device ordinals (0: one worker on
                                translator.device_index; -1: one on every visible device) */
    const int *devices;
    int cpu_workers;         /* CPU: worker threads, each with its own translator, default 1 */
    int queue_capacity;      /* requests waiting at most; more are refused with
                                NMT_STATUS_BUSY, default 4096 */
    int max_delay_us;        /* a worker with fewer than batch_size waiting requests waits
                                this long after the oldest one arrived for more, default 100
                                (docs/perf/service.md, "Batching delay") */
    int max_batch_tokens;    /* a batch holds at most this many source tokens in all (a longer
                                sentence goes alone; tokens as the translator counts them, a
                                SentencePiece model's pieces); 0 (default): only batch_size
                                limits */
    int continuous;          /* CUDA: 1: continuous batching: each device keeps one beam
                                search running; requests join it at its next join point
                                while it has free rows and leave as soon as they are done;
                                max_delay_us and max_batch_tokens then do not apply.
                                0 (default, docs/perf/service.md "Continuous batching"):
                                batches (wait max_delay_us, translate, repeat). The CPU
                                always batches. */
    int join_every;          /* continuous batching: steps between the points where finished
                                requests leave and queued ones join (1..1000), default 4
                                (docs/perf/service.md, "Continuous batching") */
} nmt_service_options;

void nmt_service_options_init(nmt_service_options *options);

/* Per-request search options; every field at its init value means "the
 * service's" (nmt_request_options_init). */
typedef struct nmt_request_options {
    int beam_size;       /* 1..the service's beam_size; 0: the service's */
    int n_best;          /* 1..beam_size; 0: the service's */
    float alpha;         /* < 0: the service's */
    float max_len_a;     /* < 0: the service's */
    int max_len_b;       /* < 0: the service's */
    int shrink;          /* -1: the service's; 0: full softmax; 1: the service's shrinking
                            (refused when the service has none) */
    double deadline_ms;  /* > 0: complete with NMT_STATUS_DEADLINE unless translated within
                            this many milliseconds of submit; 0: none */
} nmt_request_options;

void nmt_request_options_init(nmt_request_options *options);

/* Called once per request from the thread that completes it (a worker, or
 * the caller of nmt_request_cancel / nmt_service_shutdown), with the
 * request's result (valid during the call, and until nmt_request_free for a
 * kept handle). It must not block for long: it holds up the worker. */
typedef void (*nmt_request_callback)(nmt_request *request, const nmt_result *result,
                                     void *user);

/* Creates the workers and their translators (and warms them up). */
nmt_status nmt_service_create(const nmt_model *model, const nmt_service_options *options,
                              nmt_service **service, nmt_error *err);

/* Queues one line (copied). *request (when request is not NULL) is the
 * handle, to be released with nmt_request_free; with request NULL the
 * service releases it after the callback. Returns at once:
 * NMT_STATUS_BUSY when the queue is full, NMT_STATUS_CLOSED after shutdown,
 * NMT_STATUS_ERROR_ARGUMENT for bad options (nothing queued in each case).
 * options may be NULL (the service's). */
nmt_status nmt_service_submit(nmt_service *service, const char *line,
                              const nmt_request_options *options,
                              nmt_request_callback callback, void *user,
                              nmt_request **request, nmt_error *err);

/* Waits until the request is complete or timeout_ms passed (< 0: no limit);
 * returns 1 when complete, 0 on timeout. */
int nmt_request_wait(nmt_request *request, double timeout_ms);
/* 1 when complete (never blocks). */
int nmt_request_done(const nmt_request *request);
/* The outcome once complete (NULL before): status OK with hypotheses, a
 * per-line error as nmt_translate_batch gives, or NMT_STATUS_CANCELLED /
 * NMT_STATUS_DEADLINE / a service error. */
const nmt_result *nmt_request_result(const nmt_request *request);
/* Cancels a request not yet complete: a queued one completes at once with
 * NMT_STATUS_CANCELLED; one being translated completes so when its batch
 * ends. No effect on a complete request. */
void nmt_request_cancel(nmt_request *request);
/* Releases the handle (cancelling the request if not complete). */
void nmt_request_free(nmt_request *request);

typedef struct nmt_service_stats {
    int64_t queued, running;           /* now */
    int64_t submitted, completed;      /* completed counts every outcome below */
    int64_t failed;                    /* completed with a line or service error */
    int64_t cancelled, expired;        /* NMT_STATUS_CANCELLED, NMT_STATUS_DEADLINE */
    int64_t rejected;                  /* submits refused with NMT_STATUS_BUSY */
    int64_t batches, batch_sentences;  /* batches translated and their sentences */
    int64_t device_memory_used;        /* CUDA: bytes in use on the workers' devices (every
                                          process's, cudaMemGetInfo); 0 on the CPU */
    int64_t device_memory_total;       /* CUDA: those devices' memory; 0 on the CPU */
} nmt_service_stats;

void nmt_service_stats_get(nmt_service *service, nmt_service_stats *stats);

/* Stops taking requests (later submits: NMT_STATUS_CLOSED), then with drain
 * translates everything queued, without it cancels what is queued
 * (NMT_STATUS_CANCELLED); batches already running finish either way. Returns
 * when the workers have stopped; *finished and *cancelled (may be NULL) count
 * the queued requests translated and cancelled by the shutdown (a repeated
 * call gives the first one's counts). Any thread may call it, several at
 * once; from a request's callback it only stops intake and returns at once
 * (the workers stop after their batches). */
void nmt_service_shutdown(nmt_service *service, int drain, int64_t *finished,
                          int64_t *cancelled);
/* Shuts down without draining if still running, then frees the service.
 * Request handles stay valid until their nmt_request_free (every request is
 * complete by then). Not from a request's callback, and not while another
 * thread still calls the service or cancels one of its requests. */
void nmt_service_free(nmt_service *service);

#ifdef __cplusplus
}
#endif

#endif /* NMT_H */
