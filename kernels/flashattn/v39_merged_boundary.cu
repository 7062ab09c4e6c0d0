// v39: v36 with each boundary between two units run as one turn: the next unit's first S with this unit's
// last P.V (v23's boundary step, on v36's kernel).
//
// v36's trace on test_small (tools/trace_probe.py) puts a unit's boundary, from its last full step to the
// next unit's first, at about a step longer than its two steps' work: each consumer takes a turn for the last
// P.V alone, waits for it, stages O, takes another turn for the next S_0 alone, waits for it and runs its
// softmax, and the other consumer, whose boundary falls a fraction of a step later, fills those gaps with
// half-size turns of its own. v23 ran the boundary as one step on v21, where the consumers still wrote O
// themselves after the softmax, and it did not help; v37 staged O under S_0 and the boundary was only a
// little shorter.
//
// Here each consumer issues S_0 of the next unit and the last P.V of this one in one turn
// (consumer_boundary_step, attn_sm90_boundary_step.cuh): the softmax of S_0 runs while the P.V is on the
// tensor cores, then O is staged for the store warps (v36's STORE_O) and cleared. Every turn is then a full
// one, so the other consumer's turn covers the boundary's own work. The loop is attn_sm90_merged_units.cuh,
// named in v19's DQ_CONSUME hook; everything else is v36's build (attn_sm90_store_tma_kernel.cuh).

#include "common/sm90/ptx.cuh"

struct UnitsSmem;
__device__ __forceinline__ void consume_units_merged(const UnitsSmem& sm, u16* __restrict__ O, int seqlen,
                                                     float scale_log2, int n_heads, int cw, int tid, int lane,
                                                     int row, int col, u32 my_turn, u32 other_turn, u64 desc_k,
                                                     u64 desc_v);

#define DQ_CONSUME consume_units_merged
#include "attn_sm90_store_tma_kernel.cuh"
#include "attn_sm90_merged_units.cuh"
