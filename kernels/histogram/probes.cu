// Probes: pieces of v05 timed alone, to tell which one bounds it. Not versions: the harness times
// them unchecked (assignment.PROBES, histogram_probes.py; `report run histogram --probes`).
// Every probe uses v05's persistent grid (groups x chunks
// blocks of THREADS threads, one per SM) and writes one word per thread to `sink` so that
// nothing is optimised away.
//
//   probe_read_w4 / _w8 / _w16  read only: each lane loads 4, 8 or 16 bytes of a row, a block
//                               covers a 128-, 256- or 512-byte strip; UNROLL rows in flight
//                               per thread, double-buffered as in v05, with 1024, 512 and 256
//                               threads so that every probe keeps 32 KB per SM in flight.
//                               Which strip width reaches the copy bandwidth?
//   probe_no_atomics            v05's loop with the shared atomic replaced by an add into a
//                               register: loads + byte extraction + address arithmetic.
//   probe_atoms_bin_major       v05's atomics without any global load: values from a
//                               xorshift generator, v05's conflict-free layout.
//   probe_atoms_channel_major   the same with v03's channel-major layout (bank = value % 32).
//   probe_read_w16_t512         read only, as probe_read_w16 with twice the threads: 64 KB per SM in
//                               flight instead of 32. Does the reading go faster with more in flight?
//   probe_read_bulk4 / _bulk6   read only, whole rows: block b copies its contiguous slice of rows
//                               (chunk_rows over the grid, one block per SM) with the copy engine, in
//                               32 KB pieces into a ring of 4 or 6 stages (128 or 192 KB per SM in
//                               flight), one warp waiting on each piece. The fastest the input can be
//                               read, with no loads issued by threads.

#define THREADS 1024
#define WARPS (THREADS / 32)
#define UNROLL 8
#define GROUP 128
#define HIST_WORDS (GROUP * NUM_BINS)

#include "histogram.cuh"

struct Slice {
    u32 row_begin, row_end;
};

__device__ __forceinline__ Slice chunk_rows(u32 length, u32 chunk, u32 chunks)
{
    return {(u32)(((u64)chunk * length) / chunks), (u32)(((u64)(chunk + 1) * length) / chunks)};
}

__device__ __forceinline__ u32 fold(u32 x) { return x; }
__device__ __forceinline__ u32 fold(uint2 x) { return x.x ^ x.y; }
__device__ __forceinline__ u32 fold(uint4 x) { return x.x ^ x.y ^ x.z ^ x.w; }

template <typename V, u32 T>
__device__ __forceinline__ void read_strip(const u8* __restrict__ data, u32* __restrict__ sink, u32 length,
                                           u32 channels, u32 groups, u32 chunks)
{
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups, chunk = blockIdx.x / groups;
    const Slice s = chunk_rows(length, chunk, chunks);
    const u32 width = 32 * sizeof(V);
    const u64 step = (u64)(T / 32) * channels;
    const u8* p = data + group * width + lane * sizeof(V) + (u64)(s.row_begin + warp) * channels;
    const u32 batches = (s.row_end - s.row_begin) / ((T / 32) * UNROLL);
    u32 acc = 0;
    if (batches > 0) {
        V cur[UNROLL], nxt[UNROLL];
#pragma unroll
        for (u32 u = 0; u < UNROLL; ++u) cur[u] = __ldg(reinterpret_cast<const V*>(p + u * step));
        p += UNROLL * step;
        for (u32 b = 1; b < batches; ++b) {
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) nxt[u] = __ldg(reinterpret_cast<const V*>(p + u * step));
            p += UNROLL * step;
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) acc ^= fold(cur[u]);
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) cur[u] = nxt[u];
        }
#pragma unroll
        for (u32 u = 0; u < UNROLL; ++u) acc ^= fold(cur[u]);
    }
    sink[blockIdx.x * T + threadIdx.x] = acc;
}

extern "C" __global__ void __launch_bounds__(1024, 1)
probe_read_w4(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups, u32 chunks)
{
    read_strip<u32, 1024>(data, sink, length, channels, groups, chunks);
}

extern "C" __global__ void __launch_bounds__(512, 1)
probe_read_w8(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups, u32 chunks)
{
    read_strip<uint2, 512>(data, sink, length, channels, groups, chunks);
}

extern "C" __global__ void __launch_bounds__(256, 1)
probe_read_w16(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups, u32 chunks)
{
    read_strip<uint4, 256>(data, sink, length, channels, groups, chunks);
}

// v05's row loop; the atomic on address a becomes acc += a
extern "C" __global__ void __launch_bounds__(THREADS, 1)
probe_no_atomics(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups,
                 u32 chunks)
{
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups, chunk = blockIdx.x / groups;
    const Slice s = chunk_rows(length, chunk, chunks);
    const u32 lane_base = lane * 4;
    const u64 step = (u64)WARPS * channels;
    const u8* p = data + group * GROUP + lane * 4 + (u64)(s.row_begin + warp) * channels;
    const u32 batches = (s.row_end - s.row_begin) / (WARPS * UNROLL);
    u32 acc = 0;
    if (batches > 0) {
        u32 cur[UNROLL], nxt[UNROLL];
#pragma unroll
        for (u32 u = 0; u < UNROLL; ++u) cur[u] = __ldg(reinterpret_cast<const u32*>(p + u * step));
        p += UNROLL * step;
        for (u32 b = 1; b < batches; ++b) {
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) nxt[u] = __ldg(reinterpret_cast<const u32*>(p + u * step));
            p += UNROLL * step;
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u)
#pragma unroll
                for (u32 j = 0; j < 4; ++j) acc += lane_base + j * 128 + (__byte_perm(cur[u], 0u, 0x4440u | j) << 9);
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) cur[u] = nxt[u];
        }
