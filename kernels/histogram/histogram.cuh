// The device pieces the CUDA histogram versions share: the types, zeroing and flushing a block's
// shared-memory histogram, and the counting loops of the word-load versions (v03 on), each as
// the version that brought it wrote it. A version file keeps its idea: its layout of the
// counters, its grid, the order of its steps.
//
// Configuration macros, read where this header is included (define them before it). A group of
// helpers is there when the macros it reads are defined, so each version gets the ones it uses:
//   GROUP, THREADS              channels and threads per block: flush_channel_major;
//   HIST_WORDS, WARPS,          GROUP * NUM_BINS, THREADS / 32, and the shared-memory layout of the
//   LANE_BYTES, J_BYTES,        word-load versions, the counter of (channel 4*lane + j, value b) at
//   VALUE_SHIFT                 byte lane*LANE_BYTES + j*J_BYTES + (b << VALUE_SHIFT): zero_hist, count4;
//   BATCH                       rows per thread per step: count_rows_batched;
//   TILE_PITCH                  words per row of the flush tile: flush_bin_major;
//   UNROLL                      rows per thread per batch: load_batch, count_rows_pipelined;
//   ROW_LOAD(p)                 how those two load a row's word, __ldg(p) unless defined (v11).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place; a
// different behaviour gets a new name (`report same-code` proves that a version's kernels compile
// to the PTX its records ran).
#pragma once

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define NUM_BINS 256

// one increment of a shared-memory counter (its byte address)
__device__ __forceinline__ void shared_inc(u32 addr)
{
    // the result is unused: a reduction, not a fetch-and-add
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr) : "memory");
}

// --------------------------------------------------------------------------- channel-major (v02, v03)
#if defined(GROUP) && defined(THREADS)

// Add a block's channel-major histogram of channels [blockIdx.x*GROUP, +GROUP) into out: the
// counters have the output's layout, so one coalesced atomicAdd per non-zero counter.
__device__ __forceinline__ void flush_channel_major(const u32* hist, u32* __restrict__ out, u32 channels)
{
    u32* out_group = out + (u64)blockIdx.x * GROUP * NUM_BINS;
    for (u32 i = threadIdx.x; i < GROUP * NUM_BINS; i += THREADS) {
        const u32 count = hist[i];
        if (count != 0 && blockIdx.x * GROUP + i / NUM_BINS < channels) atomicAdd(&out_group[i], count);
    }
}
#endif  // GROUP, THREADS

// --------------------------------------------------------------------------- word loads (v03 on)
#if defined(HIST_WORDS) && defined(WARPS) && defined(LANE_BYTES) && defined(J_BYTES) && defined(VALUE_SHIFT)

// Zero HIST_WORDS counters of dynamic shared memory, 16 bytes a store.
__device__ __forceinline__ void zero_hist(u32* hist)
{
    for (u32 i = threadIdx.x; i < HIST_WORDS / 4; i += THREADS)
        reinterpret_cast<uint4*>(hist)[i] = make_uint4(0u, 0u, 0u, 0u);
}

// count the 4 bytes of x: channel 4*lane + j holds byte j
__device__ __forceinline__ void count4(u32 lane_base, u32 x)
{
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
        const u32 value = __byte_perm(x, 0u, 0x4440u | j);  // byte j, zero-extended: one PRMT
        shared_inc(lane_base + j * J_BYTES + (value << VALUE_SHIFT));
    }
}

#ifdef BATCH
// Rows row_begin + warp, + WARPS, ... < row_end of the 4 channels at p: BATCH loads in flight per
// thread before it counts any of them (v03).
__device__ __forceinline__ void count_rows_batched(u32 lane_base, const u8* p, u32 row, u32 row_end, u32 channels)
{
    for (; row + (BATCH - 1) * WARPS < row_end; row += BATCH * WARPS) {
        u32 x[BATCH];
#pragma unroll
        for (u32 u = 0; u < BATCH; ++u)
            x[u] = __ldg(reinterpret_cast<const u32*>(p + (u64)(row + u * WARPS) * channels));
#pragma unroll
        for (u32 u = 0; u < BATCH; ++u) count4(lane_base, x[u]);
    }
    for (; row < row_end; row += WARPS)
        count4(lane_base, __ldg(reinterpret_cast<const u32*>(p + (u64)row * channels)));
}

