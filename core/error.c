/* error.c: status strings and message formatting for nmt_error. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *nmt_status_string(nmt_status status)
{
    switch (status) {
    case NMT_STATUS_OK: return "ok";
    case NMT_STATUS_ERROR_IO: return "I/O error";
    case NMT_STATUS_ERROR_FORMAT: return "malformed model file";
    case NMT_STATUS_ERROR_INPUT: return "invalid input";
    case NMT_STATUS_ERROR_ARGUMENT: return "invalid argument";
    case NMT_STATUS_ERROR_MEMORY: return "out of memory";
    case NMT_STATUS_ERROR_CUDA: return "CUDA error";
    case NMT_STATUS_ERROR_UNSUPPORTED: return "unsupported";
    case NMT_STATUS_ERROR_INTERNAL: return "internal error";
    case NMT_STATUS_BUSY: return "busy";
    case NMT_STATUS_CANCELLED: return "cancelled";
    case NMT_STATUS_DEADLINE: return "deadline exceeded";
    case NMT_STATUS_CLOSED: return "service closed";
    }
    return "unknown status";
}

nmt_status nmt_error_set(nmt_error *err, nmt_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

void nmt_error_prefix(nmt_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[sizeof err->message];
    char old[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    snprintf(err->message, sizeof err->message, "%s%s", prefix, old);
}
