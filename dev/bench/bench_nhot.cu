/* bench_nhot.cu: N-hot lookup (nmt_cuda_nhot_lookup, Argueta & Chiang Alg. 2)
 * against cuBLAS sgemm (a dense N-hot matrix times the table) and cuSPARSE
 * SpMM (the same CSR), on Argueta's shape: 100 rows, a 10240 x 512 table,
 * N in {1, 2, 5, 10, 50, 100}. Tables and matrices rotate over copies bigger
 * than L2. JSON lines on stdout, a table on stderr. Env: NMT_BENCH_NS,
 * NMT_BENCH_REPEATS. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_lib_ok.h" /* CUBLAS_OK, CUSPARSE_OK */
#include "bench_util.h"
#include "nhot.h"

enum { ROWS = 100, TABLE_ROWS = 10240, DIM = 512, MAX_COPIES = 8 };

typedef struct {
    int copies, n;
    float *table[MAX_COPIES], *dense[MAX_COPIES], *out;
    int32_t *row_ptr, *cols;
    float *values;
    cublasHandle_t cublas;
    cusparseHandle_t cusparse;
    cusparseSpMatDescr_t sp;
    cusparseDnMatDescr_t tab_desc[MAX_COPIES], out_desc;
    void *sp_buffer;
    cudaStream_t stream;
} nhot_arg;

static void run_ours(void *p, int i)
{
    nhot_arg *a = (nhot_arg *)p;
    nmt_error err;
    if (nmt_cuda_nhot_lookup(ROWS, DIM, TABLE_ROWS, a->row_ptr, a->cols, a->values,
                             a->table[i % a->copies], a->out, a->stream, &err) != NMT_STATUS_OK) {
        fprintf(stderr, "nmt_cuda_nhot_lookup: %s\n", err.message);
        exit(1);
    }
}

static void run_cublas(void *p, int i)
{
    nhot_arg *a = (nhot_arg *)p;
    const float one = 1.0f, zero = 0.0f;
    int c = i % a->copies;
    /* Row-major out[100, 512] = dense[100, 10240] . table[10240, 512]:
     * column-major out^T = table^T . dense^T. */
    CUBLAS_OK(cublasSgemm(a->cublas, CUBLAS_OP_N, CUBLAS_OP_N, DIM, ROWS, TABLE_ROWS, &one,
                          a->table[c], DIM, a->dense[c], TABLE_ROWS, &zero, a->out, DIM));
}

static void run_cusparse(void *p, int i)
{
    nhot_arg *a = (nhot_arg *)p;
    const float one = 1.0f, zero = 0.0f;
    CUSPARSE_OK(cusparseSpMM(a->cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                             CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a->sp,
                             a->tab_desc[i % a->copies], &zero, a->out_desc, CUDA_R_32F,
                             CUSPARSE_SPMM_ALG_DEFAULT, a->sp_buffer));
}

