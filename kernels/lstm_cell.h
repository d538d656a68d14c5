/* lstm_cell.h: the LSTM pointwise step, gate order i, f, g, o (PyTorch).
 * gates = gates_x[r] + gates_h[r] + bias   (each [4*hidden]; gates_h, bias may be NULL)
 * c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c)
 * gates_x rows are ld_x floats apart (the encoder's all-steps GEMM output).
 * Row r's c_prev is row r of c_prev, which may alias c_out, or with c_rows
 * row c_rows[r] (then c_prev must not overlap c_out): the CUDA decoder's
 * cell reads each row's parent's c where it lies, by the beam's
 * back-pointers, instead of a gathered copy. h_out rows are ld_h floats
 * apart, so h can be written straight into a wider buffer (e.g. one
 * direction of [fwd; bwd]). h_out2 (may be NULL; rows ld_h2 apart) gets a
 * second copy of h: the CUDA decoder keeps h both as the layer's recurrent
 * input and as the next layer's (or the attention's) input, each beside
 * what it is multiplied with, so every layer is one GEMM. h16 (NULL: none;
 * half.h) gets h rounded to 16 bits, for a 16-bit GEMM that reads it
 * next. */
#ifndef NMT_KERNELS_LSTM_CELL_H
#define NMT_KERNELS_LSTM_CELL_H

#include "linear.h" /* the skinny kernels' weight types and rounding */
#include "nmt_status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nmt_lstm_cell_args {
    int32_t n_rows, hidden;
    const float *gates_x;    /* rows ld_x floats apart */
    int32_t ld_x;
    const float *gates_h;    /* rows 4 * hidden apart; NULL: none */
    const float *bias;       /* [4 * hidden]; NULL: none */
    const float *c_prev;     /* rows hidden apart */
    const int32_t *c_rows;   /* [n_rows]: row r's c_prev row; NULL: r */
    float *c_out;            /* rows hidden apart */
    float *h_out;
    int32_t ld_h;
    float *h_out2;           /* NULL: none */
    int32_t ld_h2;
    const nmt_half_out *h16; /* NULL: none */
} nmt_lstm_cell_args;

void nmt_cpu_lstm_cell(const nmt_lstm_cell_args *a);
nmt_status nmt_cuda_lstm_cell(const nmt_lstm_cell_args *a, void *stream, nmt_error *err);

/* The recurrent product and the step above in one launch, for 1 <= n_rows
 * <= NMT_SKINNY_MAX_ROWS rows (lstm_skinny.cu): gates_h[r] = x[r] . w^T
 * for r < n_dot (w [4 * hidden, k] fp32, rows ldw apart; x rows ldx apart),
 * zero for the rows from n_dot (they have no predecessor), then
 * nmt_cuda_lstm_cell with gates_x and bias, on ctx's stream. The same bits
 * as nmt_cuda_linear_skinny without a k split (policy split 1) into gates_h
 * followed by nmt_cuda_lstm_cell. x
 * must not overlap the outputs (other blocks still read it while one
 * writes). n_dot == 0 or nmt_linear_skinny_fits(n_dot, k).
 * With gates_x NULL (the steps' form below) the product is the whole gate
 * input, and the cell adds the bias to it: nmt_cuda_linear_skinny into
 * gates, then nmt_cuda_lstm_cell(gates_x = gates, gates_h = NULL), bit for
 * bit, when the split is the skinny plan's. */
typedef struct nmt_cuda_ctx nmt_cuda_ctx; /* core/cuda_ctx.h */
nmt_status nmt_cuda_lstm_skinny(nmt_cuda_ctx *ctx, int32_t n_rows, int32_t n_dot,
                                int32_t hidden, int32_t k, const float *x, int32_t ldx,
                                const float *w, int32_t ldw, const float *gates_x, int32_t ld_x,
                                const float *bias, const float *c_prev, float *c_out,
                                float *h_out, int32_t ld_h, float *h_out2, int32_t ld_h2,
                                nmt_error *err);

/* One step of nmt_cuda_lstm_skinny, as its arguments (w of the form's
 * weight type; gates_x may be NULL; c_prev NULL: a zero cell, which saves
 * clearing c before a recurrence's first step); _steps: up to
 * NMT_LSTM_SKINNY_MAX_STEPS independent steps of the same hidden, k and
 * form in one launch (a bidirectional encoder layer's two directions at one
 * time step), each the same bits as its own launch. The form (NULL: fp32
 * weights, fp32 activations, split 1, nmt_cuda_lstm_skinny's) picks the
 * weights' type, the activations' rounding and the k split (1, 2 or 4 warps
 * a hidden unit), as nmt_cuda_linear_skinny takes them: a decoder layer's
 * fp16 copy or 16-bit precision weights. */
enum { NMT_LSTM_SKINNY_MAX_STEPS = 2 };
typedef struct nmt_lstm_skinny_step {
    int32_t n_rows, n_dot;
    const float *x;
    int32_t ldx;
    const void *w;
    int32_t ldw;
    const float *gates_x;
    int32_t ld_x;
    const float *bias, *c_prev;
    float *c_out, *h_out;
    int32_t ld_h;
    float *h_out2;
    int32_t ld_h2;
} nmt_lstm_skinny_step;
typedef struct nmt_lstm_skinny_form {
    nmt_weight_type w_type;
    nmt_skinny_x x_round;
    int32_t split;
} nmt_lstm_skinny_form;
nmt_status nmt_cuda_lstm_skinny_steps(nmt_cuda_ctx *ctx, int32_t hidden, int32_t k,
                                      const nmt_lstm_skinny_step *steps, int n_steps,
                                      const nmt_lstm_skinny_form *form, nmt_error *err);

