/* pipeline.h: private to engine/pipeline*.c: the host pipeline's windows
 * and state (the API is nmt.h's nmt_pipeline).
 *
 * A window moves through the states below, one owner at a time: the reader
 * fills it, the pool's threads work on its parts (a stage is done when its
 * last part is), a translator decodes it, the consumer takes it. The ring's
 * windows are used in input order (window k in slot k % n_slots). One lock
 * guards every state change; the work itself runs outside it. */
#ifndef NMT_PIPELINE_H
#define NMT_PIPELINE_H

#include "nmt.h"

#include "translator.h"

#include <pthread.h>

enum pipe_state {
    PIPE_FREE = 0, /* the reader may fill it */
    PIPE_FILLING,  /* the reader fills it */
    PIPE_PREPARE,  /* parts: checked and tokenized (then ordered) */
    PIPE_READY,    /* waits for a translator */
    PIPE_DECODING, /* a translator has it */
    PIPE_ECHO,     /* parts, dry run: the tokens back through the detokenizer */
    PIPE_FORMAT,   /* parts: the output bytes */
    PIPE_DONE,     /* waits for the consumer */
    PIPE_TAKEN,    /* the consumer has it */
    PIPE_CLEAR     /* parts: its results freed, then PIPE_FREE */
};

/* Why a line is refused before tokenizing (MISSING: a target line past the
 * end of its file). */
enum { PIPE_LINE_OK = 0, PIPE_LINE_TOO_LONG, PIPE_LINE_NUL, PIPE_LINE_MISSING };

/* A window's lines of one file (the input, or the target lines beside it):
 * bytes holds each one NUL-terminated (a refused one: its first
 * max_line_bytes + 1 bytes at most). */
typedef struct pipe_lines {
    char *bytes;
    size_t n_bytes, cap_bytes;
    size_t *offsets;        /* [capacity]: line i is bytes + offsets[i] */
    size_t *lengths;        /* [capacity]: its length in the file */
    unsigned char *refused; /* [capacity]: PIPE_LINE_* */
    const char **texts;     /* [capacity]: what is tokenized ("" for a refused line) */
} pipe_lines;

typedef struct pipe_window {
    pipe_lines src;         /* the input's lines */
    pipe_lines tgt;         /* with options.targets: line i's target line; else no room */
    nmt_result *results;    /* [capacity] */
    int n, capacity;
    int64_t first_line;
    int64_t seq;            /* the window's number in the input, from 0 */
    /* The work. */
    int state;
    int part_lines, n_parts, next_part, parts_done;
    nmt_prepared *prepared; /* room for capacity lines, reused window after window */
    char **part_text; /* [max parts]: FORMAT's bytes, part by part */
    size_t *part_bytes;
    char *text;       /* all of them, once FORMAT is done */
    size_t text_bytes;
    int took_hold;    /* NMT_TEST_PIPELINE_HOLD: counted */
    nmt_pipeline_window view; /* what the consumer gets: status, error, translator */
} pipe_window;

typedef struct pipe_translator {
    nmt_pipeline *pipeline;
    nmt_translator *translator;
    int index;
    int windows;  /* taken so far (NMT_TEST_TRANSLATOR_FAIL counts them) */
    int failed;
    nmt_error error;
    pthread_t thread;
    int started;
} pipe_translator;

enum { PIPE_MAX_TRANSLATORS = 64 };

typedef struct pipe_reader pipe_reader;

