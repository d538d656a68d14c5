/* option_values.c: the value parsers behind the option rows (options.h):
 * strict numbers, sizes, booleans, device lists, the LSH parameters and the
 * suppressed sequences, each refusing what it cannot read exactly. */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int app_parse_int(const char *text, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

int app_parse_size(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return 0; /* no sign, no blank */
    const unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (errno || end == text || (shift && end[1]) || (!shift && *end) ||
        v > (unsigned long long)INT64_MAX >> shift)
        return 0;
    *out = (int64_t)(v << shift);
    return 1;
}

int app_parse_float(const char *text, double lo, double hi, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi)
        return 0;
    *out = (float)v;
    return 1;
}

int app_parse_bool(const char *text, int *out)
{
    if (!strcasecmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") ||
        !strcasecmp(text, "on"))
        *out = 1;
    else if (!strcasecmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") ||
             !strcasecmp(text, "off"))
        *out = 0;
    else
        return 0;
    return 1;
}

/* "0,1,3" (device ordinals, each once) or "all" (n_devices -1). */
int app_parse_devices(const char *text, translate_args *a)
{
    char part[16];
    a->n_devices = 0;
    if (!strcmp(text, "all")) {
        a->n_devices = -1;
        return 1;
    }
    for (const char *p = text;;) {
        const size_t len = strcspn(p, ",");
        const int max = (int)(sizeof a->devices / sizeof a->devices[0]);
        if (len == 0 || len >= sizeof part || a->n_devices == max)
            return 0;
        memcpy(part, p, len);
        part[len] = '\0';
        int d;
        if (!app_parse_int(part, 0, 1024, &d))
            return 0;
        a->devices[a->n_devices++] = d;
        p += len;
        if (!*p)
            return 1;
        p++;
    }
}

/* "K,u,W,T,t": five integers, each in range (the engine checks the rest). */
int app_parse_lsh(const char *text, nmt_shrink_options *out)
{
    int v[5], n = 0;
    const char *p = text;
    char part[32];
    while (n < 5) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof part)
            return 0;
        memcpy(part, p, len);
        part[len] = 0;
        if (!app_parse_int(part, 1, 1 << 24, &v[n++]))
            return 0;
        p += len;
        if (!*p)
            break;
        p++;
    }
    if (n != 5 || *p)
        return 0;
    out->mode = NMT_SHRINK_LSH;
    out->k = v[0];
    out->u = v[1];
    out->w = v[2];
    out->top = v[3];
    out->threshold = v[4];
    return 1;
}

int app_parse_suppress(const char *text, char *out, size_t size)
{
    FILE *file = fopen(text, "rb");
    if (file) { /* a file of sequences, read whole */
        const size_t n = fread(out, 1, size, file);
        const int whole = n < size && !ferror(file);
        fclose(file);
        if (!whole)
            return 0;
        out[n] = 0;
        return strlen(out) == n; /* no NUL byte inside */
    }
    const size_t len = strlen(text);
    if (len == 0 || len >= size)
        return 0;
    for (size_t i = 0; i <= len; i++) /* a list: one sequence a line */
        out[i] = text[i] == ',' ? '\n' : text[i];
    return 1;
}
