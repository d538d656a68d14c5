/* model_api.c: the API's model calls (include/nmt.h) over the model file
 * floor (format/model.h), which knows nothing of the API, and the public
 * structs' sizes for bindings. */
#include "nmt.h"

#include "model.h"

#include <string.h>

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

size_t nmt_struct_size(const char *name)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {{"nmt_options", sizeof(nmt_options)},
                 {"nmt_hypothesis", sizeof(nmt_hypothesis)},
                 {"nmt_result", sizeof(nmt_result)},
                 {"nmt_stats", sizeof(nmt_stats)},
                 {"nmt_error", sizeof(nmt_error)},
                 {"nmt_service_options", sizeof(nmt_service_options)},
                 {"nmt_request_options", sizeof(nmt_request_options)},
                 {"nmt_service_stats", sizeof(nmt_service_stats)},
                 {"nmt_shrink_options", sizeof(nmt_shrink_options)},
                 {"nmt_pipeline_options", sizeof(nmt_pipeline_options)},
                 {"nmt_pipeline_window", sizeof(nmt_pipeline_window)},
                 {"nmt_pipeline_stats", sizeof(nmt_pipeline_stats)}};
    for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(name, sizes[i].name))
            return sizes[i].size;
    return 0;
}
