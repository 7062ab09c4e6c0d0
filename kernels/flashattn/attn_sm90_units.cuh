// The persistent kernels with two Q buffers (v19 on): their shared-memory layout and barriers, and
// their producer warpgroup, shared by every kernel that walks work units this way (v19's
// attn_sm90_double_q.cuh and v23's attn_sm90_unit_overlap.cuh). What the producer does and why is in
// v19_double_q.cu.
//
// A work unit is CLUSTER neighbouring 128-row Q blocks of one (batch, head), one a CTA; cluster c
// takes units c, c + n_clusters, ... Its K/V tiles are the ring's entries g .. g + n_tiles - 1 (g:
// the tiles of the cluster's earlier units), its Q goes into buffer local % Q_BUFFERS (local: the
// unit's number among the cluster's).
//
// Reads BLOCK_N, STAGES, CLUSTER, Q_BUFFERS and FIRST_LOADS_IN_ORDER (defined before it is included)
// and the tile macros of attn_sm90_config.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_kv176.cuh"
#include "trace.cuh"

// the dynamic shared memory this layout takes: 1 KB of alignment slack, then UnitsSmem's tiles and barriers
#define UNITS_SMEM_BYTES (1024 + Q_BUFFERS * TILE_BYTES + 2 * STAGES * KV_TILE_BYTES + 8 * (4 * STAGES + 2 * Q_BUFFERS))

// the CTA's shared memory: Q_BUFFERS Q tiles, the K/V ring, v15's K/V barriers and a full and an
// empty barrier per Q buffer
struct UnitsSmem {
    u32 sQ;           // buffer b at + b * TILE_BYTES
    u32 sK, sV;       // stage s at + s * KV_TILE_BYTES
    u32 bar_full_k;   // + 8 * s
    u32 bar_full_v;
    u32 bar_empty_k;
    u32 bar_empty_v;
    u32 bar_q;        // + 8 * b: buffer b loaded
    u32 bar_q_empty;  // + 8 * b: buffer b released

    __device__ __forceinline__ explicit UnitsSmem(const unsigned char* smem_raw)
    {
        const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
        sQ = base;
        sK = base + Q_BUFFERS * TILE_BYTES;
        sV = sK + STAGES * KV_TILE_BYTES;
        const u32 bars = sV + STAGES * KV_TILE_BYTES;
        bar_full_k = bars;
        bar_full_v = bars + 8 * STAGES;
        bar_empty_k = bars + 8 * (2 * STAGES);
        bar_empty_v = bars + 8 * (3 * STAGES);
        bar_q = bars + 8 * (4 * STAGES);
        bar_q_empty = bar_q + 8 * Q_BUFFERS;
    }
};

// The work of a launch: the K/V tiles a unit walks (the last one `tail` rows long), the units of a
// head and of the launch, and this CTA's place: its rank in its cluster, the cluster's number and how
// many clusters the grid holds.
//     const auto [n_tiles, tail, units_per_head, n_units, rank, cluster_id, n_clusters] = units_of(seqlen, n_heads);
struct Units {
    int n_tiles, tail, units_per_head, n_units;
    u32 rank;
    int cluster_id, n_clusters;
};

__device__ __forceinline__ Units units_of(int seqlen, int n_heads)
{
    const int n_tiles = (seqlen + BLOCK_N - 1) / BLOCK_N;
    const int tail = seqlen - (n_tiles - 1) * BLOCK_N;
    const int blocks_per_head = seqlen / BLOCK_M;
    const int units_per_head = blocks_per_head / CLUSTER;
    const int n_units = units_per_head * n_heads;
    const u32 rank = CLUSTER > 1 ? cluster_rank() : 0u;
    const int cluster_id = (int)blockIdx.x / CLUSTER;
    const int n_clusters = (int)gridDim.x / CLUSTER;
    return {n_tiles, tail, units_per_head, n_units, rank, cluster_id, n_clusters};
}

