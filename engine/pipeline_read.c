/* pipeline_read.c: the host pipeline's input (pipeline.h): a file
 * descriptor read by a thread of its own, or lines the caller pushes.
 *
 * The reader reads 1 MiB at a time after a poll(2) on the input (and on the
 * target file beside it, a line for a line) and on a wake-up pipe (so that
 * nmt_pipeline_free interrupts a wait on a slow input), and copies each
 * line into its window: no system call a line. A
 * line keeps at most max_line_bytes + 1 bytes in memory; the rest of a
 * longer one is skipped, so one huge line without a newline costs no more
 * memory than a refused short one. */
#define _POSIX_C_SOURCE 200809L /* poll, pipe, read */

#include "pipeline.h"

#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { READ_BYTES = 1 << 20 };

/* read_line's results besides 1 (a line) and 0 (the end). */
enum { LINE_NO_MEMORY = -1, LINE_ERROR = -2, LINE_STOPPED = -3 };

/* A file read in large reads, a line at a time: the input, or its target
 * lines. */
typedef struct line_source {
    int fd;
    size_t pos, len;
    int eof;
    char *line;   /* a line that spans two reads, its kept bytes */
    char *buffer; /* [READ_BYTES] */
} line_source;

struct pipe_reader {
    int wake[2]; /* a byte in wake[1]: stop */
    int64_t skip, limit;
    int64_t lines_seen; /* skipped ones included */
    int64_t skipped_unsaid; /* skipped, not yet in p->lines_read */
    int error;          /* errno of a read error */
    const char *error_file; /* "" or "the target file: ", for its message */
    int ended;
    pthread_t thread;
    int threaded;
    line_source input;
    line_source target; /* fd -1: none */
};

/* Line i of `lines`: the first max_line_bytes + 1 bytes of `length`; bytes
 * NULL: a missing line. 0, or -1 out of memory. */
static int add_to(const nmt_pipeline *p, pipe_lines *l, int i, const char *bytes,
                  size_t length)
{
    const size_t kept = !bytes                      ? 0
                        : length < p->max_line_bytes + 1 ? length
                                                         : p->max_line_bytes + 1;
    if (l->n_bytes + kept + 1 > l->cap_bytes) {
        size_t grown = 2 * l->cap_bytes;
        while (grown < l->n_bytes + kept + 1)
            grown *= 2;
        char *more = realloc(l->bytes, grown);
        if (!more)
            return -1;
        l->bytes = more;
        l->cap_bytes = grown;
    }
    if (kept)
        memcpy(l->bytes + l->n_bytes, bytes, kept);
    l->bytes[l->n_bytes + kept] = '\0';
    l->offsets[i] = l->n_bytes;
    l->lengths[i] = bytes ? length : 0;
    l->refused[i] = !bytes                          ? PIPE_LINE_MISSING
                    : length > p->max_line_bytes    ? PIPE_LINE_TOO_LONG
                    : memchr(bytes, 0, kept)        ? PIPE_LINE_NUL
                                                    : PIPE_LINE_OK;
    l->n_bytes += kept + 1;
    return 0;
}

int nmt_pipe_add_line(nmt_pipeline *p, pipe_window *w, const char *bytes, size_t length,
                      const char *target, size_t target_length)
{
    if (add_to(p, &w->src, w->n, bytes, length) != 0 ||
        (w->tgt.offsets && add_to(p, &w->tgt, w->n, target, target_length) != 0))
        return -1;
    w->n++;
    return 0;
}

/* Line i of l as add_to was given it. */
static const char *line_bytes(const pipe_lines *l, int i)
{
    return l->refused[i] == PIPE_LINE_MISSING ? NULL : l->bytes + l->offsets[i];
}