int main(void)
{
    static const int d_ns[] = {1, 2, 5, 10, 50, 100};
    int ns[16];
    const int n_ns = parse_ints("NMT_BENCH_NS", d_ns, 6, ns, 16);

    nhot_arg a = {};
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&a.stream, cudaStreamNonBlocking));
    double copy_gbps = bench_copy_bandwidth(a.stream);
    CUBLAS_OK(cublasCreate(&a.cublas));
    CUBLAS_OK(cublasSetStream(a.cublas, a.stream));
    CUSPARSE_OK(cusparseCreate(&a.cusparse));
    CUSPARSE_OK(cusparseSetStream(a.cusparse, a.stream));

    size_t table_bytes = (size_t)TABLE_ROWS * DIM * sizeof(float);
    size_t dense_bytes = (size_t)ROWS * TABLE_ROWS * sizeof(float);
    a.copies = bench_copies(table_bytes + dense_bytes);
    a.copies = a.copies > MAX_COPIES ? MAX_COPIES : a.copies;
    float *h_table = (float *)malloc(table_bytes);
    for (size_t i = 0; i < (size_t)TABLE_ROWS * DIM; i++)
        h_table[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (int c = 0; c < a.copies; c++) {
        CUDA_OK(cudaMalloc(&a.table[c], table_bytes));
        CUDA_OK(cudaMemcpy(a.table[c], h_table, table_bytes, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMalloc(&a.dense[c], dense_bytes));
        CUSPARSE_OK(cusparseCreateDnMat(&a.tab_desc[c], TABLE_ROWS, DIM, DIM, a.table[c],
                                        CUDA_R_32F, CUSPARSE_ORDER_ROW));
    }
    CUDA_OK(cudaMalloc(&a.out, (size_t)ROWS * DIM * sizeof(float)));
    CUSPARSE_OK(cusparseCreateDnMat(&a.out_desc, ROWS, DIM, DIM, a.out, CUDA_R_32F,
                                    CUSPARSE_ORDER_ROW));
    CUDA_OK(cudaMalloc(&a.row_ptr, (ROWS + 1) * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&a.cols, (size_t)ROWS * 100 * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&a.values, (size_t)ROWS * 100 * sizeof(float)));

    fprintf(stderr, "%4s | %9s %9s | %9s %7s | %9s %7s\n", "N", "ours us", "floor us",
            "cublas us", "ratio", "cusparse", "ratio");
    for (int ni = 0; ni < n_ns; ni++) {
        int n = ns[ni];
        int32_t *h_rp = (int32_t *)malloc((ROWS + 1) * sizeof(int32_t));
        int32_t *h_cols = (int32_t *)malloc((size_t)ROWS * n * sizeof(int32_t));
        float *h_vals = (float *)malloc((size_t)ROWS * n * sizeof(float));
        float *h_dense = (float *)calloc((size_t)ROWS * TABLE_ROWS, sizeof(float));
        for (int r = 0; r <= ROWS; r++)
            h_rp[r] = r * n;
        for (int r = 0; r < ROWS; r++)
            for (int e = 0; e < n; e++) {
                /* Distinct columns per row (a stride coprime to 10240). */
                int col = (int)(((uint64_t)r * 7919 + (uint64_t)e * 10007) % TABLE_ROWS);
                h_cols[r * n + e] = col;
                h_vals[r * n + e] = 1.0f / n;
                h_dense[(size_t)r * TABLE_ROWS + col] = 1.0f / n;
            }
        CUDA_OK(cudaMemcpy(a.row_ptr, h_rp, (ROWS + 1) * sizeof(int32_t), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(a.cols, h_cols, (size_t)ROWS * n * sizeof(int32_t), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(a.values, h_vals, (size_t)ROWS * n * sizeof(float), cudaMemcpyHostToDevice));
        for (int c = 0; c < a.copies; c++)
            CUDA_OK(cudaMemcpy(a.dense[c], h_dense, dense_bytes, cudaMemcpyHostToDevice));
        CUSPARSE_OK(cusparseCreateCsr(&a.sp, ROWS, TABLE_ROWS, (int64_t)ROWS * n, a.row_ptr, a.cols,
                                      a.values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                      CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        size_t buf = 0;
        const float one = 1.0f, zero = 0.0f;
        CUSPARSE_OK(cusparseSpMM_bufferSize(a.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a.sp,
                                            a.tab_desc[0], &zero, a.out_desc, CUDA_R_32F,
                                            CUSPARSE_SPMM_ALG_DEFAULT, &buf));
        CUDA_OK(cudaMalloc(&a.sp_buffer, buf ? buf : 1));

        double ours = bench_time_us(run_ours, &a, a.stream);
        double blas = bench_time_us(run_cublas, &a, a.stream);
        double sparse = bench_time_us(run_cusparse, &a, a.stream);
        /* Bytes our kernel must move: N table rows a row (no reuse assumed), the CSR, the output. */
        size_t bytes = (size_t)ROWS * n * DIM * sizeof(float) + (size_t)ROWS * n * 8 +
                       (size_t)ROWS * DIM * sizeof(float);
        double floor_us = bytes / (copy_gbps * 1e3);
        const char *impls[3] = {"ours", "cublas_dense", "cusparse_spmm"};
        double t[3] = {ours, blas, sparse};
        for (int i = 0; i < 3; i++)
            printf("{\"bench\":\"nhot\",\"impl\":\"%s\",\"rows\":%d,\"table_rows\":%d,\"dim\":%d,"
                   "\"N\":%d,\"median_us\":%.3f,\"bytes\":%zu,\"floor_us\":%.3f,"
                   "\"copy_gbps\":%.1f}\n",
                   impls[i], ROWS, TABLE_ROWS, DIM, n, t[i], bytes, floor_us, copy_gbps);
        fflush(stdout);
        fprintf(stderr, "%4d | %9.2f %9.2f | %9.2f %6.1fx | %9.2f %6.1fx\n", n, ours, floor_us,
                blas, blas / ours, sparse, sparse / ours);
        CUSPARSE_OK(cusparseDestroySpMat(a.sp));
        CUDA_OK(cudaFree(a.sp_buffer));
        free(h_rp);
        free(h_cols);
        free(h_vals);
        free(h_dense);
    }
    for (int c = 0; c < a.copies; c++) {
        CUSPARSE_OK(cusparseDestroyDnMat(a.tab_desc[c]));
        CUDA_OK(cudaFree(a.table[c]));
        CUDA_OK(cudaFree(a.dense[c]));
    }
    CUSPARSE_OK(cusparseDestroyDnMat(a.out_desc));
    CUDA_OK(cudaFree(a.out));
    CUDA_OK(cudaFree(a.row_ptr));
    CUDA_OK(cudaFree(a.cols));
    CUDA_OK(cudaFree(a.values));
    CUBLAS_OK(cublasDestroy(a.cublas));
    CUSPARSE_OK(cusparseDestroy(a.cusparse));
    free(h_table);
    return 0;
}
