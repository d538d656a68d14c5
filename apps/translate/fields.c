/* fields.c: the " ||| " fields of an output line (fields.h). The attention
 * field is one JSON document on the line, so that a markup-transfer tool
 * reads the translation and its weights from the same line whatever the
 * pipeline did to the file (shards, --skip-lines resumes), and its
 * separator cannot occur inside it: tokens hold no spaces, so the document
 * has no " ||| ", and the last " ||| " of a line (the third last of a Marian
 * row, whose two score fields follow it) starts it. */
#include "fields.h"

#include <stdio.h>

/* " ||| s-t s-t ..." (--alignment). Empty, the field is " |||", or in a
 * Marian row " ||| " as marian-decoder prints it (a reader splits on " ||| "). */
static int print_alignment(FILE *out, const nmt_hypothesis *h, int marian)
{
    if (fputs(marian ? " ||| " : " |||", out) == EOF)
        return -1;
    for (int t = 0; h && t < h->n_tokens; t++)
        if (fprintf(out, "%s%d-%d", marian && t == 0 ? "" : " ",
                    h->alignment ? h->alignment[t] : -1, t) < 0)
            return -1;
    return 0;
}

/* " ||| lp_0 lp_1 ... lp_eos" (--token-scores): n_tokens + 1 numbers;
 * Marian's rows label them " ||| WordScores= lp_0 ...". */
static int print_token_scores(FILE *out, const nmt_hypothesis *h, int marian)
{
    if (fputs(marian ? " ||| WordScores=" : " |||", out) == EOF)
        return -1;
    for (int t = 0; h && h->token_scores && t <= h->n_tokens; t++)
        if (fprintf(out, " " TRANSLATE_FLOAT, h->token_scores[t]) < 0)
            return -1;
    return 0;
}

/* A JSON string: '"' and '\' escaped, control characters as \u00XX; the
 * rest (UTF-8, checked by the engine) as it is. */
static int print_json_string(FILE *out, const char *s)
{
    if (fputc('"', out) == EOF)
        return -1;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        int r;
        if (*p == '"' || *p == '\\')
            r = fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            r = fprintf(out, "\\u%04x", *p);
        else
            r = fputc(*p, out) == EOF ? -1 : 1;
        if (r < 0)
            return -1;
    }
    return fputc('"', out) == EOF ? -1 : 0;
}

static int print_json_strings(FILE *out, char *const *strings, int n)
{
    if (fputc('[', out) == EOF)
        return -1;
    for (int i = 0; strings && i < n; i++)
        if ((i && fputc(',', out) == EOF) || print_json_string(out, strings[i]) < 0)
            return -1;
    return fputc(']', out) == EOF ? -1 : 0;
}

/* " ||| {"src":[...],"tgt":[...],"weights":[[...],...]}" (--attention):
 * weights[t][s], target token t's weight on source token s. */
static int print_attention(FILE *out, const nmt_result *r, const nmt_hypothesis *h)
{
    const int n_src = h && r->src_tokens ? r->n_src : 0;
    const int n_tgt = h && h->tokens && h->attention ? h->n_tokens : 0;
    if (fputs(" ||| {\"src\":", out) == EOF ||
        print_json_strings(out, h ? r->src_tokens : NULL, n_src) < 0 ||
        fputs(",\"tgt\":", out) == EOF ||
        print_json_strings(out, n_tgt ? h->tokens : NULL, n_tgt) < 0 ||
        fputs(",\"weights\":[", out) == EOF)
        return -1;
    for (int t = 0; t < n_tgt; t++) {
        if ((t && fputc(',', out) == EOF) || fputc('[', out) == EOF)
            return -1;
        for (int s = 0; s < n_src; s++)
            if (fprintf(out, s ? "," TRANSLATE_FLOAT : TRANSLATE_FLOAT,
                        h->attention[(size_t)t * n_src + s]) < 0)
                return -1;
        if (fputc(']', out) == EOF)
            return -1;
    }
    return fputs("]}", out) == EOF ? -1 : 0;
}

static int print_fields(const translate_args *args, FILE *out, const nmt_result *r,
                        const nmt_hypothesis *h, int marian)
{
    if (args->alignment && print_alignment(out, h, marian) < 0)
        return -1;
    if (args->token_scores && print_token_scores(out, h, marian) < 0)
        return -1;
    if (args->attention && print_attention(out, r, h) < 0)
        return -1;
    return 0;
}

int translate_print_fields(const translate_args *args, FILE *out, const nmt_result *r,
                           const nmt_hypothesis *h)
{
    return print_fields(args, out, r, h, 0);
}

int translate_print_marian_row(const translate_args *args, FILE *out, long id,
                               const nmt_result *r, const nmt_hypothesis *h)
{
    if (fprintf(out, "%ld ||| %s", id, h ? h->text : "") < 0 ||
        print_fields(args, out, r, h, 1) < 0)
        return -1;
    return (h ? fprintf(out, " ||| F0= " TRANSLATE_FLOAT " ||| " TRANSLATE_FLOAT, h->log_prob,
                        h->score)
              : fputs(" ||| F0= -inf ||| -inf", out)) < 0 ? -1 : 0;
}
