// v09: v08's ring filled by the tensor engine: one two-dimensional TMA copy a stage, a box of ROWS
// rows x 128 bytes of the input seen as a [length, channels] uint8 tensor (common/sm90/tma.cuh),
// where v08 issued a 128-byte bulk copy a row. The block and its counting are histogram_staged.cuh's.
//
// A box is always whole: rows past the input come in as zeros and a strip's bytes past the last
// channel too, so the mbarrier expects ROWS x 128 bytes every stage; only the block's own rows
// and channels are counted. The box of a block's last batch may reach into the next block's rows,
// which it reads and does not count.

#include "histogram_staged.cuh"
#include "common/sm90/tma.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_tma_strips(const __grid_constant__ TmaDesc map, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                     u32 chunks)
{
    const u32 lane = threadIdx.x & 31;
    const int col = (int)((blockIdx.x % groups) * GROUP);
    const int row0 = (int)(((u64)(blockIdx.x / groups) * length) / chunks);
    if (threadIdx.x == 0) prefetch_tensor_map(&map);
    staged_block(out, length, channels, groups, chunks, [&](u32 b, u32, u32 dst, u32 bar, u32) {
        if (lane == 0) {
            mbar_arrive_expect_tx(bar, ROWS * GROUP);
            tma_load_box_2d(dst, &map, col, row0 + (int)(b * ROWS), bar);
        }
        __syncwarp();
    });
}
