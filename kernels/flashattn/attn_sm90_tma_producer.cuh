// v13's producer for v08's kernel (attn_sm90_overlap.cuh): the K/V ring and Q filled by TMA from one
// lane instead of cp.async from a warpgroup. v13 and v14 pass it to the kernel's OVL_PRODUCER hook;
// why TMA, and the barrier counts it needs, are in v13_tma.cu.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place.
#pragma once

#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"
#include "attn_sm90.cuh"

// v13's producer: one lane of the producer's first warp issues the copies with TMA (two boxes a
// tile, after an arrive.expect_tx of the tile's bytes on its full barrier) and the whole warp waits
// for the empty slots (mbar_wait ends in __syncwarp). The caller decides what the other three warps
// do (v13: return at once; v14: wait for the cluster). LoadKV copies one K or V tile: TmaTile
// (load_tile_tma, v13) or a version's own (v14 multicasts to the cluster); LoadKV::make() builds
// it in the producer warp, after the leader is known (v14 reads its cluster rank there).
struct TmaTile {
    __device__ __forceinline__ static TmaTile make() { return {}; }
    __device__ __forceinline__ void operator()(u32 dst, const TmaDesc* map, int row0, u32 bar) const
    {
        load_tile_tma(dst, map, row0, bar);
    }
};

template <class LoadKV>
__device__ __forceinline__ void produce_tma(const TmaDesc* tm_q, const TmaDesc* tm_k, const TmaDesc* tm_v, u32 sQ,
                                            u32 sK, u32 sV, u32 bar_q, u32 bar_full_k, u32 bar_full_v,
                                            u32 bar_empty_k, u32 bar_empty_v, u64 head_row0, int q0, int n_tiles)
{
    const bool leader = (threadIdx.x & 31) == 0;
    const LoadKV load_kv = LoadKV::make();
    const int row_kv = (int)head_row0;
    if (leader) {
        prefetch_tensor_map(tm_q);
        prefetch_tensor_map(tm_k);
        prefetch_tensor_map(tm_v);
        mbar_arrive_expect_tx(bar_q, TILE_BYTES);
        load_tile_tma(sQ, tm_q, row_kv + q0, bar_q);
    }
    for (int j = 0; j < n_tiles; ++j) {
        const int s = j % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u;
        // The consumers release V_j one step later than K_j (at the end of step j + 1), so
        // the wait below for V_j's slot (V_{j-STAGES}'s) has less slack than the K wait.
        // The whole warp waits (mbar_wait ends in __syncwarp); lane 0 issues.
        mbar_wait(bar_empty_k + 8 * s, phase ^ 1u);
        if (leader) {
            mbar_arrive_expect_tx(bar_full_k + 8 * s, TILE_BYTES);
            load_kv(sK + s * TILE_BYTES, tm_k, row_kv + j * BLOCK_N, bar_full_k + 8 * s);
        }
        mbar_wait(bar_empty_v + 8 * s, phase ^ 1u);
        if (leader) {
            mbar_arrive_expect_tx(bar_full_v + 8 * s, TILE_BYTES);
            load_kv(sV + s * TILE_BYTES, tm_v, row_kv + j * BLOCK_N, bar_full_v + 8 * s);
        }
    }
}
