// The warp-specialised wgmma pipeline of matmul's Hopper versions (v11 on): the ring of shared-memory
// slots and their mbarriers, the producer's loop (one lane issuing TMA copies per slice), the
// consumers' loop (m64n256k16 products on each slot, releasing the previous one) and the epilogue
// (C stored from the accumulators). What each does and why is in v11_wgmma_tma.cu, the first
// version built on it.
//
// Tile: BM x BN = 128 x 256 of C, BK = 64-deep slices; warpgroup 2 produces, 0 and 1 consume (rows
// 64w .. 64w + 63 each). A slot holds A's slice (128 rows x 128 B, K-major, 128-byte swizzle) and
// B's (four 64-column blocks of 64 k rows x 128 B, N-major), STAGE_BYTES in all; the slots are
// 1024-byte aligned; the mbarriers follow them (full: 8 s, empty: 8 (STAGES + s)).
//
// Configuration macros, read where this header is included (define them before it):
//   STAGES  slots in the ring (default 4).
// The version defines how B's slice is copied (v11: four boxes; v12: half of them, multicast) and
// how many arrivals empty a slot (the consumer warps of the CTA, or of the cluster).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#ifndef ELEM_FP16
#define ELEM_FP16 1  // fp16 unless a build says otherwise (and then the #error below says why not)
#endif
#include "matmul.cuh"

#if !ELEM_FP16
#error "matmul_wgmma.cuh: the tensor-core versions multiply fp16 (build with ELEM_FP16=1)"
#endif

#define PROXY_FENCE 0  // TMA writes through the async proxy that wgmma reads through
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/tma_store.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/wgmma.cuh"
#include "common/sm90/wgmma_m64n256.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#define BM 128
#define BN 256
#define BK 64
#define THREADS 384
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232
#define A_BYTES (BM * BK * 2)                      // 16384
#define B_BLOCK_BYTES (BK * 64 * 2)                // 8192: one 64-column block of B's slice
#define STAGE_BYTES (A_BYTES + 4 * B_BLOCK_BYTES)  // 49152
#define CONSUMER_WARPS 8

static_assert(PRODUCER_REGS + 2 * CONSUMER_REGS <= 3 * 168, "setmaxnreg: the registers of 384 threads");

struct Ring {
    u32 base;   // slot 0 (slot s at + s * STAGE_BYTES)
    u32 full;   // slot s's full barrier at + 8 s
    u32 empty;  // slot s's empty barrier at + 8 s

    __device__ __forceinline__ u32 slot(int s) const { return base + s * STAGE_BYTES; }
};

// the ring in the dynamic shared memory (which carries 1024 B of slack for the alignment)
__device__ __forceinline__ Ring ring_at(const unsigned char* smem_raw)
{
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    return {base, base + STAGES * STAGE_BYTES, base + STAGES * STAGE_BYTES + 8 * STAGES};
}

