// v05's fetch, which v06 fetches with too: the S x L slices of A and B at column (row) k0, as
// quads of four consecutive elements of a row (load4_or_zero: one 16-byte load in fp32, 8 bytes
// in fp16, or four guarded scalar loads where n % 4 != 0). A's quads are taken along its rows,
// so a warp reads whole sectors, and written transposed into sa (row pitch PITCH floats); B's
// go to sb with one 16-byte store each. Reads L, S and THREADS (matmul_tiles.cuh).
#pragma once

#include "matmul.cuh"

template <int PITCH>
__device__ __forceinline__ void fetch_slices_vectorized(float (*sa)[PITCH], float (*sb)[L], const elem_t* __restrict__ a,
                                                        const elem_t* __restrict__ b, int tile_row, int tile_col,
                                                        int k0, int n, bool vec, int tid)
{
#pragma unroll
    for (int q = tid; q < L * S / 4; q += THREADS) {
        const int m = q / (S / 4), k = (q % (S / 4)) * 4;
        const float4 quad = load4_or_zero(a, tile_row + m, k0 + k, n, vec);
#pragma unroll
        for (int j = 0; j < 4; ++j) sa[k + j][m] = lane_of(quad, j);
    }
#pragma unroll
    for (int q = tid; q < S * L / 4; q += THREADS) {
        const int k = q / (L / 4), m = (q % (L / 4)) * 4;
        st_float4(&sb[k][m], load4_or_zero(b, k0 + k, tile_col + m, n, vec));
    }
}
