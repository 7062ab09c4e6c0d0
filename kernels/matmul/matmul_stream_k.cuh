// Stream-K (Osama, Merrill, Cecka, Garland and Owens, PPoPP 2023) over v17's pipeline, in the
// paper's hybrid form: a persistent grid of G CTAs, as many as the SMs hold at once, first computes
// whole tiles a wave at a time (tile w·G + g for CTA g in wave w: neighbouring CTAs on neighbouring
// tiles, at the same k, so that L2 serves their shared rows of A and columns of B), for all but the
// last full wave (DP_WAVES: floor(T / G) - 1 of T tiles, none below two waves; -DSK_ONLY=1 shares
// every tile); then shares the k slices of the tiles left (between one and two waves' worth) evenly.
// Those slices, in tile order (a tile's slices consecutive, from its partial slice 0), are cut into
// G runs of floor or ceil of their count over G; CTA g walks its run as segments, one a tile it
// touches (matmul_prefetch_vec.cuh's sliced_segment: a segment starting mid-tile needs no guard).
//
// A tile cut between CTAs is finished by the CTA holding its slice 0 (its owner), the one whose run
// ends inside it: a segment that starts mid-tile can only be the first of its CTA's run, so each CTA
// leaves at most one partial tile, in its own slot of the `partials` workspace (a thread's M·N sums
// as float4s, thread-minor: coalesced both ways), and sets its flag with a release store. The owner,
// at the end of its run, adds the slots of CTAs g + 1, g + 2, ... in that order (each after an
// acquire of its flag) until their runs pass the tile's end, resets those flags to 0 for the next
// launch, and stores C. The order of the sums is fixed by G, so a device gives the same bits every
// launch. An owner waits only on later CTAs, all resident (the grid never exceeds what the SMs hold
// at once): no wait can close a cycle; and a later CTA wrote its partial at the start of its shared
// run, while the owner reaches the tile at the end of its own.
//
// Reads BM, BN, S, WM and WN, as matmul_prefetch_vec.cuh (defaults below: 128 x 256 tiles), and SK_ONLY
// and WHOLE_ONLY and MAXNREG (default 0). STREAM_K_KERNEL(name) defines a version's kernel.
#pragma once

// the tiles unless the version or its CONFIG sets them: the sweeps' 128 x 256 with 8 x 16 a lane
#ifndef BM
#define BM 128  // rows of the CTA's tile
#endif
#ifndef BN
#define BN 256  // columns of the CTA's tile
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef S
#define S 8
#endif

#include "matmul_prefetch_vec.cuh"
#include "common/sm90/flag.cuh"

#ifndef SK_ONLY
#define SK_ONLY 0  // 1: no whole-tile waves, every tile's slices shared
#endif
#ifndef WHOLE_ONLY
#define WHOLE_ONLY 0  // 1: every tile whole, a wave at a time (v17's schedule on a persistent grid, for v19's sweep)
#endif
#define PARTIAL_QUADS (WarpLanes::M * WarpLanes::N / 4)  // float4s of one thread's partial sums
#define PARTIAL_FLOATS (PARTIAL_QUADS * 4 * THREADS)  // floats of one CTA's slot

static_assert(WarpLanes::N % 4 == 0, "a float4 of partial sums lies in one row of the lane's outputs");

// where CTA `cta`'s run starts among the `total` slices shared by `ctas` CTAs (cta == ctas: total)
__device__ __forceinline__ int run_begin(int cta, int ctas, int total)
{
    const int base = total / ctas, extra = total % ctas;
    return cta * base + min(cta, extra);
}

// this thread's sums into a slot (L2 only: the slot is read by another SM)
__device__ __forceinline__ void store_partial(float* __restrict__ slot, const float (&acc)[WarpLanes::M][WarpLanes::N])
{
    constexpr int N = WarpLanes::N;
    float4* p = reinterpret_cast<float4*>(slot) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < PARTIAL_QUADS; ++j) {
        const int m = j * 4 / N, c = j * 4 % N;
        __stcg(p + j * THREADS, make_float4(acc[m][c], acc[m][c + 1], acc[m][c + 2], acc[m][c + 3]));
    }
}

// a slot's sums added into this thread's (read past L1, which may hold an earlier launch's slot)
__device__ __forceinline__ void add_partial(float (&acc)[WarpLanes::M][WarpLanes::N], const float* __restrict__ slot)
{
    constexpr int N = WarpLanes::N;
    const float4* p = reinterpret_cast<const float4*>(slot) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < PARTIAL_QUADS; ++j) {
        const int m = j * 4 / N, c = j * 4 % N;
        const float4 v = __ldcg(p + j * THREADS);
        acc[m][c] += v.x;
        acc[m][c + 1] += v.y;
        acc[m][c + 2] += v.z;
        acc[m][c + 3] += v.w;
    }
}

