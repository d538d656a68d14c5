/* bench_lines.h: the benches' line reader (bench_passes, bench_service). */
#ifndef NMT_BENCH_LINES_H
#define NMT_BENCH_LINES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Reads up to max lines (max <= 0: all) of path, without their newlines,
 * into *out (malloc'ed strings). Returns the count, or -1 when the file
 * cannot be opened or read. */
static inline int bench_read_lines(const char *path, int max, char ***out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char **lines = NULL, *text = NULL;
    size_t cap = 0;
    int n = 0, room = 0;
    ssize_t len;
    while ((max <= 0 || n < max) && (len = getline(&text, &cap, f)) >= 0) {
        if (len > 0 && text[len - 1] == '\n')
            text[--len] = 0;
        if (n == room) {
            room = room ? 2 * room : 256;
            char **grown = (char **)realloc(lines, sizeof *lines * (size_t)room);
            if (!grown)
                break;
            lines = grown;
        }
        lines[n] = strdup(text);
        if (!lines[n])
            break;
        n++;
    }
    const int bad = ferror(f);
    free(text);
    fclose(f);
    *out = lines;
    return bad ? -1 : n;
}

#endif /* NMT_BENCH_LINES_H */
