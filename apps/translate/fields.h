/* fields.h: the fields translate appends to an output line or n-best row
 * (in Marian's rows, before the scores), each after " ||| ", in this order: --alignment ("s-t ..."), --token-scores
 * (each target token's log-probability, the EOS's last) and --attention (a
 * JSON document with the source and target tokens and the soft attention
 * weights). */
#ifndef NMT_TRANSLATE_FIELDS_H
#define NMT_TRANSLATE_FIELDS_H

#include "nmt.h"
#include "options.h"

#include <stdio.h>

/* The printf format of every score, token score and attention weight
 * translate prints: 9 significant digits (FLT_DECIMAL_DIG) read back as the
 * same float, so two outputs are byte-identical exactly when their numbers
 * have the same bits (docs/decoding.md, "Batch invariance"). */
#define TRANSLATE_FLOAT "%.9g"

/* The fields args asks for, of hypothesis h of result r; h NULL (a refused
 * line, or an n-best row past its hypotheses): each field empty, the JSON
 * one {"src":[],"tgt":[],"weights":[]}. Returns a negative value when a
 * write failed. */
int translate_print_fields(const translate_args *args, FILE *out, const nmt_result *r,
                           const nmt_hypothesis *h);

/* One row of Marian's n-best lists (--n-best-format marian), without the
 * newline, its fields where marian-decoder prints them: before the scores,
 * "ID ||| TEXT [||| s-t ...] [||| WordScores= lp ...] [||| {attention}] |||
 * F0= LOGPROB ||| SCORE" (ID the 0-based line). h NULL: an empty text and
 * -inf scores. Returns a negative value when a write failed. */
int translate_print_marian_row(const translate_args *args, FILE *out, long id,
                               const nmt_result *r, const nmt_hypothesis *h);

#endif /* NMT_TRANSLATE_FIELDS_H */
