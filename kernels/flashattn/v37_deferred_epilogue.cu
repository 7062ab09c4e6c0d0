// v37: v36 with each unit's epilogue moved under the next unit's first S.
//
// In v36 a consumer's unit ends with its last P.V, which it waits for, then its epilogue (the row sums
// reduced, O / l staged for the store warp), then the next unit's first S: issued, waited for, and its
// softmax. The epilogue and that softmax are the consumer's own work between two of its turns on the tensor
// cores, and at the unit boundary the other consumer's P.V alone does not cover both.
//
// Here a consumer issues the next unit's first S as soon as its turn comes after the last P.V, and stages
// the previous unit's O while that S is on the tensor cores; O and the row sums live across units for that
// (v19's kernel, attn_sm90_double_q.cuh, with DQ_DEFER_EPILOGUE 1). The last unit's epilogue runs after
// the loop. Everything else is v36's (its build, attn_sm90_store_tma_kernel.cuh, with the switch on): the
// step, the store warps and their TMA stores, the launch.

#define DQ_DEFER_EPILOGUE 1
#include "attn_sm90_store_tma_kernel.cuh"
