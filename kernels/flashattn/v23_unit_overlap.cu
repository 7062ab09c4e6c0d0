// v23: v21 (v19's persistent kernel with two Q buffers, v21's staged epilogue) with the boundary
// between two work units run as one ordinary step (attn_sm90_unit_overlap.cuh). In v19's kernel a
// consumer ends a unit with a turn for its last P.V alone, stores O, then takes another turn for
// the next unit's first S alone and waits for it before its softmax: two half-empty turns and an
// epilogue in series, about 1.5 us of a 13.48 us unit in v21's trace of test_small. Here the next
// unit's S_0 (its Q is already loaded, a unit ahead, in the other buffer) is issued in the same turn
// as the last P.V, its softmax runs while the P.V finishes, and the epilogue of the finished unit
// runs while the other consumer takes its turn. Everything else is v21's.

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void store_o_staged(const float (&o)[64], float inv0, float inv1, u16* o0, int lane);

#define STORE_O store_o_staged
#include "attn_sm90_unit_overlap.cuh"

#include "attn_sm90_staged_store.cuh"
