// v10: v08 (producer warpgroup + two wgmma consumer warpgroups taking turns, each overlapping
// its softmax with its own P V; sm_90a, fp16, D = 128, non-causal) with one change: the
// rescale of the O accumulator (O *= alpha, 64 FMULs per thread per kv tile) is skipped in a
// warp whose 16 rows all kept their running max on this tile.
//
// alpha = ex2(m_old - m_new) is exactly 1 when m_new == m_old, so the skip changes no bit of
// the result. A warp votes (__all_sync) after the tile's P V has landed; the branch is
// warp-uniform. With scores drawn independently, the running max of a row moves on tile j
// with probability about 1/j, so after the first few tiles most warps skip: on the benchmark
// (64 kv tiles) about half of all rescales, on test_small (8 tiles) few.
//
// Everything else is v08's (its kernel, attn_sm90_overlap.cuh: only the RESCALE_O hook changes);
// see v08_overlap.cu for the schedule and the barrier counting, v06_wgmma.cu for the layout and
// the PTX facts.

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void rescale_o_lazy(float (&o)[64], float alpha0, float alpha1);

#define OVL_KERNEL attn_fwd_lazy
#define RESCALE_O rescale_o_lazy
#include "attn_sm90_overlap.cuh"

// O *= alpha only where a row's running max moved: alpha is exactly 1 (ex2(0)) for a row whose
// max held, so skipping is exact. The vote is per warp (its 16 rows); the branch is warp-uniform
// and the warps reconverge at the next turn's wgmma.fence.
__device__ __forceinline__ void rescale_o_lazy(float (&o)[64], float alpha0, float alpha1)
{
    if (!__all_sync(0xffffffffu, alpha0 == 1.f && alpha1 == 1.f)) rescale_o(o, alpha0, alpha1);
}
