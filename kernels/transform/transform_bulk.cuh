// v07's kernel, x and y moved through a ring of shared-memory tiles by the bulk-copy unit (what
// and why: v07_bulk.cu); v08 launches it, v10 builds it with TRANSFORM_HW_CVT, v09 and v11 build
// it with hooks of their own.
//
// Hooks, each v07's unless the version defines it before including this header:
//   BULK_KERNEL              the kernel's name: transform_bulk.
//   BULK_TILE(tile, acc)     the block's pass over one tile in shared memory, transformed in
//                            place, the thread's sin terms added to the float acc:
//                            bulk_tile_groups, a group per lane per step (v09's own refill
//                            keeps it; v11's two groups per lane replace it).
//   BULK_REFILL_BEFORE_WAIT  statements of every thread at the top of step k, before the wait for
//                            tile k: none (v09 refills there).
//   BULK_REFILL_AFTER_STORE  thread 0's statements after it committed tile k's store: the refill
//                            of tile k-1's stage with tile k-1+STAGES once tile k-1's store has
//                            read it (wait_group.read 1), which needs STAGES >= 2.
// The refill hooks see the step k, the block's tile count mine and fill(k), which has thread 0
// load the block's k-th tile into its stage.
//
// Changed in place only with the PTX of every build of every version that builds it unchanged
// (tools/same_ptx.py; `report same-code` proves it for the recorded runs).
#pragma once

#define TRANSFORM_FAST_MATH 1
#include "transform.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#include "transform_tiles.cuh"
static_assert(TILE_GROUPS % THREADS == 0, "a tile is a whole number of steps of the block");

#ifndef BULK_KERNEL
#define BULK_KERNEL transform_bulk
#endif

// v07's pass over a tile: a group per lane per step, v02's look-back shuffle (a tile is a whole
// number of 32-blocks, so a group's place in its 32-block is its place in the tile).
__device__ __forceinline__ void bulk_tile_groups(elem_t* tile, float& acc)
{
#pragma unroll
    for (u32 r = 0; r < TILE_GROUPS / THREADS; ++r) {
        const u32 g = r * THREADS + threadIdx.x;
        const group4 f = transform_group(load4(&tile[4 * g]), g);
        store4(&tile[4 * g], f);
        if (f.b > 0.5f) acc += f.a;
    }
}
#ifndef BULK_TILE
#define BULK_TILE bulk_tile_groups
#endif

#ifndef BULK_REFILL_BEFORE_WAIT
#define BULK_REFILL_BEFORE_WAIT
#endif
#ifndef BULK_REFILL_AFTER_STORE
static_assert(STAGES >= 2, "a stage is refilled after the next tile's wait: one stage would wait for itself");
#define BULK_REFILL_AFTER_STORE                                                          \
    if (k >= 1 && k - 1 + STAGES < mine) {                                               \
        bulk_wait_read<1>(); /* the previous tile's store has read its stage */          \
        fill(k - 1 + STAGES);                                                            \
    }
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
BULK_KERNEL(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials,
            u32* __restrict__ ticket, double* __restrict__ out, u64 n)
{
    __shared__ __align__(128) elem_t ring[STAGES][TILE];
    __shared__ __align__(8) u64 full[STAGES];

    const u64 tiles = n / TILE;
    const u32 mine = tiles > blockIdx.x ? (u32)((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x) : 0u;
    auto tile_of = [&](u32 k) { return (u64)blockIdx.x + (u64)k * gridDim.x; };
    auto fill = [&](u32 k) {  // thread 0: the k-th tile of this block into its stage
        const u32 s = k % STAGES, bar = smem_u32(&full[s]);
        mbar_arrive_expect_tx(bar, TILE_BYTES);
        bulk_load(smem_u32(ring[s]), x + tile_of(k) * TILE, TILE_BYTES, bar);
    };

    if (threadIdx.x == 0) {
        for (u32 s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
        fence_mbarrier_init();
        for (u32 k = 0; k < STAGES && k < mine; ++k) fill(k);
    }
    __syncthreads();

    float acc = 0.0f;
    for (u32 k = 0; k < mine; ++k) {
        const u32 s = k % STAGES;
        BULK_REFILL_BEFORE_WAIT
        mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1u);
        BULK_TILE(ring[s], acc);
        fence_proxy_async_shared();
        __syncthreads();
        if (threadIdx.x == 0) {
            bulk_store(y + tile_of(k) * TILE, smem_u32(ring[s]), TILE_BYTES);
            bulk_commit();
            BULK_REFILL_AFTER_STORE
        }
    }

    const u64 groups = (n >> 5) << 3;
    if (blockIdx.x == gridDim.x - 1) acc += block_loop(x, y, tiles * TILE_GROUPS, groups);
    if (threadIdx.x == 0) bulk_wait_read<0>();  // the ring stays until every store has read it
    finish_grid(x, y, partials, ticket, out, n, groups, acc);
}
