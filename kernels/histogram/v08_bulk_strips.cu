// v08: v05's persistent grid and bin-major counting, fed by the SM's copy engine: each block's
// 128-byte strip of every row comes into shared memory by one-dimensional bulk copies
// (cp.async.bulk, common/sm90/bulk.cuh), a lane a row, 32 rows an instruction of warp 0, ROWS rows a
// stage, STAGES stages in flight; the threads count out of shared memory (histogram_staged.cuh's
// staged_block, which this version's fill hook feeds).
//
// v05 keeps UNROLL words a thread in flight in registers (32 KB an SM at 1024 x 8) and issues
// every 4-byte load itself. Here the block keeps STAGES x ROWS x 128 bytes in flight (96 KB at
// 3 x 256), three times v05's, with no register holding them. The host checks channels % 16 == 0
// and a 16-byte aligned input, which the copies need.

#include "histogram_staged.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_bulk_strips(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                      u32 chunks)
{
    const u32 lane = threadIdx.x & 31;
    const u8* src = data + (blockIdx.x % groups) * GROUP + (u64)(((u64)(blockIdx.x / groups) * length) / chunks) * channels;
    staged_block(out, length, channels, groups, chunks, [&](u32 b, u32 n, u32 dst, u32 bar, u32 strip) {
        // a row a lane: lane 0 arms the stage's mbarrier for the n rows' bytes
        if (lane == 0) mbar_arrive_expect_tx(bar, n * strip);
        __syncwarp();
        for (u32 r = lane; r < n; r += 32) bulk_load(dst + r * GROUP, src + (u64)(b * ROWS + r) * channels, strip, bar);
    });
}
