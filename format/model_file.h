/* model_file.h: the model file format v1 (docs/model-format.md): a generic
 * reader that turns bytes into validated sections (hyper-parameters,
 * vocabulary token lists, tensor table and tensor data) and a writer.
 *
 * The reader treats every byte as hostile: each size is checked against the
 * file size (or, for compressed data, a bound on deflate's ratio) before
 * anything is allocated, arithmetic is overflow-checked, and every byte of the
 * file is covered by a CRC or must be zero padding, so a single flipped byte
 * anywhere is refused. It knows nothing about which tensors a model needs:
 * model.c checks names and shapes against the hyper-parameters. */
#ifndef NMT_MODEL_FILE_H
#define NMT_MODEL_FILE_H

#include "model.h"
#include "half.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "\x89NMT\r\n\x1a\n": the high byte catches 7-bit channels, CR LF and the
 * lone LF catch newline translation either way, ^Z stops DOS `type` (the PNG
 * signature's trick). */
#define NMT_FILE_MAGIC "\x89NMT\r\n\x1a\n"
#define NMT_FILE_VERSION 1u
#define NMT_FILE_FLAG_DEFLATE 1u        /* DATA is one zlib stream */
#define NMT_FILE_PREAMBLE_SIZE 32u
#define NMT_FILE_SECTION_ENTRY_SIZE 32u
#define NMT_FILE_ALIGN 64u              /* sections and tensor offsets */
#define NMT_FILE_MAX_SECTIONS 64u
#define NMT_FILE_MAX_TENSORS 4096u
#define NMT_FILE_MAX_NAME 255u
#define NMT_FILE_MAX_NDIM 4
#define NMT_FILE_MAX_DIM 0x7FFFFFFFull   /* shapes are int32 in memory */
#define NMT_FILE_MAX_UNPACKED (1ull << 34) /* 16 GiB of tensor data */
#define NMT_FILE_MAX_TEXT (1ull << 28)     /* HPAR, VSRC, VTGT each */
#define NMT_HPAR_MAX_SIZE (1 << 20)        /* emb, hidden and vocabulary sizes */
#define NMT_FILE_SPM_TAG "SPMP"            /* the SentencePiece model (tokenizer=sentencepiece) */
#define NMT_FILE_SPM_VERSION 1u
#define NMT_FILE_SPM_HEADER 8u             /* u32 version, u32 model size */
#define NMT_FILE_SPARSE_TAG "SPRS"         /* sparse (CSR) matrices, docs/model-format.md */
#define NMT_FILE_SPARSE_VERSION 1u
#define NMT_FILE_SPARSE_MIN_ENTRY 37u      /* u16 + 1-byte name + 2 + 4 x u64 */
#define NMT_FILE_MAX_NNZ 0x7FFFFFFFull     /* offsets and indices are int32 in memory */

typedef enum nmt_dtype { NMT_DTYPE_F32 = 0, NMT_DTYPE_F16 = 1 } nmt_dtype;

/* One entry of the TENS table. `name` points into the reader's storage. */
typedef struct nmt_file_tensor {
    const char *name;   /* NUL-terminated, [A-Za-z0-9_.]+ */
    nmt_dtype dtype;
    int32_t ndim;       /* 1..4 */
    uint64_t dims[NMT_FILE_MAX_NDIM];
    uint64_t offset;    /* into the unpacked DATA, multiple of 64 */
    uint64_t size;      /* bytes: product(dims) * dtype size */
} nmt_file_tensor;

/* One entry of section SPRS: a matrix [rows, cols] in CSR form. The arrays
 * point into the reader's buffer (little-endian, 4-byte aligned) and have been
 * checked: row_offsets[0] = 0, non-decreasing, row_offsets[rows] = nnz;
 * within each row the columns are < cols and strictly increasing. */
typedef struct nmt_file_sparse {
    const char *name;            /* NUL-terminated, [A-Za-z0-9_.]+ */
    nmt_dtype dtype;             /* of the values */
    uint64_t rows, cols, nnz;
    uint64_t offset;             /* of its arrays from the section start, multiple of 64 */
    const uint8_t *row_offsets;  /* u32 [rows + 1] */
    const uint8_t *col_indices;  /* u32 [nnz] */
    const uint8_t *values;       /* f32 or f16 [nnz] */
} nmt_file_sparse;

/* A read and validated file. `data` is 64-byte aligned and owned by
 * `data_owner` (either the whole file buffer or the inflated DATA), which a
 * caller may take over (set data_owner to NULL) to avoid a copy; the file
 * buffer is then unmapped with munmap when `mapped`. */
typedef struct nmt_model_file {
    const char *path;        /* for messages; not owned */
    uint32_t flags;
    nmt_hparams hp;
    int32_t n_src_tokens, n_tgt_tokens;
    const char **src_tokens; /* point into `buffer`, not NUL-terminated */
    size_t *src_lengths;
    const char **tgt_tokens;
    size_t *tgt_lengths;
    int32_t n_tensors;
    nmt_file_tensor *tensors;
    char *names;             /* storage of the tensor names */
    const uint8_t *spm_model; /* section SPMP's serialized SentencePiece model, in `buffer`
                                 (NULL unless hp.sentencepiece) */
    uint64_t spm_size;
    int32_t n_sparse;         /* entries of section SPRS (0 when absent) */
    nmt_file_sparse *sparse;
    char *sparse_names;       /* storage of their names */
    const uint8_t *data;
    uint64_t data_size;      /* unpacked */
    void *data_owner;
    void *buffer;            /* the file's bytes, 64-byte aligned */
    uint64_t buffer_size;
    int mapped;              /* buffer is a private mapping of the file (munmap), not malloc'ed */
} nmt_model_file;

/* Reads and validates a file (NMT_STATUS_ERROR_IO when it cannot be read,
 * NMT_STATUS_ERROR_FORMAT when malformed; messages start with the path). */
nmt_status nmt_model_file_read(const char *path, nmt_model_file *file, nmt_error *err);

/* The same from bytes in memory (copied); `name` is used in messages. */
nmt_status nmt_model_file_read_memory(const void *bytes, size_t size, const char *name,
                                      nmt_model_file *file, nmt_error *err);

/* Frees everything the reader allocated (accepts a zeroed struct). */
void nmt_model_file_clear(nmt_model_file *file);

/* Finds a tensor by name, or NULL. */
const nmt_file_tensor *nmt_model_file_find(const nmt_model_file *file, const char *name);
/* Finds a sparse matrix (section SPRS) by name, or NULL. */
const nmt_file_sparse *nmt_model_file_find_sparse(const nmt_model_file *file, const char *name);

/* Parses HPAR text into `hp` (used by the reader; exposed for tests). */
nmt_status nmt_hparams_parse(const char *text, size_t len, const char *where, nmt_hparams *hp,
                             nmt_error *err);

/* Writes the canonical HPAR text of `hp` into out[cap]; returns its length,
 * or 0 when it does not fit or `hp` is not valid. */
size_t nmt_hparams_format(const nmt_hparams *hp, char *out, size_t cap);

/* Fills hp->src_rows and hp->features from the feature kinds given in
 * `kinds` (the word first); used by writers building an nmt_hparams. */
nmt_status nmt_hparams_set_features(nmt_hparams *hp, const nmt_feature_kind *kinds, int32_t n,
                                    nmt_error *err);

/* A tensor to write: fp32 values, row-major. */
typedef struct nmt_write_tensor {
    const char *name;
    int32_t ndim;
    uint64_t dims[NMT_FILE_MAX_NDIM];
    const float *values;
    int sparse;        /* 1: written to section SPRS as the CSR of its nonzero values (2-D
                          only); its dense form is then absent from TENS and DATA */
} nmt_write_tensor;

typedef struct nmt_write_options {
    nmt_dtype dtype;   /* storage type of every tensor */
    int compress;      /* deflate DATA */
    const void *sentencepiece;  /* the bytes of a SentencePiece .model file, written as
                                   section SPMP; required exactly when hp->sentencepiece */
    size_t sentencepiece_size;
} nmt_write_options;

/* Writes a file. Hyper-parameters are checked the way the reader checks them;
 * tensor names and shapes are not (model.c's rules apply when loading). */
nmt_status nmt_model_file_write(const char *path, const nmt_hparams *hp,
                                const char *const *src_tokens, int32_t n_src,
                                const char *const *tgt_tokens, int32_t n_tgt,
                                const nmt_write_tensor *tensors, int32_t n_tensors,
                                const nmt_write_options *options, nmt_error *err);

/* Builds a model from a read file, checking tensor names and shapes against
 * the hyper-parameters. May take over file->data_owner. */
nmt_status nmt_model_from_file(nmt_model_file *file, nmt_model **model, nmt_error *err);

/* Loads a model from bytes in memory (the fuzz target's entry point);
 * `name` is used in messages. */
nmt_status nmt_model_load_memory(const void *bytes, size_t size, const char *name,
                                 nmt_model **model, nmt_error *err);

/* The tensors of a loaded model by name, in file order (docs/model-format.md,
 * "Tensors"): the exporter's round-trip test and tools walk them. */
typedef struct nmt_model_tensor {
    char name[48];
    int32_t ndim;    /* 1 or 2 in v1 */
    int64_t dims[NMT_FILE_MAX_NDIM];
    const float *data;
} nmt_model_tensor;

int32_t nmt_model_tensor_count(const nmt_model *model);
/* Fills `tensor` and returns 1, or returns 0 when index is out of range. */
int nmt_model_tensor_at(const nmt_model *model, int32_t index, nmt_model_tensor *tensor);
/* Fills `tensor` and returns 1, or returns 0 when no tensor has that name. */
int nmt_model_tensor_find(const nmt_model *model, const char *name, nmt_model_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* NMT_MODEL_FILE_H */