// The barriers' set-up, before any role starts: thread 0 initialises a full and an empty barrier per
// Q buffer (Q_BARS of them, each emptied by Q_WARPS consumer warps: by default Q_BUFFERS tiles that
// all 8 consumer warps read; v26's three slots each hold one warpgroup's piece) and v15's K/V ring,
// then the CTA (the cluster, with CLUSTER > 1) meets once.
template <int Q_BARS = Q_BUFFERS, unsigned Q_WARPS = 8>
__device__ __forceinline__ void init_units(const UnitsSmem& sm)
{
    if (threadIdx.x == 0) {
#pragma unroll
        for (int b = 0; b < Q_BARS; ++b) {
            mbar_init(sm.bar_q + 8 * b, 1);
            mbar_init(sm.bar_q_empty + 8 * b, Q_WARPS);  // the consumer warps that read the buffer
        }
        init_kv_ring(sm.bar_full_k, sm.bar_full_v, sm.bar_empty_k, sm.bar_empty_v);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#if CLUSTER > 1
    cluster_sync_all();
#else
    __syncthreads();
#endif
}

// v19's copy of a unit's Q, called by the Q warp's lanes (its leader issues): the whole 128-row tile into
// buffer b, on the buffer's one barrier. v38's LoadQHalves (attn_sm90_q_halves.cuh) is the other.
struct LoadQTile {
    __device__ __forceinline__ void operator()(const UnitsSmem& sm, const TmaDesc* tm_q, int b, int q0, int head,
                                               int /*local*/, bool leader) const
    {
        if (leader) {
            mbar_arrive_expect_tx(sm.bar_q + 8 * b, TILE_BYTES);
            load_tile_own(sm.sQ + b * TILE_BYTES, tm_q, q0, head, sm.bar_q + 8 * b);
        }
    }
};

// The producer warpgroup's work (called by its four warps after setmaxnreg): warp 0's lane loads the
// K/V ring for every unit of the cluster, warp 1's lane loads each unit's Q (as LOAD_Q copies it) once
// the consumers released its buffer; warps 2 and 3 have nothing to do.
template <class LOAD_Q = LoadQTile>
__device__ __forceinline__ void produce_units(const UnitsSmem& sm, const TmaDesc* tm_q, const TmaDesc* tm_k,
                                              const TmaDesc* tm_v, int n_tiles, int units_per_head, int n_units,
                                              int cluster_id, int n_clusters, u32 rank)
{
    const int pw = (threadIdx.x % 128) / 32;  // warp 0: the K/V lane, warp 1: the Q warp
    const bool leader = (threadIdx.x & 31) == 0;
    if (pw == 0) {
        if (leader) {
            prefetch_tensor_map(tm_k);
            prefetch_tensor_map(tm_v);
        }
        int g = 0;  // kv tiles loaded so far, all units
        for (int w = cluster_id; w < n_units; w += n_clusters) {
            const int head = w / units_per_head;
            for (int j = 0; j < n_tiles; ++j, ++g) {
                produce_kv_tile(g, j, sm.sK, sm.bar_full_k, sm.bar_empty_k, tm_k, head, rank, leader);
#if FIRST_LOADS_IN_ORDER
                // the kernel's first S needs Q and this K tile only: let them have DRAM to themselves
                if (g == 0) mbar_wait(sm.bar_full_k, 0u);
#endif
                produce_kv_tile(g, j, sm.sV, sm.bar_full_v, sm.bar_empty_v, tm_v, head, rank, leader);
            }
        }
    } else if (pw == 1) {
        if (leader) prefetch_tensor_map(tm_q);
        int local = 0;
        for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
            const int b = local % Q_BUFFERS;
            const int head = w / units_per_head;
            const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
            // buffer b last held unit local - Q_BUFFERS: wait until its consumers released it
            if (local >= Q_BUFFERS) mbar_wait(sm.bar_q_empty + 8 * b, (u32)(local / Q_BUFFERS - 1) & 1u);
#if FIRST_LOADS_IN_ORDER
            // and for the Q before this one to have landed (it is needed first)
            else if (local >= 1) mbar_wait(sm.bar_q + 8 * ((local - 1) % Q_BUFFERS), (u32)((local - 1) / Q_BUFFERS) & 1u);
#endif
            LOAD_Q{}(sm, tm_q, b, q0, head, local, leader);
            TRACE_UNIT(leader, local, TR_Q_ISSUED);
        }
    }
}
