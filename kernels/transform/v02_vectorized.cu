// v02: one group of four elements per thread, one vector load and one vector store, the i - 16
// look-back from a neighbour's registers.
//
// A group (i % 4 == 0) always holds sin, cos, log and exp in that order, so a thread applies the
// four functions to the four components with no branch. A 32-block is 8 consecutive groups; the
// thread of group g with g % 8 >= 4 is in the block's upper half, and the group 16 elements back
// (g - 4) belongs to the lane 4 below it in the same warp (a warp covers 32 whole groups, and the
// grid-stride step is a multiple of 32 groups), so its four f values come by __shfl_up_sync: x
// is read from global memory exactly once. The sum: each thread keeps its groups' sin terms
// (component a) where the cos term (component b) is over 0.5, in fp32 over its few groups, then
// the block adds them in double in a fixed order (block_sum_fixed) and transform_sum_partials
// adds the blocks'. The last n % 32 elements (a partial 32-block) are done by block 0 one per
// thread, as v01 does (transform_group and finish_block in transform.cuh).

#include "transform_vectorized.cuh"
