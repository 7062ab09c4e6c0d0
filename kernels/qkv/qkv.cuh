// Device helpers shared by qkv's versions: h_qkv[i_ws][i_qkv] = sum over i_model of
// w_qkv[i_qkv][i_model] * h_in[i_ws][i_model], every matrix row-major fp32 (the GEMM
// C = A * B^T with A = h_in, M = d_ws rows, B = w_qkv, N = d_qkv rows, both K = d_model long).
//
// A version's kernel takes (w, h, out, d_ws, d_qkv, d_model). Offsets are 64-bit (d_ws * d_qkv
// passes 2^31 long before the kernels' int indices do). "Quads": four consecutive floats along
// i_model, one 16-byte load; the host refuses a d_model that is not a multiple of 4, so every row
// starts 16-byte aligned and a row is a whole number of quads.
//
// Append-only once a version is recorded: a different behaviour gets a new helper with its own name.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ u64 qkv_at(int row, int col, int cols) { return (u64)row * (u64)cols + (u64)col; }

// quad q (floats 4q .. 4q+3) of row `row` of a row-major matrix `cols` floats wide
__device__ __forceinline__ float4 qkv_quad(const float* __restrict__ m, int row, int q, int cols)
{
    return *reinterpret_cast<const float4*>(m + qkv_at(row, 4 * q, cols));
}

__device__ __forceinline__ float qkv_dot4(float4 a, float4 b, float acc)
{
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

// the thread's index in the grid and the grid's size in threads, for the grid-stride loops over
// work items that spread a shape's items evenly over however many threads were launched
__device__ __forceinline__ int qkv_thread() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int qkv_threads() { return gridDim.x * blockDim.x; }

// The M_H x M_W outputs of one work item of the blocked versions: rows i_ws .. i_ws + M_H - 1 of
// h_qkv and columns i_qkv .. i_qkv + M_W - 1, summed over the quads q = first, first + step, ...
// of i_model (step 1: the whole sum; the split versions give each of step threads its share).
// Rows and columns past the matrix are read as the last one (their outputs are never stored), so
// the loop has no guard in it. M_H + M_W quad loads feed 4 * M_H * M_W multiply-adds.
template <int MH, int MW>
__device__ __forceinline__ void qkv_block_sums(const float* __restrict__ w, const float* __restrict__ h,
                                               int i_ws, int i_qkv, int d_ws, int d_qkv, int d_model,
                                               int first, int step, float (&acc)[MH][MW])
{
    const float* hr[MH];
    const float* wr[MW];
#pragma unroll
    for (int i = 0; i < MH; ++i) hr[i] = h + qkv_at(min(i_ws + i, d_ws - 1), 0, d_model);
#pragma unroll
    for (int j = 0; j < MW; ++j) wr[j] = w + qkv_at(min(i_qkv + j, d_qkv - 1), 0, d_model);
#pragma unroll
    for (int i = 0; i < MH; ++i)
#pragma unroll
        for (int j = 0; j < MW; ++j) acc[i][j] = 0.0f;
    for (int q = first; q < d_model / 4; q += step) {
        float4 hv[MH], wv[MW];
#pragma unroll
        for (int i = 0; i < MH; ++i) hv[i] = *reinterpret_cast<const float4*>(hr[i] + 4 * q);
#pragma unroll
        for (int j = 0; j < MW; ++j) wv[j] = *reinterpret_cast<const float4*>(wr[j] + 4 * q);
#pragma unroll
        for (int i = 0; i < MH; ++i)
#pragma unroll
            for (int j = 0; j < MW; ++j) acc[i][j] = qkv_dot4(hv[i], wv[j], acc[i][j]);
    }
}

// The work items of the blocked versions (v02 on): M_H x M_W blocks of h_qkv numbered row group by row
// group; qkv_block_origin gives an item's first row and column.
__device__ __forceinline__ int qkv_col_groups(int d_qkv, int mw) { return (d_qkv + mw - 1) / mw; }
__device__ __forceinline__ int qkv_block_items(int d_ws, int d_qkv, int mh, int mw)
{
    return ((d_ws + mh - 1) / mh) * qkv_col_groups(d_qkv, mw);
}
__device__ __forceinline__ void qkv_block_origin(int item, int col_groups, int mh, int mw, int& i_ws, int& i_qkv)
{
    const int rg = item / col_groups;
    i_ws = rg * mh;
    i_qkv = (item - rg * col_groups) * mw;
}

template <int R, int C>
__device__ __forceinline__ void qkv_zero(float (&acc)[R][C])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < C; ++j) acc[i][j] = 0.0f;
}
