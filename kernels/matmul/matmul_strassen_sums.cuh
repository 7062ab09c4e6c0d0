// v28: v27's seven products with their operand sums formed first, by a kernel of their own, so that
// every product is v17's loop on one-term operands (matmul_strassen.cuh's product_tile fed by a plain
// SliceLoader).
//
// - strassen_sums reads each position of A's four quadrants once and writes the five sums of A the
//   products take (blockIdx.y 0), and the same for B (blockIdx.y 1): blocks of h x h in a scratch
//   matrix of 3h rows and n columns (block q at rows (q / 2)·h, columns (q % 2)·h, the quadrants'
//   layout continued), float4 a thread and a step, the grid striding over the quadrant.
//     A: 0 A11 + A22, 1 A21 + A22, 2 A11 + A12, 3 A21 - A11, 4 A12 - A22
//     B: 0 B11 + B22, 1 B12 - B22, 2 B21 - B11, 3 B11 + B12, 4 B21 + B22
// - strassen_fed_tile is product blockIdx.z's tile: each operand a quadrant of the input or a block
//   of the sums (strassen_feed), its result added into C's quadrants as in v27.
//
// Reads what matmul_strassen.cuh reads; fp32 only.
#pragma once

#include "matmul_strassen.cuh"

// where product r's operands are: a block of the sums (true) or a quadrant of the input, and which
struct StrassenFeed {
    bool a_sum;
    int qa;
    bool b_sum;
    int qb;
};

__device__ __forceinline__ StrassenFeed strassen_feed(int r)
{
    switch (r) {
    case 0: return {true, 0, true, 0};  // M1 = (A11 + A22)(B11 + B22)
    case 1: return {true, 1, false, 0};  // M2 = (A21 + A22) B11
    case 2: return {false, 0, true, 1};  // M3 = A11 (B12 - B22)
    case 3: return {false, 3, true, 2};  // M4 = A22 (B21 - B11)
    case 4: return {true, 2, false, 3};  // M5 = (A11 + A12) B22
    case 5: return {true, 3, true, 3};  // M6 = (A21 - A11)(B11 + B12)
    default: return {true, 4, true, 4};  // M7 = (A12 - A22)(B21 + B22)
    }
}

// region key: v28's pass: the ten operand sums, each position of the quadrants read once
// the ten operand sums into ta and tb (3h x n each)
__device__ __forceinline__ void strassen_sums_of(const float* __restrict__ a, const float* __restrict__ b,
                                                 float* __restrict__ ta, float* __restrict__ tb, int n)
{
    const int h = n / 2, quads = h / 4;
    const bool of_b = blockIdx.y == 1;
    const float* __restrict__ x = of_b ? b : a;
    float* __restrict__ t = of_b ? tb : ta;
    const u64 total = (u64)h * (u64)quads;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const int row = (int)(i / quads), col = (int)(i % quads) * 4;
        const float4 x11 = ld_float4(x + at(row, col, n)), x12 = ld_float4(x + at(row, col + h, n));
        const float4 x21 = ld_float4(x + at(row + h, col, n)), x22 = ld_float4(x + at(row + h, col + h, n));
        float4 s[5];
        if (!of_b) {
            s[0] = add4(x11, x22, 1.0f);
            s[1] = add4(x21, x22, 1.0f);
            s[2] = add4(x11, x12, 1.0f);
            s[3] = add4(x21, x11, -1.0f);
            s[4] = add4(x12, x22, -1.0f);
        } else {
            s[0] = add4(x11, x22, 1.0f);
            s[1] = add4(x12, x22, -1.0f);
            s[2] = add4(x21, x11, -1.0f);
            s[3] = add4(x11, x12, 1.0f);
            s[4] = add4(x21, x22, 1.0f);
        }
#pragma unroll
        for (int q = 0; q < 5; ++q) st_float4(t + at(quadrant_row(q, h) + row, quadrant_col(q, h) + col, n), s[q]);
    }
}

// endregion

// the sums' pass as v28's and v29's hosts launch it: (h²/4 / 256, 2) blocks of 256 threads
extern "C" __global__ void __launch_bounds__(256)
strassen_sums(const elem_t* __restrict__ a, const elem_t* __restrict__ b, float* __restrict__ ta, float* __restrict__ tb,
              int n)
{
    strassen_sums_of(a, b, ta, tb, n);
}

// product blockIdx.z's tile, its operands read from the inputs' quadrants and the sums' blocks, handed
// to `epilogue(acc, lanes, product, tile_row, tile_col)`
template <class Epilogue>
__device__ __forceinline__ void strassen_fed_tile_with(const float* __restrict__ a, const float* __restrict__ ta,
                                                       const float* __restrict__ b, const float* __restrict__ tb, int n,
                                                       Epilogue epilogue)
{
    __shared__ __align__(16) float smem[2 * STAGE_FLOATS];
    const StrassenProduct p = strassen_product(blockIdx.z);
    const StrassenFeed f = strassen_feed(blockIdx.z);
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const WarpLanes lanes = warp_lanes(threadIdx.x);
    const QuadPlaces places(threadIdx.x);
    const VecOffsets o = vec_offsets(lanes, places);

    SliceLoader<true> ld;
    point_term(ld, f.a_sum ? ta : a, f.b_sum ? tb : b, places, f.qa, f.qb, tile_row, tile_col, n);
    product_tile(smem, ld, o, n / 2 / S, [&](const float (&acc)[WarpLanes::M][WarpLanes::N]) {
        epilogue(acc, lanes, p, tile_row, tile_col);
    });
}

// v28: the tile added into its quadrants of C (zeroed by the caller)
__device__ __forceinline__ void strassen_fed_tile(const float* __restrict__ a, const float* __restrict__ ta,
                                                  const float* __restrict__ b, const float* __restrict__ tb,
                                                  float* __restrict__ c, int n)
{
    strassen_fed_tile_with(a, ta, b, tb, n, [&](const float (&acc)[WarpLanes::M][WarpLanes::N], const WarpLanes& lanes,
                                                const StrassenProduct& p, int tile_row, int tile_col) {
        add_products(c, acc, lanes, p, tile_row, tile_col, n);
    });
}
