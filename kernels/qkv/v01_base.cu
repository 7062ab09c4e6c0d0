// v01 (the homework's qkv_base): each thread computes M_W outputs of one row of h_qkv.
//
// A work item is one row i_ws and M_W consecutive columns i_qkv of it; items are numbered row by
// row and spread over the grid by a grid-stride loop (one block of WARPS warps per SM, as the
// homework launches). For each i_model the thread loads h_in[i_ws][i_model] once and the M_W
// weights w_qkv[i_qkv + j][i_model] one by one: 1 + M_W loads for M_W multiply-adds, the
// homework's [4/m_w + 4 + 1] cycles of dispatch an iteration. Neighbouring lanes take
// neighbouring column groups of one row: their h_in loads are one address (a broadcast) and their
// weight loads are d_model floats apart (one sector each).

#include "qkv.cuh"

#ifndef WARPS
#define WARPS 8
#endif
#ifndef M_W
#define M_W 4
#endif

extern "C" __global__ void __launch_bounds__(32 * WARPS)
qkv_base(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws, int d_qkv,
         int d_model)
{
    const int groups = (d_qkv + M_W - 1) / M_W;
    const int items = d_ws * groups;
    for (int item = qkv_thread(); item < items; item += qkv_threads()) {
        const int i_ws = item / groups;
        const int i_qkv = (item - i_ws * groups) * M_W;
        float acc[M_W];
#pragma unroll
        for (int j = 0; j < M_W; ++j) acc[j] = 0.0f;
        for (int k = 0; k < d_model; ++k) {
            const float x = h[qkv_at(i_ws, k, d_model)];
#pragma unroll
            for (int j = 0; j < M_W; ++j)
                if (i_qkv + j < d_qkv) acc[j] = fmaf(w[qkv_at(i_qkv + j, k, d_model)], x, acc[j]);
        }
#pragma unroll
        for (int j = 0; j < M_W; ++j)
            if (i_qkv + j < d_qkv) out[qkv_at(i_ws, i_qkv + j, d_qkv)] = acc[j];
    }
}
