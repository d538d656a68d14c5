/* stats_json.c: the --stats file of translate: the library's counters
 * (nmt_translator_stats) as one JSON object, with the derived means that the
 * evaluation scripts (tools/eval/lsh-grid) read. */
#include "options.h"

#include <stdio.h>

static const char *share_name(nmt_lsh_share share)
{
    return share == NMT_LSH_SHARE_ROW ? "row" : share == NMT_LSH_SHARE_SENTENCE ? "sentence"
                                                                               : "batch";
}

/* Returns 0 on success, else writes the reason into message. */
int translate_write_stats(const translate_args *args, const nmt_translator *translator,
                          long lines, char *message, size_t message_size)
{
    nmt_stats st;
    nmt_error err = {0};
    if (nmt_translator_stats(translator, &st, &err) != NMT_STATUS_OK) {
        snprintf(message, message_size, "--stats: %s", err.message);
        return -1;
    }
    FILE *f = fopen(args->stats_path, "w");
    if (!f) {
        snprintf(message, message_size, "--stats: cannot write %s", args->stats_path);
        return -1;
    }
    const nmt_shrink_options *sh = &args->engine.shrink;
    const int cuda = nmt_translator_device(translator) == NMT_DEVICE_CUDA;
    const char *mode = sh->mode == NMT_SHRINK_LSH ? "lsh" : sh->mode == NMT_SHRINK_TOP ? "top"
                                                                                      : "full";
    fprintf(f, "{\n  \"device\": \"%s\",\n  \"lines\": %ld,\n  \"sentences\": %lld,\n",
            cuda ? "cuda" : "cpu", lines, (long long)st.sentences);
    fprintf(f, "  \"decode_seconds\": %.6f,\n  \"steps\": %lld,\n  \"row_steps\": %lld,\n",
            st.decode_seconds, (long long)st.steps, (long long)st.row_steps);
    fprintf(f, "  \"graph_runs\": %lld,\n  \"eager_runs\": %lld,\n", (long long)st.graph_runs,
            (long long)st.eager_runs);
    if (st.output_layer_ms >= 0)
        fprintf(f, "  \"output_layer_ms\": %.4f,\n", st.output_layer_ms);
    else
        fprintf(f, "  \"output_layer_ms\": null,\n");
    fprintf(f, "  \"vocab_mode\": \"%s\",\n", mode);
    if (sh->mode == NMT_SHRINK_NONE)
        fprintf(f, "  \"lsh\": null,\n");
    else {
        /* TOP hashes nothing: its K, u, W and t are 0. */
        const int lsh = sh->mode == NMT_SHRINK_LSH;
        fprintf(f, "  \"lsh\": {\"k\": %d, \"u\": %d, \"w\": %d, \"top\": %d, \"threshold\": %d, "
                   "\"share\": \"%s\", \"seed\": %u},\n",
                lsh * sh->k, lsh * sh->u, lsh * sh->w, sh->top, lsh * sh->threshold,
                share_name(sh->share), sh->seed);
    }
    if (st.row_steps > 0) {
        fprintf(f, "  \"candidates_per_row\": %.3f,\n",
                (double)st.candidate_words / (double)st.row_steps);
        fprintf(f, "  \"recall\": %.6f,\n", (double)st.recall_hits / (double)st.row_steps);
    } else {
        fprintf(f, "  \"candidates_per_row\": null,\n  \"recall\": null,\n");
    }
    fprintf(f, "  \"recall_rows\": %lld,\n  \"recall_hits\": %lld\n}\n", (long long)st.row_steps,
            (long long)st.recall_hits);
    if (fclose(f) != 0) {
        snprintf(message, message_size, "--stats: error writing %s", args->stats_path);
        return -1;
    }
    return 0;
}
