/* model_files.c: the programs' models (options.h): every -m file loaded,
 * and a translator or service over them, an ensemble with --weights when
 * there are several (docs/decoding.md, "Ensembles"). */
#include "options.h"

#include <stdio.h>
#include <string.h>

int app_models_load(const translate_args *args, app_models *models, char *message, size_t size)
{
    memset(models, 0, sizeof *models);
    for (int i = 0; i < args->models.n && i < NMT_MAX_ENSEMBLE_MODELS; i++) {
        nmt_error err = {0};
        if (nmt_model_load(args->models.items[i], &models->models[i], &err) != NMT_STATUS_OK) {
            snprintf(message, size, "%s", err.message);
            app_models_free(models);
            return EXIT_MODEL;
        }
        models->n = i + 1;
    }
    return EXIT_OK;
}

void app_models_free(app_models *models)
{
    for (int i = 0; i < models->n; i++)
        nmt_model_free(models->models[i]);
    models->n = 0;
}

static const float *weights_of(const translate_args *args)
{
    return args->n_weights ? args->weights : NULL;
}

nmt_status app_translator_create(const translate_args *args, const app_models *models,
                                 const nmt_options *options, nmt_translator **translator,
                                 nmt_error *err)
{
    return nmt_translator_create_ensemble((const nmt_model *const *)models->models,
                                          weights_of(args), models->n, options, translator, err);
}

nmt_status app_service_create(const translate_args *args, const app_models *models,
                              const nmt_service_options *options, nmt_service **service,
                              nmt_error *err)
{
    return nmt_service_create_ensemble((const nmt_model *const *)models->models,
                                       weights_of(args), models->n, options, service, err);
}
