// v06's producer and consumer steps, shared by v06 and v07: a producer warpgroup copying Q once and
// the K/V tiles into the STAGES-deep ring with cp.async, and the consumer warpgroups' steps on that
// ring, every wait a trapping one (mbar_wait_trap, HANG_TRAP; from v08 on the waits fault instead).
// What each does and why, and the layout and PTX facts, are in v06_wgmma.cu, whose kernel is the
// first built on them (its kernel keeps its own steps inline, as the report shows them);
// v07_pingpong.cu takes the producer and the P V step, and issues S = Q K^T in the consumers' turns.
//
// The overlapped schedule (v06's INTRA_WG_OVERLAP, v07's PIPELINE 1) stays in the two kernels: as a
// helper that updates the kernel's softmax state through references it compiles to other PTX (the
// compiler numbers the state's registers in another order).
//
// Configuration: attn_sm90_config.cuh's (STAGES, TILE_BYTES, HALF_BYTES, HANG_TRAP, PROXY_FENCE).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"

// --------------------------------------------------------------------------- producer

// v06's producer warpgroup, thread t = 0..127 of it: Q once, then K_j and V_j of the whole sequence
// into ring slot j % STAGES, each fill completing on its full barrier by one noinc arrive per thread.
// Thread t copies 16-byte chunk t % 16 of rows 8i + t / 16, so its swizzled destination is one fixed
// offset plus i * 1024 (load_tile). The caller passes t: v06's producer is warpgroup 0 (t is
// threadIdx.x), v07's warpgroup 2 (threadIdx.x & 127).
__device__ __forceinline__ void produce_cp_async_trap(const u32 t, const u16* __restrict__ Q,
                                                      const u16* __restrict__ K, const u16* __restrict__ V,
                                                      u32 sQ, u32 sK, u32 sV, u32 bar_q, u32 bar_full_k,
                                                      u32 bar_full_v, u32 bar_empty_k, u32 bar_empty_v,
                                                      u64 head_row0, int q0, int n_tiles)
{
    const u32 r = t >> 4, c16 = t & 15;
    // chunk c16 of a 256-byte row: half c16 / 8, 16-byte chunk c16 % 8, swizzled with row % 8 == r
    const u32 dst_off = (c16 >> 3) * HALF_BYTES + r * 128 + (((c16 & 7) ^ r) << 4);
    const u64 src_off = (u64)r * 256 + c16 * 16;

    const char* q_src = reinterpret_cast<const char*>(Q + (head_row0 + q0) * HEAD_DIM) + src_off;
    load_tile(sQ + dst_off, q_src);
    cp_async_arrive_noinc(bar_q);

    const char* k_src = reinterpret_cast<const char*>(K + head_row0 * HEAD_DIM) + src_off;
    const char* v_src = reinterpret_cast<const char*>(V + head_row0 * HEAD_DIM) + src_off;
    for (int j = 0; j < n_tiles; ++j) {
        const int s = j % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u;
        // released by all 8 consumer warps; with v07's PIPELINE 1 the consumers release V_j one
        // step later than K_j, so the wait for V_j's slot has less slack than the K wait
        mbar_wait_trap(bar_empty_k + 8 * s, phase ^ 1u);
        load_tile(sK + s * TILE_BYTES + dst_off, k_src + (u64)j * TILE_BYTES);
        cp_async_arrive_noinc(bar_full_k + 8 * s);
        mbar_wait_trap(bar_empty_v + 8 * s, phase ^ 1u);
        load_tile(sV + s * TILE_BYTES + dst_off, v_src + (u64)j * TILE_BYTES);
        cp_async_arrive_noinc(bar_full_v + 8 * s);
    }
    cp_async_wait_all();  // never leave the CTA with copies in flight
}

// --------------------------------------------------------------------------- consumer steps

// The step takes the ring's barriers (slot 0's; slot s at + 8 * s), the warpgroup's descriptors (its
// 64 rows of Q; slot 0 of the K and of the V ring, slot s at + s * TILE_BYTES) and the thread's lane
// (lane 0 of each warp releases a slot), as values: passed in a struct, they compile to other PTX.

// v06's O += P V (P from registers, V N-major in shared memory) on the V tile in ring slot s, outside
// any turn, as v06 and v07 run it: wait until the tile is there, issue, wait for the product, release the slot.
__device__ __forceinline__ void pv_step_trap(float (&o)[64], u32 (&p)[32], u64 desc_v, u32 bar_full_v, u32 bar_empty_v,
                                             int lane, int s, u32 phase)
{
    mbar_wait_trap(bar_full_v + 8 * s, phase);
    proxy_fence_async();
    fence_acc(o);
    fence_frag(p);
    wgmma_fence();
    issue_pv(o, p, desc_v + (u64)((s * TILE_BYTES) >> 4));
    wgmma_commit();
    wgmma_wait<0>();
    fence_acc(o);
    fence_frag(p);
    if (lane == 0) mbar_arrive(bar_empty_v + 8 * s);
}