// CTA blockIdx.x's run of the grid's share, the loop compiled for one path (VEC: n % 4 == 0)
template <bool VEC>
__device__ __forceinline__ void stream_k_run(float* smem, const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                             elem_t* __restrict__ c, int n, float* __restrict__ partials,
                                             u32* __restrict__ flags)
{
    const int tiles_x = (n + BN - 1) / BN;
    const int tiles = tiles_x * ((n + BM - 1) / BM);
    const int slices = (n + S - 1) / S;
    const int ctas = gridDim.x, cta = blockIdx.x;
    // whole tiles, a wave at a time
    const int whole = WHOLE_ONLY ? tiles : SK_ONLY || tiles / ctas < 2 ? 0 : (tiles / ctas - 1) * ctas;
    for (int tile = cta; tile < whole; tile += ctas) {
        const int tile_row = tile / tiles_x * BM, tile_col = tile % tiles_x * BN;
        float acc[WarpLanes::M][WarpLanes::N];
        __syncthreads();  // the previous tile's last reads of the stages are done
        sliced_segment<VEC>(smem, a, b, n, tile_row, tile_col, 0, slices, acc);
        warp_lanes(threadIdx.x).store(c, acc, tile_row, tile_col, n, VEC);
    }
    // the slices of the tiles left, shared
    const int total = (tiles - whole) * slices;  // < 2^31: the host checks
    const int end = run_begin(cta + 1, ctas, total);
    for (int it = run_begin(cta, ctas, total); it < end;) {
        const int tile = whole + it / slices;
        const int s0 = it - (tile - whole) * slices;
        const int s1 = min(slices, s0 + (end - it));
        const int tile_row = tile / tiles_x * BM, tile_col = tile % tiles_x * BN;
        float acc[WarpLanes::M][WarpLanes::N];
        __syncthreads();  // the previous segment's last reads of the stages are done
        sliced_segment<VEC>(smem, a, b, n, tile_row, tile_col, s0, s1, acc);
        if (s0 > 0) {  // the first segment of the run, a later part of a tile: for its owner
            store_partial(partials + (size_t)cta * PARTIAL_FLOATS, acc);
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) st_release_gpu_u32(flags + cta, 1u);
        } else {  // the tile's owner: the later parts, CTA by CTA, then C
            const int tile_end = (tile - whole + 1) * slices;  // in the shared slices' count
            int h = cta + 1;
            for (int covered = it + s1; covered < tile_end; ++h) {
                if (threadIdx.x == 0)
                    while (ld_acquire_gpu_u32(flags + h) == 0u) __nanosleep(100);
                __syncthreads();
                add_partial(acc, partials + (size_t)h * PARTIAL_FLOATS);
                covered = run_begin(h + 1, ctas, total);
            }
            if (h > cta + 1) {
                __syncthreads();  // every thread has read the slots
                for (int f = cta + 1 + threadIdx.x; f < h; f += THREADS) flags[f] = 0u;
            }
            warp_lanes(threadIdx.x).store(c, acc, tile_row, tile_col, n, VEC);
        }
        it += s1 - s0;
    }
}

__device__ __forceinline__ void stream_k_tiles(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                               elem_t* __restrict__ c, int n, float* __restrict__ partials,
                                               u32* __restrict__ flags)
{
    __shared__ __align__(16) float smem[2 * STAGE_FLOATS];
    if ((n & 3) == 0) {
        stream_k_run<true>(smem, a, b, c, n, partials, flags);
    } else {
        stream_k_run<false>(smem, a, b, c, n, partials, flags);
    }
}

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

#ifndef MAXNREG
#define MAXNREG 0  // > 0: the kernel's registers capped there (__maxnreg__) instead of the launch bounds' cap
#endif
#if MAXNREG
#define STREAM_K_BOUNDS __maxnreg__(MAXNREG)
#else
#define STREAM_K_BOUNDS __launch_bounds__(THREADS, CTAS_PER_SM)
#endif

// the version's kernel, `name`: one CTA's run of the grid's share
#define STREAM_K_KERNEL(name)                                                                                    \
    extern "C" __global__ void STREAM_K_BOUNDS                                                                   \
    name(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n,              \
         float* __restrict__ partials, u32* __restrict__ flags)                                                  \
    {                                                                                                            \
        stream_k_tiles(a, b, c, n, partials, flags);                                                             \
    }