// The block's rows [blockIdx.y * rows_per_block, + rows_per_block) of its GROUP channels counted
// into hist, zeroed first; BATCH loads in flight per thread (v03's block).
__device__ __forceinline__ void count_block_rows(u32* hist, const u8* __restrict__ data, u32 length, u32 channels,
                                                 u32 rows_per_block)
{
    zero_hist(hist);
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 col = blockIdx.x * GROUP + lane * 4;  // first of this thread's 4 channels
    const u32 row_begin = blockIdx.y * rows_per_block;
    const u32 row_end = min(row_begin + rows_per_block, length);
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;

    if (col < channels)  // channels % 4 == 0: a thread's 4 channels are all in or all out
        count_rows_batched(lane_base, data + col, row_begin + warp, row_end, channels);
    __syncthreads();
}
#endif  // BATCH

// the bin-major layout's flush (v04 on)
#ifdef TILE_PITCH

// The block's bin-major histogram of channels [group*GROUP, +GROUP), transposed through a padded
// tile per warp: 8 values x 32 channels read conflict-free, then 8 consecutive lanes hold 8
// consecutive values of one channel, so that writes to the channel-major output cover 4 full
// sectors per warp instruction. f(channel, v0, k, count) is called for value v0 + k of channel.
#define BIN_MAJOR_TILES ((NUM_BINS / 8) * 4)  // 32 blocks of 8 values x 4 byte positions j (each j: 32 channels 4l + j)

// Tile t of the block's bin-major histogram through this warp's padded tile: f(channel, v0, k, count)
// for its 8 values v0 + k of 32 channels, 8 consecutive lanes holding 8 consecutive values of one channel.
template <typename F>
__device__ __forceinline__ void bin_major_tile(const u32* hist, u32* tile, u32 group, u32 lane, u32 t, F f)
{
    const u32 v0 = (t >> 2) * 8, j = t & 3;
#pragma unroll
    for (u32 k = 0; k < 8; ++k) tile[lane * TILE_PITCH + k] = hist[(v0 + k) * GROUP + j * 32 + lane];
    __syncwarp();
#pragma unroll
    for (u32 m = 0; m < 8; ++m) {
        const u32 l = (lane >> 3) + 4 * m, k = lane & 7;  // 8 lanes: 8 consecutive values of channel 4l + j
        const u32 count = tile[l * TILE_PITCH + k];
        const u32 channel = group * GROUP + 4 * l + j;
        f(channel, v0, k, count);
    }
    __syncwarp();
}

template <typename F>
__device__ __forceinline__ void for_each_bin_major(const u32* hist, u32* tile, u32 group, u32 lane, u32 warp, F f)
{
    for (u32 t = warp; t < BIN_MAJOR_TILES; t += WARPS) bin_major_tile(hist, tile, group, lane, t, f);
}

// As for_each_bin_major, the warps' tiles shifted by `shift` (mod the 128 tiles): at any moment the
// block's warps hold tiles shift .. shift + WARPS - 1 (+ WARPS per round) instead of 0 .. WARPS - 1 (v14).
template <typename F>
__device__ __forceinline__ void for_each_bin_major_shifted(const u32* hist, u32* tile, u32 group, u32 lane, u32 warp,
                                                           u32 shift, F f)
{
    for (u32 i = warp; i < BIN_MAJOR_TILES; i += WARPS)
        bin_major_tile(hist, tile, group, lane, (i + shift) % BIN_MAJOR_TILES, f);
}

// Add the block's bin-major histogram into the (zeroed) output: one atomicAdd per non-zero counter.
__device__ __forceinline__ void flush_bin_major(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                u32 channels, u32 lane, u32 warp)
{
    for_each_bin_major(hist, tile, group, lane, warp, [&](u32 channel, u32 v0, u32 k, u32 count) {
        if (count != 0 && channel < channels) atomicAdd(&out[channel * NUM_BINS + v0 + k], count);
    });
}

// flush_bin_major's step as a named callable, for the flushes that visit the tiles in another order (v14,
// v15): one atomicAdd per non-zero counter of a channel inside the output.
struct AddCount {
    u32* __restrict__ out;
    u32 channels;
    __device__ __forceinline__ void operator()(u32 channel, u32 v0, u32 k, u32 count) const
    {
        if (count != 0 && channel < channels) atomicAdd(&out[channel * NUM_BINS + v0 + k], count);
    }
};

