/* reader.c: translate's reader thread (reader.h). Lines are cut from a 64 KiB
 * buffer refilled by read(2) after a poll(2) on the input (and on the target
 * file beside it, a line for a line) and on a wake-up pipe: the pipe lets translate_reader_finish interrupt a wait on a slow
 * input. A line keeps at most --max-line-bytes (+1) bytes in memory: the
 * rest of a longer one is skipped, so one huge line without a newline costs
 * no more memory than a refused short one. */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kBufferBytes = 1 << 16, kMaxDefaultWindow = 65536 };

/* read_line's results besides 1 (a line) and 0 (the end). */
enum { LINE_NO_MEMORY = -1, LINE_ERROR = -2, LINE_STOPPED = -3 };

/* A file read a line at a time: the input, or the target file beside it. */
typedef struct line_source {
    int fd;
    size_t pos, len;
    int eof;
    char buffer[kBufferBytes];
} line_source;

struct translate_reader {
    chunk_pool *pool;
    int wake[2]; /* a byte in wake[1]: stop */
    long skip, limit;
    size_t max_bytes;
    int window;
    long lines_read;
    int outcome, error;
    pthread_t thread;
    int threaded;       /* reader_main runs on `thread`; else translate_reader_next */
    int skipped, ended; /* next_window's progress */
    line_source input;
    line_source *target; /* --score-target / --target-prefix: line i beside input line i */
};

int translate_window_lines(const translate_args *args, int interactive)
{
    if (args->maxi_batch > 0)
        return args->maxi_batch;
    if (interactive)
        return 1;
    const long lines = args->batch_tokens ? (long)args->engine.max_batch_tokens
                                          : 8L * args->engine.batch_size;
    return lines < kMaxDefaultWindow ? (int)lines : kMaxDefaultWindow;
}

/* Refills src's buffer: 1 data, 0 the end, LINE_ERROR (errno in r->error) or
 * LINE_STOPPED. */
static int fill(translate_reader *r, line_source *src)
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
        const ssize_t got = read(src->fd, src->buffer, sizeof src->buffer);
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

/* Keeps `n` more bytes of the line, growing its buffer up to keep + 1. */
static int keep_bytes(input_line *line, size_t kept, const char *bytes, size_t n, size_t keep)
{
    if (kept + n + 1 > line->capacity) {
        size_t grown = line->capacity ? 2 * line->capacity : 256;
        if (grown < kept + n + 1)
            grown = kept + n + 1;
        if (grown > keep + 1)
            grown = keep + 1;
        char *text = realloc(line->text, grown);
        if (!text)
            return -1;
        line->text = text;
        line->capacity = grown;
    }
    memcpy(line->text + kept, bytes, n);
    return 0;
}

/* Reads one line, keeping at most max_bytes + 1 bytes (room for a "\r" before
 * the "\n") and skipping the rest up to the newline. Returns 1 for a line
 * (also one without a newline at the end), 0 at the end of the input, or
 * LINE_NO_MEMORY, LINE_ERROR, LINE_STOPPED. */
