/* model_api.c: the API's model calls (include/nmt.h) over the model file
 * floor (format/model.h), which knows nothing of the API. */
#include "nmt.h"

#include "model.h"

nmt_status nmt_model_load(const char *path, nmt_model **model, nmt_error *err)
{
    return nmt_model_read(path, model, err);
}

void nmt_model_free(nmt_model *model)
{
    nmt_model_destroy(model);
}

const char *nmt_model_describe(const nmt_model *model)
{
    return nmt_model_summary(model);
}
