// The bulk-copy ring of transform's versions from v12 on: one block's share of y = transform(x)
// through a ring of shared-memory tiles, loaded and stored by the SM's bulk-copy unit
// (cp.async.bulk), as v07's kernel (transform_bulk.cuh) does (v07 to v11 keep that copy, as they were
// recorded). How the array is cut among the blocks is a template argument:
//
// - dealt_tiles, v07's: whole tiles dealt in turn. On the 128M benchmark with 528 blocks, 32768
//   bf16 tiles of 8 KB are 62.06 rounds, so 32 blocks carry a 63rd tile after the others are done,
//   and the whole groups after the last whole tile (the 100M case has them) go to one block alone.
// - balanced_share, v12's: the same rounds while every block can take a whole tile, then the rest
//   cut into one piece per block, the pieces differing by at most one 32-block (the tiles are still
//   dealt in turn, not one contiguous run per block, which the copy probes found slower).
//
// - ring_transform_in_order, v15's: the tiles handed out in order by a counter as the blocks ask
//   (its own loop, below).
//
// The partial 32-block at the end of the array (n % 32 elements) is in no piece; the caller's
// finish does it (finish_block in transform.cuh, finish_packed in transform_sum.cuh).
//
// Needs transform.cuh (elem_t, group4, transform_group) and the sm90 bulk and mbarrier headers
// included first (transform_ring_config.cuh includes them, then this header, for the versions
// from v12 on); includes transform_sum.cuh (the fixed point of the in-order ring). Reads no configuration macro: the tile, the stages and the threads are
// template arguments, named RING_* so that a version's -DSTAGES=... cannot rewrite them.
#pragma once

#include "transform_sum.cuh"

// Two ways to cut the array among the blocks. Each is a struct built by every thread of a block
// from (n, the block, the grid) that gives the block's pieces of work in order: pieces(), and the
// k-th piece's first element begin(k) and length len(k) (a multiple of 32 elements, at most a
// tile, so its bulk copies are whole 16-byte units and a group's place in its piece is its place
// in its 32-block).

