/* model-info: prints what a model file holds: the description, the file's
 * flags and storage type, and with --tensor-crcs one line per tensor
 *     name dtype dims crc32
 * where dtype is the file's storage type (f32 or f16), dims are joined by 'x'
 * and crc32 (8 hex digits) is zlib's CRC-32 of the tensor's fp32 values as
 * loaded (fp16 already widened), little-endian. python/pynmt/modelfile.py's
 * tensor_crcs computes the same numbers, which is how the exporter's
 * round-trip test compares the two sides. */
#include "nmt.h"
#include "model_file.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: model-info [--tensor-crcs] MODEL\n"
                 "Prints a model's description; --tensor-crcs adds one line per tensor:\n"
                 "name, storage dtype, dims, CRC-32 of its fp32 values as loaded.\n");
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int crcs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tensor-crcs") == 0) {
            crcs = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "model-info: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    nmt_error err = {0};
    nmt_model_file file;
    nmt_model *model = NULL;
    if (nmt_model_file_read(path, &file, &err) != NMT_STATUS_OK ||
        nmt_model_from_file(&file, &model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "model-info: %s\n", err.message);
        nmt_model_file_clear(&file);
        return 1;
    }
    printf("%s\n", nmt_model_describe(model));
    int f16 = 0;
    for (int32_t i = 0; i < file.n_tensors; i++)
        f16 += file.tensors[i].dtype == NMT_DTYPE_F16;
    printf("storage: %s, %s, %d tensors",
           f16 == file.n_tensors ? "fp16" : f16 ? "mixed fp32/fp16" : "fp32",
           file.flags & NMT_FILE_FLAG_DEFLATE ? "deflate-compressed" : "uncompressed",
           file.n_tensors);
    if (file.n_sparse > 0) /* section SPRS: these matrices are not in the count above */
        printf(" + %d sparse (CSR, section SPRS)", file.n_sparse);
    printf("\n");
    if (crcs) {
        nmt_model_tensor t;
        for (int32_t i = 0; nmt_model_tensor_at(model, i, &t); i++) {
            const nmt_file_tensor *ft = nmt_model_file_find(&file, t.name);
            const nmt_file_sparse *fs = nmt_model_file_find_sparse(&file, t.name);
            const int stored_f16 = ft ? ft->dtype == NMT_DTYPE_F16 : fs && fs->dtype == NMT_DTYPE_F16;
            size_t elems = 1;
            char dims[96] = "";
            size_t len = 0;
            for (int d = 0; d < t.ndim; d++) {
                elems *= (size_t)t.dims[d];
                len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%lld", d ? "x" : "",
                                        (long long)t.dims[d]);
            }
            /* Little-endian host: the bytes in memory are the bytes hashed. */
            uLong crc = crc32(0L, Z_NULL, 0);
            const unsigned char *p = (const unsigned char *)t.data;
            size_t bytes = elems * sizeof(float);
            while (bytes) {
                uInt piece = bytes > (1u << 30) ? (1u << 30) : (uInt)bytes;
                crc = crc32(crc, p, piece);
                p += piece;
                bytes -= piece;
            }
            printf("%s %s %s %08lx\n", t.name, stored_f16 ? "f16" : "f32", dims,
                   (unsigned long)crc);
        }
    }
    nmt_model_free(model);
    nmt_model_file_clear(&file);
    return 0;
}
