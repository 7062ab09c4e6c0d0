// v38's Q: each unit's 128-row Q tile copied as two 64-row halves, one a consumer warpgroup, each half on
// its own full barrier, so that consumer 0 can take the launch's first S as soon as its own rows and the
// first K tile are in. What it does and why is in v38_q_halves.cu.
//
// Half 0 (rows q0 .. q0 + 63, consumer 0's) completes on v19's bar_q + 8 * b; half 1 (consumer 1's) on
// q_second_bar(sm) + 8 * b, Q_BUFFERS more barriers right after v19's (in the padding that rounds the
// barriers up to a kilobyte before v21's staging buffers). Q's tensor map has 64-row boxes (the host's
// Q_HALF_BOX), so load_tile_own copies one half: its two 64-column boxes, HALF_BYTES apart in the buffer,
// at the half's rows (+ 64 * 128 bytes for consumer 1, where its descriptor points). The empty barrier of a
// buffer is v19's: the eight consumer warps release the whole tile.
//
// Include it after attn_sm90_double_q.cuh (UnitsSmem, produce_units); a version declares the three entry
// points before the kernel and names them in DQ_INIT, DQ_PRODUCE and DQ_Q_BAR.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef Q_SECOND_AFTER_K0
#define Q_SECOND_AFTER_K0 1  // 1: the launch's first unit asks for consumer 1's half once the first K tile
                             // has landed (with FIRST_LOADS_IN_ORDER); 0: right after consumer 0's half
#endif

// the second halves' barriers sit in the padding before v21's staging buffers: they must fit there
#ifndef STAGE_OFFSET
#error "attn_sm90_q_halves.cuh: its barriers sit before v21's staging buffers (include attn_sm90_staged_store.cuh first)"
#endif
#if Q_BUFFERS * TILE_BYTES + 2 * STAGES * KV_TILE_BYTES + 8 * (4 * STAGES + 3 * Q_BUFFERS) > STAGE_OFFSET
#error "attn_sm90_q_halves.cuh: the second halves' barriers do not fit before the staging buffers"
#endif

#define Q_HALF_TILE_BYTES (TILE_BYTES / 2)  // 64 rows x 128 fp16
#define Q_HALF_ROW_BYTES (64 * 128)         // where consumer 1's rows start in each 64-column half

// the full barriers of consumer 1's halves, buffer b at + 8 * b
__device__ __forceinline__ u32 q_second_bar(const UnitsSmem& sm)
{
    return sm.bar_q_empty + 8 * Q_BUFFERS;
}

// the barrier consumer cw waits on for Q buffer b (DQ_Q_BAR)
__device__ __forceinline__ u32 q_half_bar(const UnitsSmem& sm, int cw, int b)
{
    return (cw == 0 ? sm.bar_q : q_second_bar(sm)) + 8 * b;
}

// v19's set-up with the second halves' barriers (one arrival each: the Q warp's expect_tx); init_units'
// fence and meeting cover them (DQ_INIT)
__device__ __forceinline__ void init_units_q_halves(const UnitsSmem& sm)
{
    if (threadIdx.x == 0) {
#pragma unroll
        for (int b = 0; b < Q_BUFFERS; ++b) mbar_init(q_second_bar(sm) + 8 * b, 1);
    }
    init_units(sm);
}

// The Q warp's copy of a unit's Q (produce_units' LOAD_Q): consumer 0's half, then consumer 1's. At the
// launch's first unit, with FIRST_LOADS_IN_ORDER, consumer 1's half waits for the first K tile
// (Q_SECOND_AFTER_K0), so that DRAM serves consumer 0's rows and that tile first, and the second unit's Q
// waits for the first unit's whole tile, as v19's Q warp has it (produce_units then waits for the first
// buffer's barrier, half 0's here). The TR_Q_ISSUED stamp after it comes after these waits.
struct LoadQHalves {
    __device__ __forceinline__ void operator()(const UnitsSmem& sm, const TmaDesc* tm_q, int b, int q0, int head,
                                               int local, bool leader) const
    {
        const u32 dst = sm.sQ + b * TILE_BYTES;
        const u32 second = q_second_bar(sm) + 8 * b;
        if (leader) {
            mbar_arrive_expect_tx(sm.bar_q + 8 * b, Q_HALF_TILE_BYTES);
            load_tile_own(dst, tm_q, q0, head, sm.bar_q + 8 * b);
        }
#if FIRST_LOADS_IN_ORDER && Q_SECOND_AFTER_K0
        if (local == 0) mbar_wait(sm.bar_full_k, 0u);  // ring entry 0 (K_0) has landed
#endif
        if (leader) {
            mbar_arrive_expect_tx(second, Q_HALF_TILE_BYTES);
            load_tile_own(dst + Q_HALF_ROW_BYTES, tm_q, q0 + 64, head, second);
        }
#if FIRST_LOADS_IN_ORDER
        if (local == 0) mbar_wait(second, 0u);
#endif
    }
};

// the producer warpgroup's work with Q in halves (DQ_PRODUCE)
__device__ __forceinline__ void produce_units_q_halves(const UnitsSmem& sm, const TmaDesc* tm_q, const TmaDesc* tm_k,
                                                       const TmaDesc* tm_v, int n_tiles, int units_per_head,
                                                       int n_units, int cluster_id, int n_clusters, u32 rank)
{
    produce_units<LoadQHalves>(sm, tm_q, tm_k, tm_v, n_tiles, units_per_head, n_units, cluster_id, n_clusters, rank);
}