struct nmt_pipeline {
    nmt_pipeline_options o;
    char target_name[64]; /* o.target_name's text (the options' pointer is the caller's) */
    nmt_translator *host; /* the model and options, no backend: preparing, echoing */
    size_t max_line_bytes;
    int window_lines, part_lines, max_parts, n_slots, n_threads;
    pipe_window *windows; /* [n_slots] */
    pthread_mutex_t lock;
    pthread_cond_t work; /* the pool and the translators wait for work */
    pthread_cond_t done; /* the consumer waits for the next window */
    pthread_cond_t room; /* the reader waits for a free window */
    int64_t submitted, given; /* windows handed on by the reader, to the consumer */
    int input_ended;          /* the reader handed on its last window */
    nmt_status input_status;  /* how the input ended: OK, or a read error */
    nmt_error input_error;
    int64_t lines_read;       /* the skipped ones included */
    int stopping;
    pthread_t *threads;       /* [n_threads]: the pool */
    int threads_started;
    pipe_translator translators[PIPE_MAX_TRANSLATORS];
    int n_translators, n_failed, last_failed; /* last_failed: the latest to fail */
    int decoding;             /* windows being decoded now */
    double decoding_since, decode_seconds;
    int64_t windows_decoded;
    /* The input: a reader on a file descriptor, or pushed lines. */
    pipe_reader *reader;
    int pushing;              /* lines come from nmt_pipeline_push */
    pipe_window *push_window; /* the window push is filling */
    /* Test hooks, read at create: NMT_TEST_TRANSLATOR_FAIL="W[,K]" fails
     * translator W's window number K (from 0; default 0) as a device error
     * would, and "*,K" the translator that takes the input's window K (once);
     * NMT_TEST_PIPELINE_HOLD=1 holds each translator's first window until
     * every one has taken one (at most 10 s), so that which translator
     * decodes what does not depend on which thread woke first;
     * NMT_TEST_PIPELINE_SLOTS=N leaves N windows in flight (1: each one read,
     * translated and given before the next is read). */
    int fail_translator, fail_window, fail_fired, hold, held;
};

enum { PIPE_FAIL_ANY = -2 }; /* fail_translator: whichever takes window fail_window */

/* pipeline.c: a pool thread (arg the pipeline): takes the oldest window's
 * next part, stage after stage, until the pipeline stops. */
void *nmt_pipe_pool_main(void *arg);

/* pipeline.c, under the lock: hands a filled window on (its texts set,
 * prepared created, parts laid out) or, with n 0, gives it back; then the
 * input's end. acquire waits for the ring's next window to be free (NULL
 * once stopping; with wait 0 also when it is not free soon). */
pipe_window *nmt_pipe_acquire(nmt_pipeline *p, int wait);
void nmt_pipe_submit(nmt_pipeline *p, pipe_window *w);
void nmt_pipe_end_input(nmt_pipeline *p, nmt_status status, const nmt_error *err);

/* pipeline_read.c: a line appended to a window (the first max_line_bytes +
 * 1 bytes kept) with, when the pipeline has targets, its target line
 * (target NULL: missing); 0, or -1 out of memory. */
int nmt_pipe_add_line(nmt_pipeline *p, pipe_window *w, const char *bytes, size_t length,
                      const char *target, size_t target_length);
/* The last window, cut short by the end of the input (under no lock): split
 * among the translators, in order, and handed on. Returns 0, or -1 when
 * stopping or out of memory (err says). */
int nmt_pipe_submit_last(nmt_pipeline *p, pipe_window *w, nmt_error *err);
/* The file reader: start (a thread, or with inline_calls none: step reads
 * the next window on the caller's thread; 1 while more may follow), and stop
 * (interrupts a wait on the input; joins). */
nmt_status nmt_pipe_reader_start(nmt_pipeline *p, int fd, int target_fd, int64_t skip,
                                 int64_t limit, nmt_error *err);
int nmt_pipe_reader_step(nmt_pipeline *p);
void nmt_pipe_reader_stop(nmt_pipeline *p);

/* pipeline_work.c: a stage's part k of window w, run by any thread outside
 * the lock; then the stage's own end once its last part is done (the
 * prepared lines ordered, the output bytes joined). A failure (out of
 * memory) marks the window failed (view.status). */
void nmt_pipe_run_part(nmt_pipeline *p, pipe_window *w, int state, int k);
void nmt_pipe_finish_stage(nmt_pipeline *p, pipe_window *w, int state);
/* A window's storage (capacity lines, with targets or not, prepared by
 * host) and its release; one file's lines' storage (capacity 0: none). */
int nmt_pipe_window_init(pipe_window *w, const nmt_translator *host, int capacity,
                         nmt_targets targets, int max_parts);
int nmt_pipe_lines_init(pipe_lines *lines, int capacity);
void nmt_pipe_lines_destroy(pipe_lines *lines);
void nmt_pipe_window_destroy(pipe_window *w);
/* The window failed as a whole: every line gets the error. */
void nmt_pipe_fail_window(pipe_window *w, nmt_status status, const nmt_error *err,
                          int translator);

#endif /* NMT_PIPELINE_H */