#pragma unroll
        for (u32 u = 0; u < UNROLL; ++u)
#pragma unroll
            for (u32 j = 0; j < 4; ++j) acc += lane_base + j * 128 + (__byte_perm(cur[u], 0u, 0x4440u | j) << 9);
    }
    sink[blockIdx.x * THREADS + threadIdx.x] = acc;
}

// as many words per thread as v05 counts on this (length, channels); values from xorshift32
template <u32 LANE_BYTES, u32 J_BYTES, u32 VALUE_SHIFT>
__device__ __forceinline__ void atoms_only(u32* __restrict__ sink, u32 length, u32 groups, u32 chunks)
{
    extern __shared__ __align__(16) u32 hist[];
    for (u32 i = threadIdx.x; i < HIST_WORDS / 4; i += THREADS)
        reinterpret_cast<uint4*>(hist)[i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();
    const u32 lane = threadIdx.x & 31;
    const Slice s = chunk_rows(length, blockIdx.x / groups, chunks);
    const u32 words = (s.row_end - s.row_begin) / WARPS;
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;
    u32 x = 0x9E3779B9u * (blockIdx.x * THREADS + threadIdx.x + 1);
    for (u32 w = 0; w < words; ++w) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
#pragma unroll
        for (u32 j = 0; j < 4; ++j) shared_inc(lane_base + j * J_BYTES + (__byte_perm(x, 0u, 0x4440u | j) << VALUE_SHIFT));
    }
    __syncthreads();
    sink[blockIdx.x * THREADS + threadIdx.x] = hist[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
probe_atoms_bin_major(u32* __restrict__ sink, u32 length, u32 groups, u32 chunks)
{
    atoms_only<4, 128, 9>(sink, length, groups, chunks);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
probe_atoms_channel_major(u32* __restrict__ sink, u32 length, u32 groups, u32 chunks)
{
    atoms_only<4096, 1024, 2>(sink, length, groups, chunks);
}

// read only, twice the threads of probe_read_w16 (64 KB per SM in flight)
extern "C" __global__ void __launch_bounds__(512, 1)
probe_read_w16_t512(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups,
                    u32 chunks)
{
    read_strip<uint4, 512>(data, sink, length, channels, groups, chunks);
}

#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#define BULK_PIECE 32768u

// Read only, whole rows: the block's contiguous slice of rows in BULK_PIECE copies through a ring of
// S stages, one warp (the block's only one) waiting on each piece, folding a word of it into the sink,
// and refilling its stage with the piece S on.
template <u32 S>
__device__ __forceinline__ void read_bulk(const u8* __restrict__ data, u32* __restrict__ sink, u32 length,
                                          u32 channels)
{
    extern __shared__ __align__(128) u8 bulk_ring[];
    const u32 lane = threadIdx.x & 31;
    const u32 bars = smem_u32(bulk_ring + S * BULK_PIECE);
    const Slice sl = chunk_rows(length, blockIdx.x, gridDim.x);
    const u64 begin = (u64)sl.row_begin * channels, bytes = (u64)(sl.row_end - sl.row_begin) * channels;
    const u32 pieces = (u32)((bytes + BULK_PIECE - 1) / BULK_PIECE);
    if (lane == 0) {
#pragma unroll
        for (u32 s = 0; s < S; ++s) mbar_init(bars + 8 * s, 1);
        fence_mbarrier_init();
    }
    __syncwarp();
    auto issue = [&](u32 i) {
        if (lane == 0) {
            const u32 s = i % S;
            const u32 n = (u32)min((u64)BULK_PIECE, bytes - (u64)i * BULK_PIECE);
            mbar_arrive_expect_tx(bars + 8 * s, n);
            bulk_load(smem_u32(bulk_ring + s * BULK_PIECE), data + begin + (u64)i * BULK_PIECE, n, bars + 8 * s);
        }
        __syncwarp();
    };
    for (u32 i = 0; i < S && i < pieces; ++i) issue(i);
    u32 acc = 0;
    for (u32 i = 0; i < pieces; ++i) {
        const u32 s = i % S;
        mbar_wait(bars + 8 * s, (i / S) & 1u);
        acc ^= reinterpret_cast<const volatile u32*>(bulk_ring + s * BULK_PIECE)[lane];
        __syncwarp();
        if (i + S < pieces) issue(i + S);
    }
    sink[blockIdx.x * 32 + lane] = acc;
}

extern "C" __global__ void __launch_bounds__(32, 1)
probe_read_bulk4(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels)
{
    read_bulk<4>(data, sink, length, channels);
}

extern "C" __global__ void __launch_bounds__(32, 1)
probe_read_bulk6(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels)
{
    read_bulk<6>(data, sink, length, channels);
}