// v07's: whole tiles in turn (b, b + G, ...). The whole groups after the last whole tile are in
// no piece: the caller gives them to a block of its own (block_loop in transform.cuh).
template <u32 RING_TILE>
struct dealt_tiles {
    u32 mine;
    __device__ __forceinline__ dealt_tiles(u64 n)
    {
        const u64 tiles = n / RING_TILE;
        mine = tiles > blockIdx.x ? (u32)((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x) : 0u;
    }
    __device__ __forceinline__ u32 pieces() const { return mine; }
    __device__ __forceinline__ u64 begin(u32 k) const { return ((u64)blockIdx.x + (u64)k * gridDim.x) * RING_TILE; }
    __device__ __forceinline__ u32 len(u32) const { return RING_TILE; }
};

// v12's: whole tiles in turn for as many rounds as every block can take one, then the rest of
// the whole 32-blocks cut into one piece per block, the pieces differing by at most one 32-block.
template <u32 RING_TILE>
struct balanced_share {
    u64 rounds;       // whole tiles dealt in turn
    u64 piece_begin;  // then this block's piece of the rest: its first element ...
    u32 piece_len;    // ... and its length in elements (0: none)
    __device__ __forceinline__ balanced_share(u64 n)
    {
        const u64 whole = (n >> 5) << 5;  // the elements of the whole 32-blocks
        rounds = whole / ((u64)RING_TILE * gridDim.x);
        const u64 rest = rounds * RING_TILE * gridDim.x;  // the first element after the rounds
        const u64 blocks32 = (whole - rest) >> 5;  // fewer than RING_TILE·grid / 32
        const u64 a = blocks32 * blockIdx.x / gridDim.x, b = blocks32 * (blockIdx.x + 1) / gridDim.x;
        piece_begin = rest + 32 * a;
        piece_len = (u32)(32 * (b - a));
    }
    __device__ __forceinline__ u32 pieces() const { return (u32)rounds + (piece_len ? 1u : 0u); }
    __device__ __forceinline__ u64 begin(u32 k) const
    {
        return k < rounds ? ((u64)blockIdx.x + (u64)k * gridDim.x) * RING_TILE : piece_begin;
    }
    __device__ __forceinline__ u32 len(u32 k) const { return k < rounds ? RING_TILE : piece_len; }
};

// One tile (or piece) of `groups` groups (a multiple of 8) in shared memory, transformed in place by
// the block: a group per lane per step, the look-back from the lane four below. Adds the thread's
// sin terms to `acc` in a fixed order. Every thread of the block must call it.
template <u32 RING_TILE, u32 RING_THREADS>
__device__ __forceinline__ void tile_transform(elem_t* tile, u32 groups, float& acc)
{
#pragma unroll
    for (u32 r = 0; r < RING_TILE / 4 / RING_THREADS; ++r) {
        if (r * RING_THREADS >= groups) break;  // the same for the whole block: no lane misses a shuffle
        const u32 g = r * RING_THREADS + threadIdx.x;
        const bool live = g < groups;  // a piece is whole 32-blocks: a look-back never crosses this
        const group4 f = transform_group(live ? load4(&tile[4 * g]) : group4{1.f, 1.f, 1.f, 1.f}, g);
        if (live) {
            store4(&tile[4 * g], f);
            if (f.b > 0.5f) acc += f.a;
        }
    }
}

// One block's share of y = transform(x) through a ring of RING_STAGES shared-memory tiles of
// RING_TILE elements, RING_THREADS threads per block. Thread 0 keeps up to RING_STAGES pieces loading (one bulk load
// each, completing on the stage's mbarrier); every thread waits on the stage, transforms its
// groups in place (a group per lane per step, the look-back from the lane four below), fences
// its writes for the async proxy; after the block's barrier thread 0 issues the piece's bulk
// store and refills the previous piece's stage once that piece's store has read it. On return
// every store has read its stage (their writes may still be on the way; the end of the grid
// completes them). Returns the thread's sum of sin terms, in fp32 (v07's). Every thread of the
// block must call it.
template <class Share, u32 RING_TILE, u32 RING_STAGES, u32 RING_THREADS>
__device__ __forceinline__ float ring_transform(const elem_t* __restrict__ x, elem_t* __restrict__ y, u64 n,
                                                elem_t (*ring)[RING_TILE], u64* full)
{
    static_assert(RING_TILE % (4 * RING_THREADS) == 0, "a tile is a whole number of steps of the block");
    static_assert(RING_STAGES >= 2, "a stage is refilled after the next piece's wait: one stage would wait for itself");
    const Share share(n);
    const u32 mine = share.pieces();
    auto fill = [&](u32 k) {  // thread 0: the k-th piece of this block into its stage
        const u32 s = k % RING_STAGES, bar = smem_u32(&full[s]);
        const u32 bytes = share.len(k) * (u32)sizeof(elem_t);
        mbar_arrive_expect_tx(bar, bytes);
        bulk_load(smem_u32(ring[s]), x + share.begin(k), bytes, bar);
    };

    if (threadIdx.x == 0) {
        for (u32 s = 0; s < RING_STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
        fence_mbarrier_init();
        for (u32 k = 0; k < RING_STAGES && k < mine; ++k) fill(k);
    }
    __syncthreads();

    float acc = 0.0f;
    for (u32 k = 0; k < mine; ++k) {
        const u32 s = k % RING_STAGES, groups = share.len(k) / 4;
        mbar_wait(smem_u32(&full[s]), (k / RING_STAGES) & 1u);
        tile_transform<RING_TILE, RING_THREADS>(ring[s], groups, acc);
        fence_proxy_async_shared();
        __syncthreads();
        if (threadIdx.x == 0) {
            bulk_store(y + share.begin(k), smem_u32(ring[s]), groups * 4 * (u32)sizeof(elem_t));
            bulk_commit();
            if (k >= 1 && k - 1 + RING_STAGES < mine) {
                bulk_wait_read<1>();  // the previous piece's store has read its stage
                fill(k - 1 + RING_STAGES);
            }
        }
    }
    if (threadIdx.x == 0) bulk_wait_read<0>();  // the ring stays until every store has read it
    return acc;
}

// v15's ring: the whole tiles handed out in order by a counter (*next, one atomicAdd per tile drawn)
// instead of cut in advance, so the tiles in flight across the grid stay one window of
// consecutive addresses however the blocks drift apart (the copy probes: a ring that only copies
// went from 1.03x the memcpy, dealt in advance, to the memcpy's own time). Which block takes which
// tile changes from call to call, so the sum is kept in fixed point per tile (see
// transform_sum.cuh): each thread adds its sin terms of a tile in fp32 in a fixed order, as
// tile_transform does whatever block runs it, and adds that to its int64 sum as round(acc · 2^24).
// Thread 0 draws a tile into a stage and records it in tile_of; with none left it records
// RING_NONE and arrives without bytes, and the whole block leaves the loop at that stage. Whole
// groups after the last whole tile and the partial 32-block are the caller's, as with dealt_tiles.
// Returns the thread's sum in fixed point. Every thread of the block must call it; every block
// draws exactly one RING_NONE before it returns.
#define RING_NONE 0xffffffffu

template <u32 RING_TILE, u32 RING_STAGES, u32 RING_THREADS>
__device__ __forceinline__ long long ring_transform_in_order(const elem_t* __restrict__ x, elem_t* __restrict__ y, u64 n,
                                                             elem_t (*ring)[RING_TILE], u64* full, u32* tile_of,
                                                             u32* __restrict__ next)
{
    static_assert(RING_TILE % (4 * RING_THREADS) == 0, "a tile is a whole number of steps of the block");
    static_assert(RING_STAGES >= 2, "a stage is refilled after the next tile's wait: one stage would wait for itself");
    constexpr u32 BYTES = RING_TILE * (u32)sizeof(elem_t);
    const u64 tiles = n / RING_TILE;
    bool more = true;  // thread 0's: tiles may be left to draw
    auto fill = [&](u32 k) {  // thread 0: the next tile in order into stage k % RING_STAGES
        const u32 s = k % RING_STAGES, bar = smem_u32(&full[s]);
        const u32 t = atomicAdd(next, 1u);
        if (t < tiles) {
            tile_of[s] = t;
            mbar_arrive_expect_tx(bar, BYTES);
            bulk_load(smem_u32(ring[s]), x + (u64)t * RING_TILE, BYTES, bar);
        } else {
            tile_of[s] = RING_NONE;
            more = false;
            mbar_arrive(bar);
        }
    };

    if (threadIdx.x == 0) {
        for (u32 s = 0; s < RING_STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
        fence_mbarrier_init();
        for (u32 k = 0; k < RING_STAGES && more; ++k) fill(k);
    }
    __syncthreads();

    long long sum = 0;
    for (u32 k = 0;; ++k) {
        const u32 s = k % RING_STAGES;
        mbar_wait(smem_u32(&full[s]), (k / RING_STAGES) & 1u);
        const u32 t = tile_of[s];
        if (t == RING_NONE) break;  // the same for the whole block
        float acc = 0.0f;
        tile_transform<RING_TILE, RING_THREADS>(ring[s], RING_TILE / 4, acc);
        sum += __float2ll_rn(acc * PACKED_SCALE);
        fence_proxy_async_shared();
        __syncthreads();  // every thread has read tile_of[s] and written the tile
        if (threadIdx.x == 0) {
            bulk_store(y + (u64)t * RING_TILE, smem_u32(ring[s]), BYTES);
            bulk_commit();
            if (k >= 1 && more) {
                bulk_wait_read<1>();  // the previous tile's store has read its stage
                fill(k - 1 + RING_STAGES);
            }
        }
    }
    if (threadIdx.x == 0) bulk_wait_read<0>();  // the ring stays until every store has read it
    return sum;
}
