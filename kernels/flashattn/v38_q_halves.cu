// v38: v36 with each unit's Q copied as two 64-row halves, one a consumer, each on its own barrier.
//
// v36's trace on test_small (tools/trace_probe.py) has a CTA's first unit start microseconds after its entry:
// every CTA asks DRAM for its 32 KB Q tile and its first K tile at once, behind the L2 the timer's clear
// left dirty, and both consumers wait for the whole Q tile. Consumer 0 needs only its own 64 rows and K_0
// to issue the launch's first S, and consumer 1 takes its first turn after consumer 0's anyway.
//
// Here the Q warp copies consumer 0's half first, each half completing its own barrier (the consumer waits
// on its own: DQ_Q_BAR), and at the launch's first unit asks for consumer 1's half only once K_0 has
// landed (Q_SECOND_AFTER_K0), so DRAM serves half the Q bytes before the first S. Q's tensor map has 64-row
// boxes (q_halves_host). The barriers, the loader and its set-up are in attn_sm90_q_halves.cuh; the kernel
// is v19's with its DQ_INIT, DQ_PRODUCE and DQ_Q_BAR hooks, everything else v36's build
// (attn_sm90_store_tma_kernel.cuh).

#include "common/sm90/ptx.cuh"
#include "common/sm90/tma.cuh"

struct UnitsSmem;
__device__ __forceinline__ void init_units_q_halves(const UnitsSmem& sm);
__device__ __forceinline__ void produce_units_q_halves(const UnitsSmem& sm, const TmaDesc* tm_q, const TmaDesc* tm_k,
                                                       const TmaDesc* tm_v, int n_tiles, int units_per_head,
                                                       int n_units, int cluster_id, int n_clusters, u32 rank);
__device__ __forceinline__ u32 q_half_bar(const UnitsSmem& sm, int cw, int b);

#define DQ_INIT init_units_q_halves
#define DQ_PRODUCE produce_units_q_halves
#define DQ_Q_BAR(b) q_half_bar(sm, cw, b)
#include "attn_sm90_store_tma_kernel.cuh"
#include "attn_sm90_q_halves.cuh"
