// v15: v14 with the tile pairs dealt out in groups of GROUP row pairs, column by column within a
// group, so that the pairs working at one time share fewer rows of A and far fewer columns of B.
//
// In v14 pair p is row pair p / col_tiles, column tile p % col_tiles: the 66 pairs that run at
// once span two or three row pairs and every column tile, so over their k loop they read all of B.
// At N = 8192 B is 128 MB, more than the L2 (50 MB), and each round of pairs reads it from DRAM
// again. Here (Triton's "grouped ordering") pair p falls in group p / (GROUP col_tiles), which
// covers row pairs GROUP g .. GROUP g + GROUP - 1 (fewer in the last group); within the group the
// pairs go down a column first: row pair first + w % rows, column tile w / rows, w = p's place in
// the group. 66 pairs then cover GROUP row pairs and about 66 / GROUP columns: a GROUP x 66 / GROUP
// block of C, whose rows of A and columns of B the L2 keeps while the round lasts. Everything else
// is v14's (matmul_wgmma_persistent.cuh).

#include "matmul_wgmma_persistent.cuh"

#ifndef GROUP
#define GROUP 8
#endif

struct GroupedPairOrder {
    __device__ __forceinline__ int2 operator()(int p, int col_tiles, int row_pairs) const
    {
        const int per_group = GROUP * col_tiles, first = (p / per_group) * GROUP;
        const int rows = min(GROUP, row_pairs - first), w = p % per_group;
        return make_int2(first + w % rows, w / rows);
    }
};

extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(THREADS, 1)
matmul_wgmma_grouped(const __grid_constant__ TmaDesc tm_a, const __grid_constant__ TmaDesc tm_b,
                     const __grid_constant__ TmaDesc tm_c, int n)
{
    persistent_staged_tiles(&tm_a, &tm_b, &tm_c, n, GroupedPairOrder{});
}
