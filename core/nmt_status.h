/* nmt_status.h: the status and error types every floor returns (the ground
 * floor's, core/). The public header include/nmt.h includes this file, and
 * the installed nmt.h carries it inline, so a program needs one header. */
#ifndef NMT_STATUS_H
#define NMT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nmt_status {
    NMT_STATUS_OK = 0,
    NMT_STATUS_ERROR_IO = -1,          /* a file could not be opened or read */
    NMT_STATUS_ERROR_FORMAT = -2,      /* a model file is malformed */
    NMT_STATUS_ERROR_INPUT = -3,       /* an input line is invalid (UTF-8, length) */
    NMT_STATUS_ERROR_ARGUMENT = -4,    /* a caller passed an invalid argument */
    NMT_STATUS_ERROR_MEMORY = -5,      /* an allocation failed */
    NMT_STATUS_ERROR_CUDA = -6,        /* a CUDA, cuBLAS or cuSPARSE call failed */
    NMT_STATUS_ERROR_UNSUPPORTED = -7, /* e.g. CUDA asked for but not built or no GPU */
    NMT_STATUS_ERROR_INTERNAL = -8,    /* a broken invariant: a bug, please report */
    NMT_STATUS_BUSY = -9,              /* the service's queue is full: retry later */
    NMT_STATUS_CANCELLED = -10,        /* cancelled by the caller or a shutdown */
    NMT_STATUS_DEADLINE = -11,         /* not translated before the request's deadline */
    NMT_STATUS_CLOSED = -12            /* the service is shut down */
} nmt_status;

/* Filled by a failing call: the status and a message naming the cause. */
typedef struct nmt_error {
    nmt_status status;
    char message[512];
} nmt_error;

/* A short name for a status ("I/O error", "malformed model file", ...). */
const char *nmt_status_string(nmt_status status);

#ifdef __cplusplus
}
#endif

#endif /* NMT_STATUS_H */
