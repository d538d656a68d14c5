/* test_gpu_model.c: see test_gpu_model.h. */
#include "test_gpu_model.h"

#include "cuda_ctx.h"
#include "test_util.h"

#include <stdio.h>

int test_gpu_model_open(const char *path, nmt_model **model)
{
    *model = NULL;
    if (nmt_cuda_device_count() == 0) {
        fprintf(stderr, "skipped: no GPU\n");
        return NMT_TEST_SKIP;
    }
    test_seed();
    nmt_error err = {NMT_STATUS_OK, ""};
    if (nmt_model_load(path, model, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return 1;
    }
    return 0;
}