// Add the block's bin-major histogram into the (zeroed) output two counters an atomic (v13): values
// v0 + k and v0 + k + 1 of a channel (k even, its neighbour's count from the next lane) as one 64-bit
// add, v0 + k's count in the low word (little-endian, as the output's int32 pair lies). No carry
// crosses the words: a counter's total is at most the length, below 2^31.
__device__ __forceinline__ void flush_bin_major_pairs(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                      u32 channels, u32 lane, u32 warp)
{
    for_each_bin_major(hist, tile, group, lane, warp, [&](u32 channel, u32 v0, u32 k, u32 count) {
        const u32 next = __shfl_down_sync(0xffffffffu, count, 1);  // value v0 + k + 1 of the same channel
        if ((k & 1) == 0 && (count | next) != 0 && channel < channels)
            atomicAdd(reinterpret_cast<unsigned long long*>(&out[channel * NUM_BINS + v0 + k]),
                      ((unsigned long long)next << 32) | count);
    });
}

// v04's flush with the tiles shifted by `shift` (v14): for_each_bin_major_shifted's order.
__device__ __forceinline__ void flush_bin_major_shifted(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                        u32 channels, u32 lane, u32 warp, u32 shift)
{
    for_each_bin_major_shifted(hist, tile, group, lane, warp, shift, AddCount{out, channels});
}

// v04's flush of tiles [first, first + count) only (v15: each CTA of a cluster pair flushes its half).
__device__ __forceinline__ void flush_bin_major_tiles(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                      u32 channels, u32 lane, u32 warp, u32 first, u32 count)
{
    for (u32 i = warp; i < count; i += WARPS)
        bin_major_tile(hist, tile, group, lane, first + i, AddCount{out, channels});
}
#endif  // TILE_PITCH

// the persistent grid's loop (v05 on)
#ifdef UNROLL

// how the loop loads a row's word: the read-only path (__ldg) unless a version defines it (v11: a
// streaming load that L2 evicts first)
#ifndef ROW_LOAD
#define ROW_LOAD(p) __ldg(p)
#endif

__device__ __forceinline__ void load_batch(u32 (&x)[UNROLL], const u8* p, u64 step)
{
#pragma unroll
    for (u32 u = 0; u < UNROLL; ++u) x[u] = ROW_LOAD(reinterpret_cast<const u32*>(p + u * step));
}

// Rows [row_begin, row_end) of the 4 channels from col (none when col is past the channels),
// warp-strided: two register batches of UNROLL words, the loads of the next issued before the
// current one is counted (v05).
__device__ __forceinline__ void count_rows_pipelined(u32 lane_base, const u8* __restrict__ data, u32 col, u32 row_begin,
                                                     u32 row_end, u32 warp, u32 channels)
{
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
            count4(lane_base, ROW_LOAD(reinterpret_cast<const u32*>(data + col + (u64)row * channels)));
    }
}

// Rows [chunk * length / chunks, (chunk + 1) * length / chunks) of channel group `group` counted into
// hist, which the caller zeroed (count_slice's loop for a given group and chunk).
__device__ __forceinline__ void count_group_chunk(u32* hist, const u8* __restrict__ data, u32 length, u32 channels,
                                                  u32 lane, u32 warp, u32 group, u32 chunk, u32 chunks)
{
    const u32 row_begin = (u32)(((u64)chunk * length) / chunks);
    const u32 row_end = (u32)(((u64)(chunk + 1) * length) / chunks);
    const u32 col = group * GROUP + lane * 4;
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;

    count_rows_pipelined(lane_base, data, col, row_begin, row_end, warp, channels);
}

// The persistent grid's share of one block (block b: channel group b % groups, chunk b / groups
// of the rows, cut in equal parts) counted into hist, zeroed first (v05's block).
__device__ __forceinline__ void count_slice(u32* hist, const u8* __restrict__ data, u32 length, u32 channels,
                                            u32 groups, u32 chunks)
{
    zero_hist(hist);
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups;
    const u32 chunk = blockIdx.x / groups;
    count_group_chunk(hist, data, length, channels, lane, warp, group, chunk, chunks);
    __syncthreads();
}

// count_slice for a given channel group and chunk (v15's blocks are numbered otherwise).
__device__ __forceinline__ void count_slice_at(u32* hist, const u8* __restrict__ data, u32 length, u32 channels,
                                               u32 group, u32 chunk, u32 chunks)
{
    zero_hist(hist);
    __syncthreads();
    count_group_chunk(hist, data, length, channels, threadIdx.x & 31, threadIdx.x >> 5, group, chunk, chunks);
    __syncthreads();
}
#endif  // UNROLL
#endif  // word loads
