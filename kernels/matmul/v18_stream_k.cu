// v18: v17's loop scheduled by stream-K in its hybrid form (matmul_stream_k.cuh, its tiles 128 x 256
// unless CONFIG says): a persistent grid of one CTA an SM (two on 128 x 128 tiles) computes whole tiles
// a wave at a time, then shares the k slices of the last one to two waves' tiles evenly; a tile cut
// between CTAs is finished by the CTA holding its first slice, which adds the others' partial sums
// from a workspace in a fixed order. 4096 is 512 tiles, 3.88 waves of 132 SMs: the last wave a
// tile-granular grid runs 12 % empty, this grid not at all.

#include "matmul.cuh"
#include "matmul_stream_k.cuh"

STREAM_K_KERNEL(matmul_stream_k)
