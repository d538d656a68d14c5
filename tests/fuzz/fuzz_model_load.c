/* fuzz_model_load.c: libFuzzer target for the model loader (built with
 * -DNMT_BUILD_FUZZ=ON and clang; docs/model-format.md, "Fuzzing").
 *
 * Each input is loaded from memory twice: as it is, and "repaired": its
 * declared file size and every CRC it can locate recomputed. Mutated inputs
 * almost never carry valid CRCs, so without the repair the fuzzer would never
 * get past the section table; the library itself has no fuzzing switch, the
 * harness does the forging. The loader must either refuse an input with
 * NMT_STATUS_ERROR_FORMAT and a message, or return a model whose every tensor
 * can be read; anything else (a crash, a sanitizer report, another status, an
 * empty message) is a finding; a build without SentencePiece may also answer
 * NMT_STATUS_ERROR_UNSUPPORTED for a file with section SPMP. The seed corpus
 * (tests/fuzz/corpus/, written by make_corpus.py) holds small valid models:
 * fp32, fp16, compressed, and one with a SentencePiece model, whose bytes
 * SentencePiece's own parser then meets mutated. */
#include "nmt.h"
#include "model_file.h"
#include "sentencepiece.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void wr64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }

/* Recomputes what a mutation breaks for free: file size, section CRCs, table
 * CRC, preamble CRC. Offsets are bounds-checked here as the loader would. */
static void repair(uint8_t *b, size_t size)
{
    if (size < 32)
        return;
    wr64(b + 16, size);
    uint32_t n = rd32(b + 24);
    if (n <= 64 && 32 + (uint64_t)n * 32 + 8 <= size) {
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *e = b + 32 + 32 * i;
            uint64_t off = rd64(e + 8), len = rd64(e + 16);
            if (off <= size && len <= size - off)
                wr32(e + 4, (uint32_t)crc32(0, b + off, (uInt)len));
        }
        wr32(b + 32 + 32 * n, (uint32_t)crc32(0, b + 32, 32 * n));
    }
    wr32(b + 28, (uint32_t)crc32(0, b, 28));
}

static void load(const uint8_t *data, size_t size)
{
    nmt_model *model = NULL;
    nmt_error err = {0};
    nmt_status status = nmt_model_load_memory(data, size, "fuzz", &model, &err);
    if (status != NMT_STATUS_OK) {
        const int expected = status == NMT_STATUS_ERROR_FORMAT ||
                             (status == NMT_STATUS_ERROR_UNSUPPORTED && !nmt_spm_available());
        if (model || !expected || !err.message[0])
            __builtin_trap();
        return;
    }
    /* Read every weight so a tensor pointing outside the arena is caught by ASan. */
    volatile float sink = 0.0f;
    nmt_model_tensor t;
    for (int32_t i = 0; nmt_model_tensor_at(model, i, &t); i++) {
        size_t n = (size_t)t.dims[0] * (size_t)(t.ndim == 2 ? t.dims[1] : 1);
        for (size_t k = 0; k < n; k++)
            sink += t.data[k];
    }
    /* Sparse matrices: the CSR must hold what the loader promised (section
     * SPRS): offsets from 0 to nnz, never decreasing, columns in range and
     * increasing, each value equal to its dense expansion. */
    for (int32_t i = 0; i < model->n_sparse; i++) {
        const nmt_sparse_matrix *sp = &model->sparse[i];
        if (sp->row_offsets[0] != 0 || sp->row_offsets[sp->rows] != sp->nnz)
            __builtin_trap();
        for (int32_t r = 0; r < sp->rows; r++)
            for (int32_t k = sp->row_offsets[r]; k < sp->row_offsets[r + 1]; k++) {
                const int32_t c = sp->col_indices[k];
                if (c < 0 || c >= sp->cols || (k > sp->row_offsets[r] && c <= sp->col_indices[k - 1]) ||
                    sp->dense[(size_t)r * sp->cols + c] != sp->values[k])
                    __builtin_trap();
            }
    }
    for (int32_t i = 0; i < model->hp.tgt_vocab; i++)
        if (!nmt_vocab_token(model->tgt_vocab, i))
            __builtin_trap();
    if (!nmt_model_describe(model)[0])
        __builtin_trap();
    (void)sink;
    nmt_model_free(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    repair(copy, size);
    load(copy, size);
    free(copy);
    return 0;
}
