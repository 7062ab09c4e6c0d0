// The bulk-copy ring of transform's versions from v12 on, with every block's share of the array
// equal to within one 32-block.
//
// v07's ring (v07_bulk.cu, which v08 to v10 launch) deals whole tiles to the blocks in turn and
// leaves what does not fill a last round to whoever draws it: on the 128M benchmark with 528
// blocks, 32768 bf16 tiles of 8 KB are 62.06 rounds, so 32 blocks carry a 63rd tile after the
// others have finished, and the whole groups after the last whole tile go to one block alone
// (block_loop). Here every block takes `rounds` whole tiles the same way (b, b + G, ..., so the
// blocks still sweep the array together, which the copy probes found faster than one contiguous
// run per block), then one *piece*: the rest of the whole 32-blocks cut into G runs that differ
// by at most one 32-block, run b to block b. A piece is at most a tile and goes through the same
// ring; its length is a multiple of 32 elements, so its bulk copies are whole 16-byte units and a
// group's place in its piece is still its place in its 32-block.
//
// The partial 32-block at the end of the array (n % 32 elements) is not in any piece; the
// caller's finish does it (finish_block in transform.cuh).
//
// Needs transform.cuh (elem_t, group4, transform_group) and the sm90 bulk and mbarrier headers
// included first. Reads no configuration macro: the tile, the stages and the threads are
// template arguments, named RING_* so that a version's -DSTAGES=... cannot rewrite them.
#pragma once

// Block `block`'s share of the whole 32-blocks of an n-element array among `grid` blocks.
struct ring_share {
    u64 rounds;       // whole tiles dealt in turn: the k-th (k < rounds) starts at (block + k·grid)·tile
    u64 piece_begin;  // then this block's piece of the rest: its first element ...
    u32 piece_len;    // ... and its length in elements (a multiple of 32, at most a tile; 0: none)
};

__device__ __forceinline__ ring_share ring_share_of(u64 n, u32 tile, u32 block, u32 grid)
{
    const u64 whole = (n >> 5) << 5;  // the elements of the whole 32-blocks
    const u64 rounds = whole / ((u64)tile * grid);
    const u64 rest = rounds * tile * grid;  // the first element after the rounds
    const u64 blocks32 = (whole - rest) >> 5;  // fewer than tile·grid / 32
    const u64 a = blocks32 * block / grid, b = blocks32 * (block + 1) / grid;
    return ring_share{rounds, rest + 32 * a, (u32)(32 * (b - a))};
}

// The pieces of work of one block: `rounds` whole tiles, then the piece if it is not empty.
__device__ __forceinline__ u32 ring_pieces(const ring_share& s)
{
    return (u32)s.rounds + (s.piece_len ? 1u : 0u);
}

__device__ __forceinline__ u64 ring_piece_begin(const ring_share& s, u32 k, u32 tile)
{
    return k < s.rounds ? ((u64)blockIdx.x + (u64)k * gridDim.x) * tile : s.piece_begin;
}

__device__ __forceinline__ u32 ring_piece_len(const ring_share& s, u32 k, u32 tile)
{
    return k < s.rounds ? tile : s.piece_len;
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
template <u32 RING_TILE, u32 RING_STAGES, u32 RING_THREADS>
__device__ __forceinline__ float ring_transform(const elem_t* __restrict__ x, elem_t* __restrict__ y, u64 n,
                                                elem_t (*ring)[RING_TILE], u64* full)
{
    static_assert(RING_TILE % (4 * RING_THREADS) == 0, "a tile is a whole number of steps of the block");
    static_assert(RING_STAGES >= 2, "a stage is refilled after the next piece's wait: one stage would wait for itself");
    const ring_share share = ring_share_of(n, RING_TILE, blockIdx.x, gridDim.x);
    const u32 mine = ring_pieces(share);
    auto fill = [&](u32 k) {  // thread 0: the k-th piece of this block into its stage
        const u32 s = k % RING_STAGES, bar = smem_u32(&full[s]);
        const u32 bytes = ring_piece_len(share, k, RING_TILE) * (u32)sizeof(elem_t);
        mbar_arrive_expect_tx(bar, bytes);
        bulk_load(smem_u32(ring[s]), x + ring_piece_begin(share, k, RING_TILE), bytes, bar);
    };

    if (threadIdx.x == 0) {
        for (u32 s = 0; s < RING_STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
        fence_mbarrier_init();
        for (u32 k = 0; k < RING_STAGES && k < mine; ++k) fill(k);
    }
    __syncthreads();

    float acc = 0.0f;
    for (u32 k = 0; k < mine; ++k) {
        const u32 s = k % RING_STAGES, groups = ring_piece_len(share, k, RING_TILE) / 4;
        mbar_wait(smem_u32(&full[s]), (k / RING_STAGES) & 1u);
#pragma unroll
        for (u32 r = 0; r < RING_TILE / 4 / RING_THREADS; ++r) {
            if (r * RING_THREADS >= groups) break;  // the same for the whole block: no lane misses a shuffle
            const u32 g = r * RING_THREADS + threadIdx.x;
            const bool live = g < groups;  // a piece is whole 32-blocks: a look-back never crosses this
            const group4 f = transform_group(live ? load4(&ring[s][4 * g]) : group4{1.f, 1.f, 1.f, 1.f}, g);
            if (live) {
                store4(&ring[s][4 * g], f);
                if (f.b > 0.5f) acc += f.a;
            }
        }
        fence_proxy_async_shared();
        __syncthreads();
        if (threadIdx.x == 0) {
            bulk_store(y + ring_piece_begin(share, k, RING_TILE), smem_u32(ring[s]), groups * 4 * (u32)sizeof(elem_t));
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
