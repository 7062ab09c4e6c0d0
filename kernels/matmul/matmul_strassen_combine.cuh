// v29: v28's products stored, each into a block of its own, and C written once from them by a
// combining pass: no reductions, no zeroed C, and the same bits from every call.
//
// - strassen_stored_tile is v28's product tile with a plain epilogue: product r's tile stored into
//   block r of a scratch matrix of 4h rows and n columns (block r at rows (r / 2)·h, columns (r % 2)·h,
//   the quadrants' layout continued), as v17 stores C.
// - strassen_combine_of reads the seven blocks at one position, float4 a thread and a step, and writes
//   the four quadrants of C there: C11 = M1 + M4 - M5 + M7, C12 = M3 + M5, C21 = M2 + M4,
//   C22 = M1 - M2 + M3 + M6, each sum in that order.
//
// Reads what matmul_strassen_sums.cuh reads; fp32 only.
#pragma once

#include "matmul_strassen_sums.cuh"

// product blockIdx.z's tile into block blockIdx.z of m (4h x n)
__device__ __forceinline__ void strassen_stored_tile(const float* __restrict__ a, const float* __restrict__ ta,
                                                     const float* __restrict__ b, const float* __restrict__ tb,
                                                     float* __restrict__ m, int n)
{
    const int h = n / 2, r = blockIdx.z;
    float* block = m + at(quadrant_row(r, h), quadrant_col(r, h), n);
    strassen_fed_tile_with(a, ta, b, tb, n, [&](const float (&acc)[WarpLanes::M][WarpLanes::N], const WarpLanes& lanes,
                                                const StrassenProduct&, int tile_row, int tile_col) {
        lanes.store(block, acc, tile_row, tile_col, n, true);
    });
}

// region key: v29's pass: C written once from the seven stored products
// C's four quadrants from the seven products in m
__device__ __forceinline__ void strassen_combine_of(const float* __restrict__ m, float* __restrict__ c, int n)
{
    const int h = n / 2, quads = h / 4;
    const u64 total = (u64)h * (u64)quads;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const int row = (int)(i / quads), col = (int)(i % quads) * 4;
        float4 p[7];
#pragma unroll
        for (int r = 0; r < 7; ++r) p[r] = ld_float4(m + at(quadrant_row(r, h) + row, quadrant_col(r, h) + col, n));
        st_float4(c + at(row, col, n), add4(add4(add4(p[0], p[3], 1.0f), p[4], -1.0f), p[6], 1.0f));
        st_float4(c + at(row, col + h, n), add4(p[2], p[4], 1.0f));
        st_float4(c + at(row + h, col, n), add4(p[1], p[3], 1.0f));
        st_float4(c + at(row + h, col + h, n), add4(add4(add4(p[0], p[1], -1.0f), p[2], 1.0f), p[5], 1.0f));
    }
}
// endregion
