// v06: v05 in a single launch: no zero-filled output, no separate zeroing kernel.
//
// v05's flush adds every block's counters into an output that custom_kernel zeroed with a
// separate fill kernel first: one more launch, and the host work between the two launches
// sits inside the timed region once it outlasts what the GPU still has queued. Here the
// output comes straight from torch.empty (its old contents are garbage) and the first chunk
// of each channel group writes it: block (group, chunk 0) stores all of its counters (zeros
// included), then publishes `flags[group] = epoch` with a release store; every other block
// of the group waits, after its own counting, until it acquires that epoch and only then
// adds its counters with global atomics. The grid is one block per SM, so all blocks are
// resident and the wait cannot deadlock; chunk-0 blocks have the lowest block indices and
// are dispatched first anyway. `epoch` grows by one per call (the host keeps the count), so
// the flags never need resetting. Counting is v05's: persistent_block in
// histogram_persistent.cuh, its flush hook set here to the store-or-add flush behind the flags.

#include "histogram_persistent.cuh"

// STORE: write every counter (the output is uninitialised); else add the non-zero ones
template <bool STORE>
__device__ __forceinline__ void flush_store_or_add(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                   u32 channels, u32 lane, u32 warp)
{
    for_each_bin_major(hist, tile, group, lane, warp, [&](u32 channel, u32 v0, u32 k, u32 count) {
        if (channel < channels) {
            if (STORE)
                out[channel * NUM_BINS + v0 + k] = count;
            else if (count != 0)
                atomicAdd(&out[channel * NUM_BINS + v0 + k], count);
        }
    });
}

__device__ __forceinline__ void store_release(u32* p, u32 v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 load_acquire(const u32* p)
{
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_single_launch(const u8* __restrict__ data, u32* __restrict__ out, u32* __restrict__ flags, u32 length,
                        u32 channels, u32 groups, u32 chunks, u32 epoch)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        const u32 chunk = blockIdx.x / groups;
        if (chunk == 0) {
            flush_store_or_add<true>(hist, tile, out, group, channels, lane, warp);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();  // the whole block's stores, made visible before the flag
                store_release(flags + group, epoch);
            }
        } else {
            if (threadIdx.x == 0)
                while (load_acquire(flags + group) != epoch) __nanosleep(256);
            __syncthreads();
            flush_store_or_add<false>(hist, tile, out, group, channels, lane, warp);
        }
    });
}
