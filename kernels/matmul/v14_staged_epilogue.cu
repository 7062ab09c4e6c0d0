// v14: v13 with the epilogue handed to TMA: a consumer warpgroup writes its 64 x 256 block of C into
// a staging buffer in shared memory and one thread issues the TMA stores, so the warpgroup is back
// on the tensor cores while the copy engine writes C out.
//
// In v13 the consumers store C from the accumulators with 64 four-byte global stores a thread;
// until the last one is issued no product of the next tile starts, so every tile's epilogue is
// time the tensor cores stand idle. Here (matmul_wgmma.cuh's store_acc_staged) the fragments go to
// shared memory instead (conflict-free, in the 128-byte swizzle of the C tensor map's 64 x 64
// boxes) and four box stores per warpgroup leave asynchronously; before it writes the buffer again,
// the warpgroup's thread 0 waits until the previous tile's stores have read it, and a named barrier
// of the warpgroup's 128 threads passes that on. The buffer takes 64 KB (32 KB a warpgroup), so the
// ring has room for three slots instead of four. Boxes past the matrix's edge are clipped by TMA.
// Everything else is v13's. The kernel's body is matmul_wgmma_persistent.cuh's, with v13's order
// of the tiles (RowPairOrder).

#include "matmul_wgmma_persistent.cuh"

extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(THREADS, 1)
matmul_wgmma_staged(const __grid_constant__ TmaDesc tm_a, const __grid_constant__ TmaDesc tm_b,
                    const __grid_constant__ TmaDesc tm_c, int n)
{
    persistent_staged_tiles(&tm_a, &tm_b, &tm_c, n, RowPairOrder{});
}
