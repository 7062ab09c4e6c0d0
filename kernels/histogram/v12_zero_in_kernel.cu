// v12: v07's kernel (v05's persistent grid, v04's counting and flush) writing its own zeros: the
// output comes from torch.empty and needs no fill kernel before this one.
//
// v05 and v07 add every block's counters with global atomics into an output that custom_kernel
// zeroed with a fill kernel first: a second kernel in the timed call, about 2 µs on the GPU, and
// the gap between the two launches. v06 wrote the output from the kernel too, but ordered its
// flush: chunk 0 of a group stored its counters, and only then could the other 32 blocks add
// theirs. Here the zeros come first and the flush is v07's. At its start, the block of chunk 0 of
// each channel group stores zeros over the group's rows of the output (128 channels x 256 bins,
// 16 bytes a store), then publishes flags[group] = epoch with a release store. Every block counts
// its slice of rows as v07 does (persistent_block in histogram_persistent.cuh); before its flush,
// thread 0 acquires the flag (set some 180 µs earlier, so the wait is one load) and the block adds
// its counters with v07's sector-wide atomics. `epoch` grows by one per call (the host keeps the
// count, per device and stream), so the flags never need resetting. A waiting block waits only
// for a chunk-0 block, and those have the lowest block indices; the grid is at most one block per
// SM, so every chunk-0 block is resident when the others wait (CUDA does not promise the order in
// which blocks start, so a grid larger than the GPU could deadlock).
//
//   ZERO_DELAY_NS   a test build's chunk-0 blocks spin this long before storing the zeros, so that the
//                   other blocks reach their flush first and must wait on the flag
//                   (tests/test_histogram_gpu.py); 0 unless defined, and the kernel is then v12's own

#ifndef ZERO_DELAY_NS
#define ZERO_DELAY_NS 0
#endif

#include "common/sm90/flag.cuh"
#include "histogram_persistent.cuh"

// Zero the output rows of this block's channel group: GROUP x NUM_BINS words, fewer for a last
// group past the channels.
__device__ __forceinline__ void zero_group_rows(u32* __restrict__ out, u32 group, u32 channels)
{
    const u32 first = group * GROUP;
    const u32 rows = min(GROUP, channels - first);
    uint4* p = reinterpret_cast<uint4*>(out + (u64)first * NUM_BINS);
    for (u32 i = threadIdx.x; i < rows * (NUM_BINS / 4); i += THREADS) p[i] = make_uint4(0u, 0u, 0u, 0u);
}

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_zero_in_kernel(const u8* __restrict__ data, u32* __restrict__ out, u32* __restrict__ flags, u32 length,
                         u32 channels, u32 groups, u32 chunks, u32 epoch)
{
    if (blockIdx.x < groups) {  // chunk 0 of group blockIdx.x
#if ZERO_DELAY_NS
        for (const u64 until = global_timer_ns() + ZERO_DELAY_NS; global_timer_ns() < until;) {
        }
#endif
        zero_group_rows(out, blockIdx.x, channels);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();  // the whole block's zeros, visible before the flag
            st_release_gpu_u32(flags + blockIdx.x, epoch);
        }
    }
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        if (threadIdx.x == 0)
            while (ld_acquire_gpu_u32(flags + group) != epoch) __nanosleep(64);
        __syncthreads();
        flush_bin_major(hist, tile, out, group, channels, lane, warp);
    });
}
