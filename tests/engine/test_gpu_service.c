/* test_gpu_service.c: the service's determinism test (test_service.c) on a
 * CUDA worker, whose default is continuous batching. */
#define TEST_SERVICE_GPU 1
#include "test_service.c"