/* The cell of a layer whose products were made before its rows were
 * chosen (lstm_gathered.cu): for new row r, continuing row parent[r] with
 * token[r],
 *   gates = table[token[r]] + bias + proj[parent[r]]  (the cell's gates_x,
 *           bias, gates_h, added in that order)
 *   c_prev = c_prev[parent[r]] -> c_out[r];  h -> each h_out[i][r]
 * and, in the same launch, the rows the next layers gather by parent:
 * copies[i].dst[r] = copies[i].src[parent[r]] (hidden floats each). The
 * decoder's layer 0 at a few rows (model/cuda/decoder_step.cu): the table
 * holds every target word's embedding product, proj the recurrent product
 * of the rows before the beam step chose among them. No output may overlap
 * table, proj, c_prev or a copy's source. */
enum { NMT_LSTM_GATHERED_OUTS = 3, NMT_LSTM_GATHERED_COPIES = 8 };
typedef struct nmt_lstm_gathered_copy {
    const float *src;
    int32_t ld_src;
    float *dst;
    int32_t ld_dst;
} nmt_lstm_gathered_copy;
typedef struct nmt_lstm_gathered {
    int32_t n_rows, hidden;
    const int32_t *token, *parent;     /* [n_rows] */
    const float *table;                /* rows 4 * hidden floats apart, indexed by token */
    const float *proj;                 /* rows 4 * hidden floats apart, indexed by parent */
    const float *bias;                 /* [4 * hidden] or NULL */
    const float *c_prev;               /* rows hidden apart, indexed by parent */
    float *c_out;                      /* rows hidden apart */
    float *h_out[NMT_LSTM_GATHERED_OUTS]; /* NULL: unused */
    int32_t ld_h[NMT_LSTM_GATHERED_OUTS];
    int32_t n_copies;
    nmt_lstm_gathered_copy copies[NMT_LSTM_GATHERED_COPIES];
} nmt_lstm_gathered;
void nmt_cpu_lstm_cell_gathered(const nmt_lstm_gathered *g);
nmt_status nmt_cuda_lstm_cell_gathered(const nmt_lstm_gathered *g, void *stream, nmt_error *err);

/* A bidirectional layer's whole recurrence for a batch of 1..NMT_SKINNY_MAX_ROWS
 * sentences (lstm_recurrence.cu), both directions in one launch: for each
 * time step, gates_h[r] = h_prev[r] . w_hh^T summed as one fp32 chain over
 * k from 0 (fmaf, the batch-invariant GEMM's arithmetic: linear_chain.cu),
 * then nmt_cuda_lstm_cell's step with gates_x and b_hh. The same bits as
 * the encoder's per-step pair (nmt_cuda_linear_chain into gates_h, zero
 * gates_h for rows with no predecessor, the cell on a cleared c), so a
 * batch-invariant encoder may run it at a few sentences. Sentences sorted
 * longest first: at time t the rows [0, active(t)) with active(t) the
 * count of src_len > t; forward rows past a sentence's end are not touched,
 * backward rows start at their own last token from a zero state.
 * gates_x[d]: [stride * n, 4 * half], rows t * n + i (w_ih x + b_ih); out:
 * [stride * n, 2 * half], direction d's h at columns d * half, rows never
 * active left as they were; c_final[d]: [n, half], each sentence's last c. */
typedef enum nmt_recurrence_handoff {
    NMT_RECURRENCE_HANDOFF_DEFAULT, /* the library's: ASYNC */
    NMT_RECURRENCE_HANDOFF_BARRIER, /* one cluster barrier a step */
    NMT_RECURRENCE_HANDOFF_ASYNC    /* remote stores counted on mbarriers */
} nmt_recurrence_handoff;
typedef struct nmt_lstm_recurrence {
    int32_t n, stride, half;
    const int32_t *src_len; /* [n], nonincreasing, each in 1..stride */
    const float *gates_x[2], *w_hh[2], *b_hh[2];
    float *out;
    float *c_final[2];
    nmt_recurrence_handoff handoff; /* CUDA: how a step's h reaches every block */
} nmt_lstm_recurrence;
void nmt_cpu_lstm_recurrence(const nmt_lstm_recurrence *a);
/* The sentences running at time t: the prefix of len (sorted longest
 * first) longer than t; 0 outside [0, stride). The twin's, the kernel's
 * and the tests' one rule. */
#ifdef __CUDACC__
#define NMT_LSTM_HOST_DEVICE __host__ __device__
#else
#define NMT_LSTM_HOST_DEVICE
#endif
static inline NMT_LSTM_HOST_DEVICE int32_t nmt_lstm_recurrence_active(const int32_t *len,
                                                                     int32_t n, int32_t stride,
                                                                     int32_t t)
{
    int32_t count = 0;
    if (t >= 0 && t < stride)
        while (count < n && len[count] > t)
            count++;
    return count;
}
/* Whether the CUDA kernel takes a on the current device (a cluster of 8
 * blocks a direction holding w_hh in shared memory: half a multiple of 8
 * up to 256, w_hh 16-byte aligned, compute capability 9.0). */
int nmt_cuda_lstm_recurrence_fits(const nmt_lstm_recurrence *a);
nmt_status nmt_cuda_lstm_recurrence(const nmt_lstm_recurrence *a, void *stream, nmt_error *err);

#ifdef __cplusplus
}
#endif
#endif
