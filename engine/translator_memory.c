/* translator_memory.c: the translator's memory safety at large batches.
 * Before the backend is created, options.max_memory caps the device memory
 * it may allocate: the CUDA backend's own measure of what it allocates
 * (nmt_cuda_backend_device_bytes, host arithmetic) decides the batch size,
 * halved until it fits; a device that runs out of memory creating the
 * backend halves it again. While translating, a batch the device has no memory
 * for (NMT_STATUS_ERROR_MEMORY from the backend's decode) is decoded again
 * as two halves, down to one sentence: a sentence's translation does not
 * depend on its batch, so the lines come out as they would have, and only a
 * sentence that does not fit alone gets an error of its own. */
#include "translator.h"

#include "error.h"

#include <stdio.h>
#include <string.h>

nmt_status nmt_translator_fit_memory(const nmt_model *model, const nmt_options *options,
                                     nmt_backend_config *config, nmt_error *err)
{
    if (options->max_memory <= 0 || options->device == NMT_DEVICE_CPU ||
        (options->device == NMT_DEVICE_AUTO && !nmt_cuda_available()))
        return NMT_STATUS_OK;
    const int32_t asked = config->max_sentences;
    size_t bytes = 0;
    for (;;) {
        nmt_error measure_err = {0};
        const nmt_status status = nmt_cuda_backend_device_bytes(model, config, &bytes,
                                                                &measure_err);
        if (status == NMT_STATUS_ERROR_UNSUPPORTED)
            return NMT_STATUS_OK; /* no CUDA here: the CPU has no cap */
        if (status != NMT_STATUS_OK)
            return nmt_error_set(err, status, "max_memory: %s", measure_err.message);
        if ((int64_t)bytes <= options->max_memory || config->max_sentences == 1)
            break;
        config->max_sentences = nmt_batch_half(config->max_sentences);
    }
    if ((int64_t)bytes > options->max_memory)
        return nmt_error_set(err, NMT_STATUS_ERROR_MEMORY,
                             "max_memory %lld bytes: the CUDA backend needs %zu bytes for one "
                             "sentence (beam %d, max_src_tokens %d; batch_size %d asked)",
                             (long long)options->max_memory, bytes, config->beam,
                             config->max_src, asked);
    return NMT_STATUS_OK;
}

nmt_status nmt_translator_create_cuda(const nmt_model *model, int device_index,
                                      nmt_backend_config *config, nmt_backend **backend,
                                      nmt_error *err)
{
    nmt_status status;
    if (config->precision == NMT_PRECISION_INT8)
        return nmt_error_set(err, NMT_STATUS_ERROR_UNSUPPORTED,
                             "precision int8 is the CPU's (--device cpu)");
    while ((status = nmt_cuda_backend_create(model, device_index, config, backend, err)) ==
               NMT_STATUS_ERROR_MEMORY &&
           config->max_sentences > 1)
        config->max_sentences = nmt_batch_half(config->max_sentences);
    return status;
}

nmt_status nmt_translator_decode_lines(nmt_translator *t, const nmt_search_config *search,
                                       const nmt_call_lines *call, const int32_t *lines,
                                       int32_t count, nmt_result *results,
                                       nmt_finisher *finisher, nmt_error *err)
{
    nmt_status status = NMT_STATUS_OK, decoded = NMT_STATUS_OK;
    nmt_error decode_err = {0};
    nmt_batch_forced forced;
    memset(&forced, 0, sizeof forced);
    const int32_t per_line = nmt_translator_sentences_per_line(search, call);
    const int32_t sentences = count * per_line;
    nmt_source_builder_reset(&t->source);
    for (int32_t k = 0; k < count; k++)
        for (int32_t j = 0; j < per_line; j++)
            NMT_TRY(nmt_source_builder_add(
                &t->source, &call->tokens[lines[k]],
                call->line_keys ? call->line_keys[lines[k]] : (uint64_t)lines[k], err));
    NMT_TRY(nmt_translator_forced_batch(call, lines, count, per_line, &forced, err));
    {
        const nmt_source_batch source = nmt_source_builder_batch(&t->source);
        nmt_search_config config = *search;
        if (forced.offset)
            config.forced = &forced.view;
        if (per_line > 1)
            config.params.n_best = 1; /* each alternative's best */
        memset(t->search_results, 0, sizeof *t->search_results * (size_t)sentences);
        const nmt_backend_vtable *v = t->backend->vtable;
        decoded = call->score ? v->score(t->backend, &source, &config, t->search_results,
                                         &decode_err)
                              : v->decode(t->backend, &source, &config, t->search_results,
                                          &decode_err);
    }
    if (decoded == NMT_STATUS_OK && per_line > 1)
        NMT_TRY(nmt_translator_merge_alternatives(t->search_results, count, per_line, err));
    if (finisher && decoded == NMT_STATUS_OK) {
        /* The finisher takes this half of the pair; the next batch the other. */
        NMT_TRY(nmt_finisher_submit(finisher, t->search_results, call, lines, count, results,
                                    err));
        t->search_results = t->search_results == t->results_pair
                                ? t->results_pair + t->options.batch_size
                                : t->results_pair;
        goto cleanup;
    }
    status = nmt_translator_fill_batch(t, t->search_results, call, lines, count,
                                       decoded == NMT_STATUS_OK, results, err);
    if (decoded == NMT_STATUS_ERROR_MEMORY && count > 1) {
        /* The batch did not fit: the halves, each as a batch of its own. */
        const int32_t half = nmt_batch_half(count);
        t->stats.split_batches++;
        NMT_TRY(nmt_translator_decode_lines(t, search, call, lines, half, results, finisher,
                                            err));
        NMT_TRY(nmt_translator_decode_lines(t, search, call, lines + half, count - half,
                                            results, finisher, err));
    } else if (decoded == NMT_STATUS_ERROR_MEMORY) {
        char message[sizeof results->message];
        snprintf(message, sizeof message, "out of memory for this sentence alone: %s",
                 decode_err.message);
        nmt_translator_line_error(&results[lines[0]], NMT_STATUS_ERROR_MEMORY, message);
    } else if (decoded != NMT_STATUS_OK) {
        status = nmt_error_set(err, decoded, "%s", decode_err.message);
    }
cleanup:
    nmt_translator_forced_free(&forced);
    return status;
}
