// The set-up the sm_90a flashattn kernels (v06 on) open with, before their producer and consumers
// part: where the tiles and the mbarriers lie in shared memory, the K/V ring's barriers and their
// initialisation, a consumer thread's place in the tile's accumulators, and the start of its rows'
// online softmax. The layout and fragment facts these rely on are at the top of v06_wgmma.cu.
//
// Configuration: attn_sm90_config.cuh's (STAGES, TILE_BYTES, KV_TILE_BYTES), which a version sets
// before its includes.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"

// --------------------------------------------------------------------------- shared memory

// The dynamic shared memory of one CTA, from its base rounded up to 1024 B (every tile starts on a
// 1024-byte boundary, the period of the 128-byte swizzle): q_tiles Q tiles of TILE_BYTES (sQ, tile
// b at + b * TILE_BYTES), the K ring (sK, slot s at + s * KV_TILE_BYTES), the V ring (sV, the same),
// then the mbarriers (bars, 8 bytes each). A kernel takes them apart with a structured binding:
//     const auto [sQ, sK, sV, bars] = smem_tiles(smem_raw, 1);
struct SmemTiles {
    u32 sQ, sK, sV, bars;
};

__device__ __forceinline__ SmemTiles smem_tiles(const unsigned char* smem_raw, u32 q_tiles)
{
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 sK = base + q_tiles * TILE_BYTES;
    const u32 sV = sK + STAGES * KV_TILE_BYTES;
    return {base, sK, sV, sV + STAGES * KV_TILE_BYTES};
}

// The K/V ring's mbarriers from `first` on: STAGES full K barriers (slot s at + 8 * s), then STAGES
// full V, STAGES empty K and STAGES empty V barriers.
struct RingBars {
    u32 full_k, full_v, empty_k, empty_v;
};

__device__ __forceinline__ RingBars ring_bars(u32 first)
{
    return {first, first + 8 * STAGES, first + 16 * STAGES, first + 24 * STAGES};
}

// Their initialisation by one thread: a full barrier completes on `full` arrivals (the copying
// threads' noinc arrives, or one arrive.expect_tx), an empty one on `empty` (the consumer warps).
__device__ __forceinline__ void init_ring_bars(u32 bar_full_k, u32 bar_full_v, u32 bar_empty_k, u32 bar_empty_v,
                                               u32 full, u32 empty)
{
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        mbar_init(bar_full_k + 8 * s, full);
        mbar_init(bar_full_v + 8 * s, full);
        mbar_init(bar_empty_k + 8 * s, empty);
        mbar_init(bar_empty_v + 8 * s, empty);
    }
}

// --------------------------------------------------------------------------- a consumer thread

// A thread of consumer warpgroup cw, which holds query rows 64 cw .. 64 cw + 63 of the tile: its
// index in the warpgroup (tid), its lane, and the accumulator rows (row, row + 8) and columns
// (8j + col, 8j + col + 1) it holds (the fragment map at the top of v06_wgmma.cu):
//     const auto [tid, lane, row, col] = consumer_thread(cw);
struct ConsumerThread {
    int tid, lane, row, col;
};

__device__ __forceinline__ ConsumerThread consumer_thread(int cw)
{
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5, lane = tid & 31;
    return {tid, lane, cw * 64 + warp * 16 + (lane >> 2), 2 * (lane & 3)};
}

// The state of a thread's two rows at the start of a Q tile: O = 0, the running max (log2 domain)
// -inf, the partial row sums 0.
__device__ __forceinline__ void start_rows(float (&o)[64], float& m0, float& m1, float& l0, float& l1)
{
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    m0 = __int_as_float(0xff800000);
    m1 = __int_as_float(0xff800000);
    l0 = 0.f;
    l1 = 0.f;
}

// O = 0 at the start of a Q tile.
__device__ __forceinline__ void zero_acc(float (&o)[64])
{
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
}
