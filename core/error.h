/* error.h: internal error reporting shared by every layer.
 *
 * nmt_error_set records a status and a printf-style message in an nmt_error
 * (which may be NULL) and returns the status, so a failing path reads
 *     return nmt_error_set(err, NMT_STATUS_ERROR_FORMAT, "%s: field %s ...", ...);
 * NMT_TRY(call) jumps to the local label `cleanup` with `status` set when the
 * call fails; the callee has already filled `err`. */
#ifndef NMT_ERROR_H
#define NMT_ERROR_H

#include "nmt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NMT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NMT_PRINTF(f, a)
#endif

nmt_status nmt_error_set(nmt_error *err, nmt_status status, const char *fmt, ...) NMT_PRINTF(3, 4);

/* Prefixes an existing message, e.g. with the file name: "model.bin: <old>". */
void nmt_error_prefix(nmt_error *err, const char *fmt, ...) NMT_PRINTF(2, 3);

#define NMT_TRY(call)                          \
    do {                                       \
        status = (call);                       \
        if (status != NMT_STATUS_OK)           \
            goto cleanup;                      \
    } while (0)

/* Allocation that records the call site on failure and jumps to cleanup. */
#define NMT_ALLOC(ptr, count)                                                              \
    do {                                                                                   \
        size_t nmt_alloc_n_ = (size_t)(count);                                             \
        (ptr) = nmt_alloc_n_ ? calloc(nmt_alloc_n_, sizeof(*(ptr))) : NULL;                \
        if (nmt_alloc_n_ && !(ptr)) {                                                      \
            status = nmt_error_set(err, NMT_STATUS_ERROR_MEMORY, "%s:%d: out of memory "   \
                                   "allocating %zu x %zu bytes for %s", __FILE__, __LINE__, \
                                   nmt_alloc_n_, sizeof(*(ptr)), #ptr);                    \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* NMT_ERROR_H */