int nmt_pipe_submit_last(nmt_pipeline *p, pipe_window *w, nmt_error *err)
{
    const int parts = w->n < p->o.translators ? w->n : p->o.translators;
    if (parts <= 1 || p->n_threads == 0) {
        nmt_pipe_submit(p, w);
        return 0;
    }
    /* The lines past the first part wait in a copy: the window they came
     * from may be given and reused before the next parts have room. */
    const int first = w->n / parts + (w->n % parts > 0);
    const int rest = w->n - first;
    const int targets = w->tgt.offsets != NULL;
    pipe_window staged = {0};
    int out_of_memory = nmt_pipe_lines_init(&staged.src, rest) != 0 ||
                        nmt_pipe_lines_init(&staged.tgt, targets ? rest : 0) != 0;
    for (int i = 0; i < rest && !out_of_memory; i++)
        out_of_memory = nmt_pipe_add_line(p, &staged, line_bytes(&w->src, first + i),
                                          w->src.lengths[first + i],
                                          targets ? line_bytes(&w->tgt, first + i) : NULL,
                                          targets ? w->tgt.lengths[first + i] : 0) != 0;
    if (out_of_memory) {
        nmt_pipe_lines_destroy(&staged.src);
        nmt_pipe_lines_destroy(&staged.tgt);
        nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "out of memory splitting the last window");
        return -1;
    }
    w->n = first;
    w->src.n_bytes = w->src.offsets[first];
    if (targets)
        w->tgt.n_bytes = w->tgt.offsets[first];
    const int n_all = first + rest;
    nmt_pipe_submit(p, w);
    int done = 0;
    for (int k = 1; k < parts && !out_of_memory; k++) {
        const int count = n_all / parts + (k < n_all % parts);
        pipe_window *next = nmt_pipe_acquire(p, 1);
        if (!next)
            break; /* stopping */
        for (int i = done; i < done + count && !out_of_memory; i++)
            out_of_memory = nmt_pipe_add_line(p, next, line_bytes(&staged.src, i),
                                              staged.src.lengths[i],
                                              targets ? line_bytes(&staged.tgt, i) : NULL,
                                              targets ? staged.tgt.lengths[i] : 0) != 0;
        done += count;
        nmt_pipe_submit(p, next);
    }
    nmt_pipe_lines_destroy(&staged.src);
    nmt_pipe_lines_destroy(&staged.tgt);
    if (out_of_memory)
        nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "out of memory splitting the last window");
    return out_of_memory ? -1 : 0;
}

/* ---- reading a file descriptor ---------------------------------------------- */

/* Refills src's buffer: 1 data, 0 the end, LINE_ERROR (errno in r->error)
 * or LINE_STOPPED. */
static int fill(pipe_reader *r, line_source *src)
{
    if (src->eof)
        return 0;
    for (;;) {
        struct pollfd fds[2] = {{src->fd, POLLIN, 0}, {r->wake[0], POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            r->error = errno;
            return LINE_ERROR;
        }
        if (fds[1].revents)
            return LINE_STOPPED;
        const ssize_t got = read(src->fd, src->buffer, READ_BYTES);
        if (got > 0) {
            src->pos = 0;
            src->len = (size_t)got;
            return 1;
        }
        if (got == 0) {
            src->eof = 1; /* a terminal's ^D ends the input once */
            return 0;
        }
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            r->error = errno;
            return LINE_ERROR;
        }
    }
}

/* src's next line: *bytes (valid until the next call) holds its first
 * min(*length, keep) bytes; *length is its length without "\n" or "\r\n".
 * 1 for a line (a last one without "\n" too), 0 at the end, or LINE_*. */
static int read_line(pipe_reader *r, line_source *src, size_t keep, const char **bytes,
                     size_t *length)
{
    size_t kept = 0, total = 0;
    int seen = 0; /* a byte or the newline */
    char last = 0;
    for (;;) {
        if (src->pos == src->len) {
            const int filled = fill(r, src);
            if (filled < 0) {
                r->error_file = src == &r->target ? "the target file: " : "";
                return filled;
            }
            if (filled == 0) {
                if (!seen)
                    return 0;
                break;
            }
        }
        const char *start = src->buffer + src->pos;
        const char *newline = memchr(start, '\n', src->len - src->pos);
        const size_t n = newline ? (size_t)(newline - start) : src->len - src->pos;
        if (newline && !seen) { /* the whole line in the buffer: no copy here */
            src->pos += n + 1;
            *bytes = start;
            *length = n > 0 && start[n - 1] == '\r' ? n - 1 : n;
            return 1;
        }
        const size_t take = kept < keep ? (n < keep - kept ? n : keep - kept) : 0;
        memcpy(src->line + kept, start, take);
        kept += take;
        total += n;
        if (n > 0)
            last = start[n - 1];
        seen = 1;
        src->pos += n + (newline != NULL);
        if (newline)
            break;
    }
    *bytes = src->line;
    *length = last == '\r' ? total - 1 : total;
    return 1;
}