static int read_line(translate_reader *r, line_source *src, input_line *line, size_t max_bytes)
{
    const size_t keep = max_bytes + 1;
    size_t kept = 0, total = 0;
    int seen = 0; /* a byte or the newline */
    char last = 0;
    for (;;) {
        if (src->pos == src->len) {
            const int filled = fill(r, src);
            if (filled < 0)
                return filled;
            if (filled == 0) {
                if (!seen)
                    return 0;
                break;
            }
        }
        const char *start = src->buffer + src->pos;
        const char *newline = memchr(start, '\n', src->len - src->pos);
        const size_t n = newline ? (size_t)(newline - start) : src->len - src->pos;
        if (n > 0) {
            const size_t take = kept < keep ? (n < keep - kept ? n : keep - kept) : 0;
            if (take && keep_bytes(line, kept, start, take, keep) != 0)
                return LINE_NO_MEMORY;
            kept += take;
            total += n;
            last = start[n - 1];
        }
        seen = 1;
        src->pos += n + (newline != NULL);
        if (newline)
            break;
    }
    if (!line->text) { /* an empty line: still a string */
        line->text = malloc(1);
        if (!line->text)
            return LINE_NO_MEMORY;
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
    line->missing = 0;
    return 1;
}

/* Input line n's target line, read into slot->target_lines[n]; a target
 * file that ended already gives a line marked missing. */
static int read_target(translate_reader *r, chunk_slot *slot, int n)
{
    input_line *line = &slot->target_lines[n];
    int result = read_line(r, r->target, line, r->max_bytes);
    if (result == 0) {
        result = keep_bytes(line, 0, "", 0, 0) == 0 ? 1 : LINE_NO_MEMORY;
        line->text[0] = 0;
        line->bytes = 0;
        line->too_long = line->has_nul = 0;
        line->missing = 1;
    }
    return result;
}

/* A read_line result that ends the reading as the reader's outcome. */
static void finish_with(translate_reader *r, int result)
{
    r->outcome = result == LINE_NO_MEMORY ? READER_NO_MEMORY
                 : result == LINE_ERROR   ? READER_ERROR
                                          : READER_END; /* the end, or stopped */
}

/* --skip-lines: reads past them (a rerun resumes where a failed one
 * stopped); line numbers in messages stay those of the whole input. Returns
 * 1, or read_line's result that ended the input. */
static int skip_lines(translate_reader *r)
{
    int result = 1;
    input_line scratch = {0};
    while (r->lines_read < r->skip &&
           (result = read_line(r, &r->input, &scratch, r->max_bytes)) == 1) {
        if (r->target && (result = read_line(r, r->target, &scratch, r->max_bytes)) < 0)
            break; /* a target file that ended already: its lines are missing */
        result = 1;
        r->lines_read++;
    }
    free(scratch.text);
    return result;
}

/* What the translator gets for a line: a refused one is empty. */
static const char *line_text(const input_line *line)
{
    return line->has_nul || line->too_long || line->missing ? "" : line->text;
}

/* Submits the n lines read into `slot` as `parts` windows of nearly equal
 * size, in order: the first part stays in `slot`, each next one moves into
 * the ring's next free slot (lines are swapped, so every buffer keeps one
 * owner). Parts never grow, so a next slot that is `slot` again (a small
 * ring) takes lines from past the end of its own. */
static void submit_parts(translate_reader *r, chunk_slot *slot, int n, int parts)
{
    int offset = 0;
    for (int k = 0; k < parts; k++) {
        const int count = n / parts + (k < n % parts);
        chunk_slot *to = k == 0 ? slot : chunk_pool_acquire(r->pool);
        if (!to)
            return; /* the writer gave up */
        for (int i = 0; offset > 0 && i < count; i++) {
            const input_line moved = slot->lines[offset + i];
            slot->lines[offset + i] = to->lines[i];
            to->lines[i] = moved;
            to->texts[i] = line_text(&to->lines[i]);
            if (r->target) {
                const input_line target = slot->target_lines[offset + i];
                slot->target_lines[offset + i] = to->target_lines[i];
                to->target_lines[i] = target;
                to->targets[i] = line_text(&to->target_lines[i]);
            }
        }
        to->n = count;
        to->first_line = r->lines_read + offset;
        offset += count;
        chunk_pool_submit(r->pool, to);
    }
}

/* Reads the next window into the pool's next free slot. Returns 1 while
 * more may follow, else 0 having ended the pool (and set the outcome). */
static int read_window(translate_reader *r)
{
    int result = 1;
    long want = r->window;
    if (r->limit >= 0 && r->skip + r->limit - r->lines_read < want)
        want = r->skip + r->limit - r->lines_read;
    chunk_slot *slot = want > 0 ? chunk_pool_acquire(r->pool) : NULL;
    if (slot) { /* else the limit is reached, or the writer gave up (closed) */
        int n = 0;
        while (n < want && (result = read_line(r, &r->input, &slot->lines[n], r->max_bytes)) == 1) {
            slot->texts[n] = line_text(&slot->lines[n]);
            if (r->target) {
                if ((result = read_target(r, slot, n)) != 1)
                    break;
                slot->targets[n] = line_text(&slot->target_lines[n]);
            }
            n++;
        }
        if (n > 0) {
            /* A window cut short by the end of the input is the last: it is
             * shared among the translators, so a short input (200 lines
             * against the default 8 x 32) keeps every one busy. */
            const int translators = chunk_pool_translators(r->pool);
            submit_parts(r, slot, n, n < r->window ? (n < translators ? n : translators) : 1);
            r->lines_read += n;
        }
        if (result == 1)
            return 1;
    }
    finish_with(r, slot ? result : 0);
    chunk_pool_end(r->pool);
    return 0;
}

/* The reader's next move, on its thread or the caller's: the --skip-lines
 * first, then a window. Returns 1 while more may follow, else 0 having
 * ended the pool (and set the outcome). */
static int next_window(translate_reader *r)
{
    if (r->ended)
        return 0;
    if (!r->skipped) {
        r->skipped = 1;
        const int skipped = skip_lines(r);
        if (skipped != 1) {
            r->ended = 1;
            finish_with(r, skipped);
            chunk_pool_end(r->pool);
            return 0;
        }
    }
    r->ended = !read_window(r);
    return !r->ended;
}

static void *reader_main(void *arg)
{
    while (next_window((translate_reader *)arg)) {
    }
    return NULL;
}

int translate_reader_next(translate_reader *r)
{
    return r->threaded ? 0 : next_window(r);
}

int translate_reader_start(chunk_pool *pool, int fd, int target_fd, const translate_args *args,
                           int window, int threaded, translate_reader **out)
{
    *out = NULL;
    translate_reader *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    if (target_fd >= 0 && !(r->target = calloc(1, sizeof *r->target))) {
        free(r);
        return -1;
    }
    if (pipe(r->wake) != 0) {
        free(r->target);
        free(r);
        return -1;
    }
    fcntl(r->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(r->wake[1], F_SETFD, FD_CLOEXEC);
    r->pool = pool;
    r->input.fd = fd;
    if (r->target)
        r->target->fd = target_fd;
    r->skip = args->skip_lines;
    r->limit = args->limit_lines;
    r->max_bytes = (size_t)args->engine.max_line_bytes;
    r->window = window;
    r->threaded = threaded;
    if (threaded && pthread_create(&r->thread, NULL, reader_main, r) != 0) {
        close(r->wake[0]);
        close(r->wake[1]);
        free(r->target);
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

int translate_reader_finish(translate_reader *r, int stop, long *lines_read, int *error)
{
    if (!r)
        return READER_END;
    if (stop) {
        chunk_pool_close(r->pool);
        const char byte = 1;
        while (write(r->wake[1], &byte, 1) < 0 && errno == EINTR) {
        }
    }
    if (r->threaded)
        pthread_join(r->thread, NULL);
    else if (!r->ended)
        chunk_pool_end(r->pool); /* stopped before the end */
    const int outcome = r->outcome;
    if (lines_read)
        *lines_read = r->lines_read;
    if (error)
        *error = r->error;
    close(r->wake[0]);
    close(r->wake[1]);
    free(r->target);
    free(r);
    return outcome;
}