// one thread: a full barrier waits for the producer's arrive (and the bytes), an empty one for
// `empty_arrivals` consumer warps
__device__ __forceinline__ void init_ring(const Ring& r, u32 empty_arrivals)
{
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        mbar_init(r.full + 8 * s, 1);
        mbar_init(r.empty + 8 * s, empty_arrivals);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// The producer warp: slices [0, slices) of the tile at (tile_row, tile_col) into the ring, slice k
// into slot k % STAGES once the consumers released it. All 32 lanes wait; lane 0 arms the full
// barrier with the slot's bytes, copies A's box and calls load_b(slot, k, full barrier) for B's.
template <class LoadB>
__device__ __forceinline__ void produce_slices(const Ring& r, const TmaDesc* tm_a, int tile_row, int slices,
                                               const LoadB& load_b)
{
    const bool leader = (threadIdx.x & 31) == 0;
    for (int k = 0; k < slices; ++k) {
        const int s = k % STAGES;
        mbar_wait(r.empty + 8 * s, ((u32)(k / STAGES) & 1u) ^ 1u);
        if (leader) {
            const u32 bar = r.full + 8 * s;
            mbar_arrive_expect_tx(bar, STAGE_BYTES);
            tma_load_box_2d(r.slot(s), tm_a, k * BK, tile_row, bar);
            load_b(r.slot(s) + A_BYTES, k, bar);
        }
    }
}

// A consumer warpgroup (wg 0 or 1): acc (+)= its 64 rows of A x B over slices [0, slices). For each
// slice: wait until the slot is full, issue its four m64n256k16 products as one group, wait until
// only that group is in flight and call release(slot of the previous slice) from lane 0 of each
// warp. Returns with every product done; the last slot is not released (nothing refills it).
template <class Release>
__device__ __forceinline__ void consume_slices(float (&acc)[128], const Ring& r, int wg, int lane, int slices,
                                               const Release& release)
{
    const u64 desc_a = make_desc(r.base + wg * 64 * 128, 16, 1024);  // K-major: LBO unused, 8-row groups 1024 B
    const u64 desc_b = make_desc(r.base + A_BYTES, B_BLOCK_BYTES, 1024);  // N-major: 64-column blocks, 8-row groups
    for (int k = 0; k < slices; ++k) {
        const int s = k % STAGES;
        mbar_wait(r.full + 8 * s, (u32)(k / STAGES) & 1u);
        const u64 slot = (u64)((s * STAGE_BYTES) >> 4);
        fence_acc(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            wgmma_m64n256k16_ss_nmajor_b(acc, desc_a + slot + (u64)((kk * 32) >> 4),
                                         desc_b + slot + (u64)((kk * 2048) >> 4), 1u);
        wgmma_commit();
        wgmma_wait<1>();  // slice k - 1's products are done: its slot may be refilled
        fence_acc(acc);
        if (k > 0 && lane == 0) release(r.empty + 8 * ((k - 1) % STAGES));
    }
    wgmma_wait<0>();
    fence_acc(acc);
}

// C's rows of consumer warpgroup wg from its accumulators: thread (warp, lane = 4g + t) holds rows
// 16 warp + g and + 8, columns 8j + 2t, + 1 for j = 0..31 (acc[4j], acc[4j + 1]; acc[4j + 2], acc[4j + 3]).
// One f16 pair per store; n % 8 == 0 (the host pads), so a pair inside the matrix is whole and aligned.
__device__ __forceinline__ void store_acc(elem_t* __restrict__ c, const float (&acc)[128], int tile_row, int tile_col,
                                          int wg, int warp, int lane, int n)
{
    const int row = tile_row + wg * 64 + warp * 16 + (lane >> 2);
    const int col0 = tile_col + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int col = col0 + 8 * j;
        if (col < n) {
            if (row < n) *reinterpret_cast<u32*>(c + at(row, col, n)) = pack_half2(acc[4 * j], acc[4 * j + 1]);
            if (row + 8 < n)
                *reinterpret_cast<u32*>(c + at(row + 8, col, n)) = pack_half2(acc[4 * j + 2], acc[4 * j + 3]);
        }
    }
}

// ---------------------------------------------------------------- the persistent versions (v13 on)
// A CTA computes tile after tile through one ring: the slices of all its tiles are one sequence,
// and slice number `it` of that sequence (counted across tiles) uses slot it % STAGES in phase
// (it / STAGES) & 1, for the producer and the consumers alike.

// produce_slices for the tile whose first slice is number it0 of the CTA's sequence
template <class LoadB>
__device__ __forceinline__ void produce_tile_slices(const Ring& r, const TmaDesc* tm_a, int tile_row, int it0,
                                                    int slices, const LoadB& load_b)
{
    const bool leader = (threadIdx.x & 31) == 0;
    for (int k = 0; k < slices; ++k) {
        const int it = it0 + k, s = it % STAGES;
        mbar_wait(r.empty + 8 * s, ((u32)(it / STAGES) & 1u) ^ 1u);
        if (leader) {
            const u32 bar = r.full + 8 * s;
            mbar_arrive_expect_tx(bar, STAGE_BYTES);
            tma_load_box_2d(r.slot(s), tm_a, k * BK, tile_row, bar);
            load_b(r.slot(s) + A_BYTES, k, bar);
        }
    }
}

// consume_slices for the tile whose first slice is number it0 of the CTA's sequence; the tile's
// first products ignore the old accumulators (no zeroing between tiles), and its last slot is
// released too once its products are done (the producer refills it with the next tile's slices).
template <class Release>
__device__ __forceinline__ void consume_tile_slices(float (&acc)[128], const Ring& r, int wg, int lane, int it0,
                                                    int slices, const Release& release)
{
    const u64 desc_a = make_desc(r.base + wg * 64 * 128, 16, 1024);
    const u64 desc_b = make_desc(r.base + A_BYTES, B_BLOCK_BYTES, 1024);
    for (int k = 0; k < slices; ++k) {
        const int it = it0 + k, s = it % STAGES;
        mbar_wait(r.full + 8 * s, (u32)(it / STAGES) & 1u);
        const u64 slot = (u64)((s * STAGE_BYTES) >> 4);
        fence_acc(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            wgmma_m64n256k16_ss_nmajor_b(acc, desc_a + slot + (u64)((kk * 32) >> 4),
                                         desc_b + slot + (u64)((kk * 2048) >> 4), (k > 0 || kk > 0) ? 1u : 0u);
        wgmma_commit();
        wgmma_wait<1>();
        fence_acc(acc);
        if (k > 0 && lane == 0) release(r.empty + 8 * ((it - 1) % STAGES));
    }
    wgmma_wait<0>();
    fence_acc(acc);
    if (lane == 0) release(r.empty + 8 * ((it0 + slices - 1) % STAGES));
}

// ---------------------------------------------------------------- the staged epilogue (v14 on)
// A consumer warpgroup hands its 64 x 256 block of C to TMA through a 32 KB staging buffer in
// shared memory (STAGING_BYTES a warpgroup, 1024-byte aligned): four 64-column boxes of 64 rows x
// 128 B in the 128-byte swizzle of the C tensor map, and goes on to its next tile while the copy
// engine writes them out.

#define STAGING_BYTES (4 * 64 * 128)  // 32768: one warpgroup's 64 x 256 fp16

// the 128 threads of consumer warpgroup wg (named barrier 1 + wg; 0 is __syncthreads')
__device__ __forceinline__ void consumer_sync(int wg)
{
    asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
}

// C's block of warpgroup wg (rows row0 .. row0 + 63, columns col0 .. col0 + 255) from its
// accumulators: its thread 0 waits until the previous store has read the staging buffer, the
// warpgroup writes the fragments into it (thread (warp, 4g + t) puts the f16 pair of columns
// 8j + 2t at row 16 warp + g, 16-byte chunk (j % 8) ^ (row % 8) of box j / 8: the 32 lanes of a
// store hit 32 different banks), fences them to the async proxy, and thread 0 issues the four
// boxes' stores as one bulk group. Boxes past the matrix's edge are clipped by TMA.
__device__ __forceinline__ void store_acc_staged(const float (&acc)[128], u32 staging, const TmaDesc* tm_c, int row0,
                                                 int col0, int wg, int warp, int lane)
{
    const bool leader = (threadIdx.x & 127) == 0;
    if (leader) bulk_wait_read<0>();
    consumer_sync(wg);
    const int r = warp * 16 + (lane >> 2);
    const u32 at_row = staging + r * 128 + 4 * (lane & 3);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const u32 addr = at_row + (j >> 3) * 8192 + (((j & 7) ^ (r & 7)) << 4);
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(pack_half2(acc[4 * j], acc[4 * j + 1])) : "memory");
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr + 1024), "r"(pack_half2(acc[4 * j + 2], acc[4 * j + 3]))
                     : "memory");  // row r + 8: the same swizzle, 8 rows of 128 B further
    }
    fence_proxy_async_shared();
    consumer_sync(wg);
    if (leader) {
#pragma unroll
        for (int b = 0; b < 4; ++b) tma_store_box_2d(tm_c, staging + b * 8192, col0 + 64 * b, row0);
        bulk_commit();
    }
}