/* Tells the pipeline about lines skipped since the last time. */
static void say_skipped(nmt_pipeline *p, pipe_reader *r)
{
    if (r->skipped_unsaid == 0)
        return;
    pthread_mutex_lock(&p->lock);
    p->lines_read += r->skipped_unsaid;
    pthread_mutex_unlock(&p->lock);
    r->skipped_unsaid = 0;
}

/* The end of the input, after the window being filled (if any). */
static int finish_reading(nmt_pipeline *p, pipe_reader *r, pipe_window *w, int result)
{
    nmt_error err = {0};
    nmt_status status = NMT_STATUS_OK;
    say_skipped(p, r);
    if (result == LINE_NO_MEMORY)
        status = nmt_error_set(&err, NMT_STATUS_ERROR_MEMORY, "out of memory reading line %lld",
                               (long long)r->lines_seen + 1);
    else if (result == LINE_ERROR)
        status = nmt_error_set(&err, NMT_STATUS_ERROR_IO, "after line %lld: %s%s",
                               (long long)r->lines_seen, r->error_file, strerror(r->error));
    if (w && w->n > 0) {
        nmt_error split_err = {0};
        if (nmt_pipe_submit_last(p, w, &split_err) != 0 && status == NMT_STATUS_OK &&
            split_err.status != NMT_STATUS_OK) {
            status = split_err.status;
            err = split_err;
        }
    } else if (w) {
        pthread_mutex_lock(&p->lock);
        w->state = PIPE_FREE;
        pthread_mutex_unlock(&p->lock);
    }
    r->ended = 1;
    nmt_pipe_end_input(p, status, &err);
    return 0;
}

int nmt_pipe_reader_step(nmt_pipeline *p)
{
    pipe_reader *r = p->reader;
    if (!r || r->ended)
        return 0;
    pipe_window *w = NULL;
    const size_t keep = p->max_line_bytes + 1;
    for (;;) {
        if (r->limit >= 0 && r->lines_seen >= r->skip + r->limit)
            return finish_reading(p, r, w, 0);
        const char *bytes, *target = NULL;
        size_t length, target_length = 0;
        int result = read_line(r, &r->input, keep, &bytes, &length);
        if (result == 1 && r->target.fd >= 0 &&
            (result = read_line(r, &r->target, keep, &target, &target_length)) == 0)
            result = 1; /* past the target file's end: a missing target line */
        if (result != 1)
            return finish_reading(p, r, w, result == LINE_STOPPED ? 0 : result);
        if (r->lines_seen++ < r->skip) {
            r->skipped_unsaid++;
            continue;
        }
        if (!w) {
            say_skipped(p, r);
            if (!(w = nmt_pipe_acquire(p, 1)))
                return finish_reading(p, r, NULL, 0); /* stopping */
        }
        if (nmt_pipe_add_line(p, w, bytes, length, target, target_length) != 0) {
            r->lines_seen--;
            return finish_reading(p, r, w, LINE_NO_MEMORY);
        }
        if (w->n == p->window_lines) {
            nmt_pipe_submit(p, w);
            return 1;
        }
    }
}

static void *reader_main(void *arg)
{
    while (nmt_pipe_reader_step(arg)) {
    }
    return NULL;
}

static void reader_free(pipe_reader *r)
{
    if (!r)
        return;
    if (r->wake[0] >= 0)
        close(r->wake[0]);
    if (r->wake[1] >= 0)
        close(r->wake[1]);
    free(r->input.line);
    free(r->input.buffer);
    free(r->target.line);
    free(r->target.buffer);
    free(r);
}

/* A source on fd (-1: none) with its buffers; 0, or -1 out of memory. */
static int source_init(line_source *src, int fd, size_t max_line_bytes)
{
    src->fd = fd;
    if (fd < 0)
        return 0;
    src->buffer = malloc(READ_BYTES);
    src->line = malloc(max_line_bytes + 2);
    return src->buffer && src->line ? 0 : -1;
}

