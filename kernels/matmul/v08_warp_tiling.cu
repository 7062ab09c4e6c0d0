// v08: v07's pipeline with the outputs dealt out by warp: each warp owns a WM x WN region of the
// block's tile, and its 32 lanes, 8 rows x 4 columns of 4 x 4 micro-tiles, cover that region
// (WM/32) x (WN/16) times.
//
// In v07 a warp's 32 threads are two rows of 16 in the (L/V) x (L/V) grid: for each k they need
// 2 x 8 = 16 values of A and the block's whole row of 128 values of B, 144 distinct shared
// values for 32 x 64 products. Here the warp's region is compact (64 x 32 by default): 64 values
// of A and 32 of B a step, 96 for the same products, so fewer shared-memory wavefronts per FMA
// and a footprint that later versions can hand to a warp-wide instruction. Lane l sits at row
// 4*(l/4), column 4*(l%4) of a 32 x 16 sub-tile of its warp's region; its rows are 32 apart and
// its columns 16 apart (store_chunks). Its four rows of A at one k fall in two rows of sA four
// apart within a quarter-warp (16 banks apart); its B reads are four contiguous float4s per
// quarter-warp. Slices, stages and barriers are matmul_double_buffer.cuh's.

#include "matmul.cuh"

#ifndef L
#define L 128
#endif
#ifndef S
#define S 8
#endif
#ifndef WM
#define WM 64  // rows of a warp's region
#endif
#ifndef WN
#define WN 32  // columns of a warp's region
#endif
#define THREADS ((L / WM) * (L / WN) * 32)

#include "matmul_double_buffer.cuh"

struct WarpTiledThreads {
    static constexpr int M = WM / 32 * 4, N = WN / 16 * 4;  // a lane's outputs
    int row0, col0;  // the lane's first row and column in the block's tile

    __device__ __forceinline__ void compute(const elem_t (*sa)[S + PAD_K], const elem_t (*sb)[L], float (&acc)[M][N]) const
    {
#pragma unroll
        for (int k4 = 0; k4 < S; k4 += 4) {
            float4 arows[M];
#pragma unroll
            for (int mi = 0; mi < M / 4; ++mi)
#pragma unroll
                for (int i = 0; i < 4; ++i) arows[mi * 4 + i] = lds4(&sa[row0 + mi * 32 + i][k4]);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float av[M], bv[N];
#pragma unroll
                for (int r = 0; r < M; ++r) av[r] = lane_of(arows[r], kk);
#pragma unroll
                for (int ni = 0; ni < N / 4; ++ni) put4(bv, ni * 4, lds4(&sb[k4 + kk][col0 + ni * 16]));
                outer_product(acc, av, bv);
            }
        }
    }

    __device__ __forceinline__ void store(elem_t* c, const float (&acc)[M][N], int tile_row, int tile_col, int n,
                                          bool vec) const
    {
        store_chunks(c, acc, tile_row + row0, 32, tile_col + col0, 16, n, vec);
    }
};

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_warp_tiling(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (L / WN), warp_col = warp % (L / WN);
    double_buffered_tile(a, b, c, n, WarpTiledThreads{warp_row * WM + (lane / 4) * 4, warp_col * WN + (lane % 4) * 4});
}
