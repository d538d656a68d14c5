/* reader.h: translate's reader thread (reader.c): reads the input in
 * windows of lines into the pool's free slots (pool.h), so reading overlaps
 * translating and writing. It reads the file descriptor itself, with poll,
 * so that a writer that gives up (a failed write or translation) can stop
 * it even while it waits on a pipe or a terminal. */
#ifndef NMT_TRANSLATE_READER_H
#define NMT_TRANSLATE_READER_H

#include "options.h"
#include "pool.h"

typedef struct translate_reader translate_reader;

enum {
    READER_END = 0,   /* the end of the input (or of --limit) */
    READER_NO_MEMORY, /* out of memory at line `lines_read` + 1 */
    READER_ERROR      /* a read error (errno in `error`) */
};

/* The lines of one window: --maxi-batch, else one when the input is a
 * terminal (it answers as you type), else 8 batches of --batch-size
 * sentences, or with --batch-type tokens one line a token of the budget
 * (8 or more batches at 8 tokens a line or more), at most 65536. */
int translate_window_lines(const translate_args *args, int interactive);

/* Starts the thread (unless threaded is 0): skips args->skip_lines lines, then reads at most
 * args->limit_lines (-1: all) in windows of `window` lines into the pool,
 * and ends the pool. target_fd (-1: none): the --score-target or
 * --target-prefix file, read a line for each input line (and skipped
 * alike) into the slots' targets; past its end a target line is marked
 * missing. Returns 0, or -1 (out of memory or threads). */
int translate_reader_start(chunk_pool *pool, int fd, int target_fd, const translate_args *args,
                           int window, int threaded, translate_reader **reader);
/* Without the thread (threaded 0): reads the next window into the pool on
 * the calling thread (the --skip-lines first). Returns 1 after a window
 * while more input may follow, 0 once the pool is ended. */
int translate_reader_next(translate_reader *reader);
/* Waits for the thread to end (after the pool's last window, or at once
 * with stop: the pool is closed and a wait on the input interrupted) and
 * returns its outcome, the lines it read (skipped ones included) and the
 * errno of a read error; frees the reader. */
int translate_reader_finish(translate_reader *reader, int stop, long *lines_read, int *error);

#endif /* NMT_TRANSLATE_READER_H */
