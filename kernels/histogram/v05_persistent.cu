// v05: v04's conflict-free counting on a persistent grid — one block per SM, each block
// owning one 128-channel group and one contiguous run of rows — with the next batch of rows
// loaded while the current one is counted.
//
// v03/v04 launch (channels/128) x (length/8192) blocks: about four waves of 132 on an H100,
// each block zeroing and flushing 128 KB of counters for 8192 rows, and each thread with
// only its 4 loads in flight between two bursts of atomics. Here the grid is
// groups x chunks = the SM count (4 x 33 = 132 for 512 channels), so every SM streams one
// contiguous slice of length/33 rows of its group, zeroes and flushes its histogram once,
// and there is no wave tail. Inside the row loop each thread holds two register batches of
// UNROLL words: it issues the loads of batch i+1, then counts batch i, so that UNROLL loads
// per thread (32 KB per SM at 1024 threads x 8) are always in flight while the shared
// atomics run. Counting and flushing are v04's.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#ifndef THREADS
#define THREADS 1024
#endif
#ifndef UNROLL
#define UNROLL 8                        // rows per thread per batch
#endif
#define WARPS (THREADS / 32)
#define NUM_BINS 256
#define GROUP 128                       // channels per block: 32 lanes x 4 bytes
#define HIST_WORDS (GROUP * NUM_BINS)   // 32768 counters, 128 KB
#define TILE_PITCH 9
#define TILE_WORDS (32 * TILE_PITCH)

// counter of (channel 4*lane + j, value b) at byte b*512 + j*128 + lane*4: bin-major, bank = lane
#define LANE_BYTES 4
#define J_BYTES (32 * 4)
#define VALUE_SHIFT 9

__device__ __forceinline__ void shared_inc(u32 addr)
{
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr) : "memory");
}

__device__ __forceinline__ void count4(u32 lane_base, u32 x)
{
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
        const u32 value = __byte_perm(x, 0u, 0x4440u | j);
        shared_inc(lane_base + j * J_BYTES + (value << VALUE_SHIFT));
    }
}

__device__ __forceinline__ void load_batch(u32 (&x)[UNROLL], const u8* p, u64 step)
{
#pragma unroll
    for (u32 u = 0; u < UNROLL; ++u) x[u] = __ldg(reinterpret_cast<const u32*>(p + u * step));
}

__device__ __forceinline__ void flush_bin_major(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                u32 channels, u32 lane, u32 warp)
{
    for (u32 t = warp; t < (NUM_BINS / 8) * 4; t += WARPS) {
        const u32 v0 = (t >> 2) * 8, j = t & 3;
#pragma unroll
        for (u32 k = 0; k < 8; ++k) tile[lane * TILE_PITCH + k] = hist[(v0 + k) * GROUP + j * 32 + lane];
        __syncwarp();
#pragma unroll
        for (u32 m = 0; m < 8; ++m) {
            const u32 l = (lane >> 3) + 4 * m, k = lane & 7;
            const u32 count = tile[l * TILE_PITCH + k];
            const u32 channel = group * GROUP + 4 * l + j;
            if (count != 0 && channel < channels) atomicAdd(&out[channel * NUM_BINS + v0 + k], count);
        }
        __syncwarp();
    }
}

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_persistent(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                     u32 chunks)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;

    for (u32 i = threadIdx.x; i < HIST_WORDS / 4; i += THREADS)
        reinterpret_cast<uint4*>(hist)[i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups;
    const u32 chunk = blockIdx.x / groups;
    const u32 row_begin = (u32)(((u64)chunk * length) / chunks);
    const u32 row_end = (u32)(((u64)(chunk + 1) * length) / chunks);
    const u32 col = group * GROUP + lane * 4;
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;

    if (col < channels) {
        const u64 step = (u64)WARPS * channels;  // bytes between two rows of one warp
        const u8* p = data + col + (u64)(row_begin + warp) * channels;
        const u32 batches = (row_end - row_begin) / (WARPS * UNROLL);
        if (batches > 0) {
            u32 cur[UNROLL], nxt[UNROLL];
            load_batch(cur, p, step);
            p += UNROLL * step;
            for (u32 b = 1; b < batches; ++b) {
                load_batch(nxt, p, step);  // in flight while cur is counted
                p += UNROLL * step;
#pragma unroll
                for (u32 u = 0; u < UNROLL; ++u) count4(lane_base, cur[u]);
#pragma unroll
                for (u32 u = 0; u < UNROLL; ++u) cur[u] = nxt[u];
            }
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) count4(lane_base, cur[u]);
        }
        for (u32 row = row_begin + batches * WARPS * UNROLL + warp; row < row_end; row += WARPS)
            count4(lane_base, __ldg(reinterpret_cast<const u32*>(data + col + (u64)row * channels)));
    }
    __syncthreads();
    flush_bin_major(hist, tile, out, group, channels, lane, warp);
}
