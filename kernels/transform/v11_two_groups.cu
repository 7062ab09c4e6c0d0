// v11: v10 with two consecutive groups per lane per step: one 16-byte shared-memory load and
// store per lane in bf16 (two 16-byte ones in fp32), half as many steps per tile.
//
// v10's lanes take one group (8 bytes in bf16) per step, so a bf16 tile of 8 KB takes four steps
// of 8-byte accesses, each with its own address arithmetic, loop test and look-back shuffles of
// one group. Here lane t of a step takes groups 2t and 2t + 1 (transform_group8 in
// transform.cuh): the groups 16 elements back are the same two of lane t - 2, so the shuffle
// distance is 2 and a warp covers eight whole 32-blocks. The ring, the bulk copies, the
// remaining groups by the last block and the one-launch sum are v07's; the bf16 rounding is
// v10's (TRANSFORM_HW_CVT).

#define TRANSFORM_FAST_MATH 1
#define TRANSFORM_HW_CVT 1
#include "transform.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#ifndef STAGES
#define STAGES 2
#endif
#ifndef TILE_BYTES
#define TILE_BYTES 8192
#endif
#define THREADS 256

#define TILE (TILE_BYTES / (u32)sizeof(elem_t))  // elements per tile
#define TILE_GROUPS (TILE / 4)
static_assert(TILE_GROUPS % (2 * THREADS) == 0, "a tile is a whole number of steps of the block");
static_assert(STAGES * TILE_BYTES <= 47 * 1024, "the ring and the barriers are static shared memory (48 KB)");
static_assert(STAGES >= 2, "a stage is refilled after the next tile's wait: one stage would wait for itself");

extern "C" __global__ void __launch_bounds__(THREADS)
transform_two_groups(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials,
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
        for (u32 r = 0; r < TILE_GROUPS / (2 * THREADS); ++r) {
            const u32 g = 2 * (r * THREADS + threadIdx.x);
            const group8 f = transform_group8(load8(&ring[s][4 * g]), g);
            store8(&ring[s][4 * g], f);
            if (f.lo.b > 0.5f) acc += f.lo.a;
            if (f.hi.b > 0.5f) acc += f.hi.a;
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
