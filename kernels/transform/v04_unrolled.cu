// v04: v03 with UNROLL groups in flight per thread: all of a thread's loads of one iteration are
// issued before the first group is computed.
//
// v02 and v03 keep one 16-byte load in flight per thread (the load, then the four functions and
// the store that need it). Here an iteration covers UNROLL·blockDim groups per block: the thread
// loads its UNROLL groups (blockDim apart, so each warp still holds 32 consecutive groups for the
// look-back shuffle), then transforms and stores them one after another. UNROLL and the blocks
// per SM come from the recorded sweep (v04_unrolled.py). Fast intrinsics as in v03. The loop is
// transform.cuh's grid_loop.

#include "transform_unrolled.cuh"
