// v11: v10 with two consecutive groups per lane per step: one 16-byte shared-memory load and
// store per lane in bf16 (two 16-byte ones in fp32), half as many steps per tile.
//
// v10's lanes take one group (8 bytes in bf16) per step, so a bf16 tile of 8 KB takes four steps
// of 8-byte accesses, each with its own address arithmetic, loop test and look-back shuffles of
// one group. Here lane t of a step takes groups 2t and 2t + 1 (transform_group8 in
// transform.cuh): the groups 16 elements back are the same two of lane t - 2, so the shuffle
// distance is 2 and a warp covers eight whole 32-blocks. The ring, the bulk copies, the
// remaining groups by the last block and the one-launch sum are v07's; the bf16 rounding is
// v10's (TRANSFORM_HW_CVT). The kernel is v07's (transform_bulk.cuh) under its own name, its tile
// pass (the BULK_TILE hook) the one below.

#define TRANSFORM_FAST_MATH 1
#define TRANSFORM_HW_CVT 1
#include "transform.cuh"

#ifndef STAGES
#define STAGES 2
#endif
#define BULK_KERNEL transform_two_groups
// the kernel's pass over a tile, defined below: it reads TILE_GROUPS and THREADS, set by transform_bulk.cuh
__device__ __forceinline__ void tile_two_groups(elem_t* tile, float& acc);
#define BULK_TILE tile_two_groups
#include "transform_bulk.cuh"

static_assert(TILE_GROUPS % (2 * THREADS) == 0, "a tile is a whole number of steps of the block");

// the block's pass over a tile: lane t of step r takes groups 2(r·THREADS + t) and the one after
__device__ __forceinline__ void tile_two_groups(elem_t* tile, float& acc)
{
#pragma unroll
    for (u32 r = 0; r < TILE_GROUPS / (2 * THREADS); ++r) {
        const u32 g = 2 * (r * THREADS + threadIdx.x);
        const group8 f = transform_group8(load8(&tile[4 * g]), g);
        store8(&tile[4 * g], f);
        if (f.lo.b > 0.5f) acc += f.lo.a;
        if (f.hi.b > 0.5f) acc += f.hi.a;
    }
}