nmt_status nmt_pipe_reader_start(nmt_pipeline *p, int fd, int target_fd, int64_t skip,
                                 int64_t limit, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK;
    pipe_reader *r = NULL;
    NMT_ALLOC(r, 1);
    r->wake[0] = r->wake[1] = -1;
    r->error_file = "";
    if (source_init(&r->input, fd, p->max_line_bytes) != 0 ||
        source_init(&r->target, target_fd, p->max_line_bytes) != 0) {
        status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "pipeline_read_fd: out of memory");
        goto cleanup;
    }
    if (pipe(r->wake) != 0) {
        r->wake[0] = r->wake[1] = -1;
        status = nmt_error_set(err, NMT_STATUS_ERROR_IO, "pipeline_read_fd: pipe: %s",
                               strerror(errno));
        goto cleanup;
    }
    fcntl(r->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(r->wake[1], F_SETFD, FD_CLOEXEC);
    r->skip = skip;
    r->limit = limit;
    p->reader = r;
    if (p->n_threads > 0) {
        if (pthread_create(&r->thread, NULL, reader_main, p) != 0) {
            p->reader = NULL;
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                                   "pipeline_read_fd: cannot start the reader thread");
            goto cleanup;
        }
        r->threaded = 1;
    }
    return NMT_STATUS_OK;
cleanup:
    reader_free(r);
    return status;
}

void nmt_pipe_reader_stop(nmt_pipeline *p)
{
    pipe_reader *r = p->reader;
    if (!r)
        return;
    const char byte = 1;
    while (write(r->wake[1], &byte, 1) < 0 && errno == EINTR) {
    }
    if (r->threaded)
        pthread_join(r->thread, NULL);
    p->reader = NULL;
    reader_free(r);
}

nmt_status nmt_pipeline_read_fd(nmt_pipeline *p, int fd, int target_fd, int64_t skip_lines,
                                int64_t limit_lines, nmt_error *err)
{
    if (!p || fd < 0 || target_fd < -1 || skip_lines < 0 || limit_lines < -1)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_read_fd: bad arguments");
    if ((target_fd >= 0) != (p->o.targets != NMT_TARGETS_NONE))
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_read_fd: %s",
                             target_fd >= 0 ? "a target file, but the pipeline has no targets"
                                            : "the pipeline's targets need their file "
                                              "(target_fd)");
    if (p->reader || p->pushing)
        return nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT,
                             "pipeline_read_fd: the pipeline has its input already");
    return nmt_pipe_reader_start(p, fd, target_fd, skip_lines, limit_lines, err);
}

/* ---- pushed lines ------------------------------------------------------------ */

int nmt_pipeline_push(nmt_pipeline *p, const char *const *lines, int n_lines, int wait,
                      nmt_error *err)
{
    if (!p || (!lines && n_lines > 0) || n_lines < 0) {
        nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_push: bad arguments");
        return -1;
    }
    if (p->reader || p->input_ended || p->o.targets != NMT_TARGETS_NONE) {
        nmt_error_set(err, NMT_STATUS_ERROR_ARGUMENT, "pipeline_push: the pipeline %s",
                      p->reader         ? "reads a file"
                      : p->input_ended  ? "has ended"
                                        : "has targets (they come from a file: read_fd)");
        return -1;
    }
    p->pushing = 1;
    int taken = 0;
    while (taken < n_lines) {
        if (!p->push_window && !(p->push_window = nmt_pipe_acquire(p, wait)))
            break;
        const char *line = lines[taken] ? lines[taken] : "";
        if (nmt_pipe_add_line(p, p->push_window, line, strlen(line), NULL, 0) != 0) {
            nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "pipeline_push: out of memory");
            return taken > 0 ? taken : -1;
        }
        taken++;
        if (p->push_window->n == p->window_lines) {
            nmt_pipe_submit(p, p->push_window);
            p->push_window = NULL;
        }
    }
    return taken;
}

void nmt_pipeline_end(nmt_pipeline *p)
{
    if (!p || p->reader || p->input_ended)
        return;
    p->pushing = 1;
    pipe_window *w = p->push_window;
    p->push_window = NULL;
    if (w && w->n > 0) {
        nmt_pipe_submit(p, w); /* not split: room for more windows needs the caller */
    } else if (w) {
        pthread_mutex_lock(&p->lock);
        w->state = PIPE_FREE;
        pthread_mutex_unlock(&p->lock);
    }
    nmt_pipe_end_input(p, NMT_STATUS_OK, NULL);
}
