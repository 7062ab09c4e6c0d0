// v19: v18's stream-K schedule and v17's loop (matmul_stream_k.cuh), each slice also asking the slice
// L2_PREFETCH further on into L2 (matmul_prefetch_vec.cuh's SliceLoader::prefetch_l2): the loop's
// register prefetch runs one slice ahead, enough to hide an L2 hit and not a DRAM access; the hint,
// a few instructions a slice, has the lines in L2 by then. WHOLE_ONLY=1 (the sweep) runs v17's
// schedule on the same grid.

#include "matmul.cuh"

#ifndef L2_PREFETCH
#define L2_PREFETCH 2  // slices ahead
#endif

#include "matmul_stream_k.cuh"

STREAM_K_KERNEL(matmul_l2_prefetch)
