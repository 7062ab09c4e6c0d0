// v02 (the homework's qkv_hw2_a, problem 1): each thread computes an M_H x M_W block of h_qkv,
// M_H rows (i_ws) by M_W columns (i_qkv), reading i_model a quad (four floats, one 16-byte load)
// at a time.
//
// A work item is one block; items are numbered row group by row group and spread over the grid by
// a grid-stride loop, so every thread gets the same number of items to within one. Per quad of
// i_model: M_H + M_W vector loads feed 4 * M_H * M_W multiply-adds (qkv_block_sums), against
// v01's 1 + M_W scalar loads for M_W. Neighbouring lanes take neighbouring column groups of one row
// group: their h_in loads are one address (a broadcast), so the L1 serves a warp's h_in quad in one
// wavefront and spends its sectors on the weights, which every warp re-reads (layer 0's 12 KiB of
// w_qkv stays in L1).

#include "qkv.cuh"

#ifndef WARPS
#define WARPS 8
#endif
#ifndef M_H
#define M_H 2
#endif
#ifndef M_W
#define M_W 4
#endif

extern "C" __global__ void __launch_bounds__(32 * WARPS)
qkv_thread_block(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws,
                 int d_qkv, int d_model)
{
    const int col_groups = qkv_col_groups(d_qkv, M_W);
    const int items = qkv_block_items(d_ws, d_qkv, M_H, M_W);
    for (int item = qkv_thread(); item < items; item += qkv_threads()) {
        int i_ws, i_qkv;
        qkv_block_origin(item, col_groups, M_H, M_W, i_ws, i_qkv);
        float acc[M_H][M_W];
        qkv_block_sums<M_H, M_W>(w, h, i_ws, i_qkv, d_ws, d_qkv, d_model, 0, 1, acc);
#pragma unroll
        for (int i = 0; i < M_H; ++i)
#pragma unroll
            for (int j = 0; j < M_W; ++j)
                if (i_ws + i < d_ws && i_qkv + j < d_qkv) out[qkv_at(i_ws + i, i_qkv + j, d_qkv)] = acc[i][j];
    }
}
