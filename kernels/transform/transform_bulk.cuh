// v07's kernel, x and y moved through a ring of shared-memory tiles by the bulk-copy unit (what
// and why: v07_bulk.cu); v08 and v09 launch it, v10 builds it with TRANSFORM_HW_CVT.
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
static_assert(STAGES >= 2, "a stage is refilled after the next tile's wait: one stage would wait for itself");

extern "C" __global__ void __launch_bounds__(THREADS)
transform_bulk(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials,
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
        mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1u);
#pragma unroll
        for (u32 r = 0; r < TILE_GROUPS / THREADS; ++r) {
            const u32 g = r * THREADS + threadIdx.x;
            const group4 f = transform_group(load4(&ring[s][4 * g]), g);
            store4(&ring[s][4 * g], f);
            if (f.b > 0.5f) acc += f.a;
        }
        fence_proxy_async_shared();
        __syncthreads();
        if (threadIdx.x == 0) {
            bulk_store(y + tile_of(k) * TILE, smem_u32(ring[s]), TILE_BYTES);
            bulk_commit();
            if (k >= 1 && k - 1 + STAGES < mine) {
                bulk_wait_read<1>();  // the previous tile's store has read its stage
                fill(k - 1 + STAGES);
            }
        }
    }

    const u64 groups = (n >> 5) << 3;
    if (blockIdx.x == gridDim.x - 1) acc += block_loop(x, y, tiles * TILE_GROUPS, groups);
    if (threadIdx.x == 0) bulk_wait_read<0>();  // the ring stays until every store has read it
    finish_grid(x, y, partials, ticket, out, n, groups, acc);
}
