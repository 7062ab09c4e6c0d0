// v03 (the homework's problem 2): M_D lanes share each M_H x M_W block of v02, each summing every
// M_D-th quad of i_model, and their partial sums are combined one of three ways (REDUCE):
//   0: atomicAdd of every partial sum into h_qkv (zeroed by the host before the launch);
//   1: through shared memory: each lane writes its partial sums, the group's first lane adds them;
//   2: warp shuffles: a butterfly of __shfl_xor_sync leaves every lane of the group with the whole
//      sums, and the group's lanes share the stores (lane p stores the outputs o with o % M_D == p).
// The M_D lanes of a group are neighbours in one warp and read neighbouring quads (16 * M_D
// contiguous bytes of each row). The loop is warp-uniform: a warp takes 32 / M_D items a round,
// and a lane whose item is past the end computes on the last rows and stores nothing, so every
// lane reaches every shuffle.

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
#ifndef M_D
#define M_D 4
#endif
#ifndef REDUCE
#define REDUCE 2
#endif

#if REDUCE == 1
#define PARTIALS_SMEM (WARPS * 32 * M_H * M_W)
#else
#define PARTIALS_SMEM 1
#endif

extern "C" __global__ void __launch_bounds__(32 * WARPS)
qkv_split_model(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws,
                int d_qkv, int d_model)
{
    static_assert(32 % M_D == 0, "M_D must divide the warp");
    __shared__ float partials[PARTIALS_SMEM];
    const int col_groups = qkv_col_groups(d_qkv, M_W);
    const int items = qkv_block_items(d_ws, d_qkv, M_H, M_W);
    const int lane = threadIdx.x % 32, sub = lane / M_D, part = lane % M_D;
    const int per_warp = 32 / M_D;
    const int warp = qkv_thread() / 32, warps = qkv_threads() / 32;
    for (int first = warp * per_warp; first < items; first += warps * per_warp) {
        const int item = min(first + sub, items - 1);
        const bool live = first + sub < items;
        int i_ws, i_qkv;
        qkv_block_origin(item, col_groups, M_H, M_W, i_ws, i_qkv);
        float acc[M_H][M_W];
        qkv_block_sums<M_H, M_W>(w, h, i_ws, i_qkv, d_ws, d_qkv, d_model, part, M_D, acc);
#if REDUCE == 0
#pragma unroll
        for (int i = 0; i < M_H; ++i)
#pragma unroll
            for (int j = 0; j < M_W; ++j)
                if (live && i_ws + i < d_ws && i_qkv + j < d_qkv) atomicAdd(out + qkv_at(i_ws + i, i_qkv + j, d_qkv), acc[i][j]);
#elif REDUCE == 1
        float* mine = partials + (threadIdx.x * M_H * M_W);
#pragma unroll
        for (int i = 0; i < M_H; ++i)
#pragma unroll
            for (int j = 0; j < M_W; ++j) mine[i * M_W + j] = acc[i][j];
        __syncwarp();
        if (part == 0) {
#pragma unroll
            for (int p = 1; p < M_D; ++p)
#pragma unroll
                for (int i = 0; i < M_H; ++i)
#pragma unroll
                    for (int j = 0; j < M_W; ++j) acc[i][j] += mine[p * M_H * M_W + i * M_W + j];
#pragma unroll
            for (int i = 0; i < M_H; ++i)
#pragma unroll
                for (int j = 0; j < M_W; ++j)
                    if (live && i_ws + i < d_ws && i_qkv + j < d_qkv) out[qkv_at(i_ws + i, i_qkv + j, d_qkv)] = acc[i][j];
        }
        __syncwarp();
#else
#pragma unroll
        for (int off = M_D / 2; off > 0; off /= 2)
#pragma unroll
            for (int i = 0; i < M_H; ++i)
#pragma unroll
                for (int j = 0; j < M_W; ++j) acc[i][j] += __shfl_xor_sync(0xffffffffu, acc[i][j], off);
#pragma unroll
        for (int i = 0; i < M_H; ++i)
#pragma unroll
            for (int j = 0; j < M_W; ++j)
                if ((i * M_W + j) % M_D == part && live && i_ws + i < d_ws && i_qkv + j < d_qkv)
                    out[qkv_at(i_ws + i, i_qkv + j, d_qkv)] = acc[i][j];
#endif
    }
}
