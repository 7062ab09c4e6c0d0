// Plain copies of an array by SM kernels: how close to the device-to-device memcpy an SM kernel
// gets on this GPU when it only moves the bytes. transform's probes (transform_probes.py, timed by
// `report run transform --probes`) and tools/copy_ceiling_probe.py launch them.
//
// copy_vec4: a grid-stride loop, UNROLL 16-byte loads (blockDim apart) then their stores per
// thread per step; UNROLL 1 is transform v02/v03's access pattern without the arithmetic.
// copy_bulk: transform v07's ring without the arithmetic: per block, thread 0 keeps STAGES
// tiles of TILE_BYTES (dynamic shared memory) loading with cp.async.bulk and writes each back
// with one bulk store. ORDER 0 deals the tiles to the blocks in turn (b, b + gridDim.x, ...), as
// v07 does; ORDER 1 gives each block one contiguous run of tiles. HINT 1 puts the evict-first
// L2 policy on the bulk loads and stores. PREFETCH N > 0 also prefetches the tile N steps past
// the ring into L2 (cp.async.bulk.prefetch.L2) each time a tile is loaded.
// copy_vec4_nc: copy_vec4 with the load through the non-coherent path, no L1 allocation and a
// 256-byte L2 prefetch (ld.global.nc.L1::no_allocate.L2::256B), the store without L1 allocation.
// copy_bulk_dyn: copy_bulk with the tiles handed out in order by a counter (one atomicAdd per
// tile drawn) instead of dealt in advance: the tiles in flight across the grid stay one window of
// consecutive addresses however the blocks drift apart. counters[0] is the next tile, counters[1]
// the blocks done; the last block to finish puts both back to 0 for the next launch.

#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#ifndef TILE_BYTES
#define TILE_BYTES 8192
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef ORDER
#define ORDER 0
#endif
#ifndef HINT
#define HINT 0
#endif
#ifndef PREFETCH
#define PREFETCH 0  // copy_bulk: also bring tile k + STAGES + PREFETCH - 1 into L2 when tile k is issued
#endif
static_assert(STAGES >= 2, "copy_bulk refills a stage after the next tile's wait: one stage would wait for itself");

extern "C" __global__ void __launch_bounds__(256)
copy_vec4(const uint4* __restrict__ x, uint4* __restrict__ y, u64 n16)
{
    const u64 step = (u64)blockDim.x * UNROLL;
    for (u64 base = (u64)blockIdx.x * step; base < n16; base += (u64)gridDim.x * step) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 i = base + (u64)u * blockDim.x + threadIdx.x;
            if (i < n16) v[u] = x[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 i = base + (u64)u * blockDim.x + threadIdx.x;
            if (i < n16) y[i] = v[u];
        }
    }
}

extern "C" __global__ void __launch_bounds__(32)
copy_bulk(const unsigned char* __restrict__ x, unsigned char* __restrict__ y, u64 tiles)
{
    extern __shared__ __align__(128) unsigned char ring[];  // STAGES * TILE_BYTES
    __shared__ __align__(8) u64 full[STAGES];
    if (threadIdx.x != 0) return;
#if ORDER
    const u64 first = tiles * blockIdx.x / gridDim.x, mine = tiles * (blockIdx.x + 1) / gridDim.x - first;
    auto tile_of = [&](u32 k) { return first + k; };
#else
    const u32 mine = tiles > blockIdx.x ? (u32)((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x) : 0u;
    auto tile_of = [&](u32 k) { return (u64)blockIdx.x + (u64)k * gridDim.x; };
#endif
#if HINT
    const u64 policy = l2_policy_evict_first();
#endif
    auto fill = [&](u32 k) {
        const u32 s = k % STAGES, bar = smem_u32(&full[s]);
        mbar_arrive_expect_tx(bar, TILE_BYTES);
#if HINT
        bulk_load_hint(smem_u32(ring + s * TILE_BYTES), x + tile_of(k) * TILE_BYTES, TILE_BYTES, bar, policy);
#else
        bulk_load(smem_u32(ring + s * TILE_BYTES), x + tile_of(k) * TILE_BYTES, TILE_BYTES, bar);
#endif
#if PREFETCH
        if (k + PREFETCH < mine) bulk_prefetch_l2(x + tile_of(k + PREFETCH) * TILE_BYTES, TILE_BYTES);
#endif
    };
    for (u32 s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
    fence_mbarrier_init();
    for (u32 k = 0; k < STAGES && k < mine; ++k) fill(k);
    for (u32 k = 0; k < mine; ++k) {
        const u32 s = k % STAGES;
        while (!mbar_try_wait(smem_u32(&full[s]), (k / STAGES) & 1u)) {
        }
#if HINT
        bulk_store_hint(y + tile_of(k) * TILE_BYTES, smem_u32(ring + s * TILE_BYTES), TILE_BYTES, policy);
#else
        bulk_store(y + tile_of(k) * TILE_BYTES, smem_u32(ring + s * TILE_BYTES), TILE_BYTES);
#endif
        bulk_commit();
        if (k >= 1 && k - 1 + STAGES < mine) {
            bulk_wait_read<1>();
            fill(k - 1 + STAGES);
        }
    }
    bulk_wait_read<0>();
}

extern "C" __global__ void __launch_bounds__(256)
copy_vec4_nc(const uint4* __restrict__ x, uint4* __restrict__ y, u64 n16)
{
    const u64 step = (u64)blockDim.x * UNROLL;
    for (u64 base = (u64)blockIdx.x * step; base < n16; base += (u64)gridDim.x * step) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 i = base + (u64)u * blockDim.x + threadIdx.x;
            if (i < n16)
                asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                             : "l"(x + i));
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 i = base + (u64)u * blockDim.x + threadIdx.x;
            if (i < n16)
                asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};"
                             ::"l"(y + i), "r"(v[u].x), "r"(v[u].y), "r"(v[u].z), "r"(v[u].w)
                             : "memory");
        }
    }
}

extern "C" __global__ void __launch_bounds__(32)
copy_bulk_dyn(const unsigned char* __restrict__ x, unsigned char* __restrict__ y, u64 tiles, u32* __restrict__ counters)
{
    extern __shared__ __align__(128) unsigned char ring[];  // STAGES * TILE_BYTES
    __shared__ __align__(8) u64 full[STAGES];
    __shared__ u32 tile_of[STAGES];
    if (threadIdx.x != 0) return;
    auto fill = [&](u32 k) -> bool {  // the next tile in order into stage k % STAGES; false when none is left
        const u32 s = k % STAGES, t = atomicAdd(&counters[0], 1u);
        tile_of[s] = t;
        if (t >= tiles) return false;
        const u32 bar = smem_u32(&full[s]);
        mbar_arrive_expect_tx(bar, TILE_BYTES);
        bulk_load(smem_u32(ring + s * TILE_BYTES), x + (u64)t * TILE_BYTES, TILE_BYTES, bar);
        return true;
    };
    for (u32 s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
    fence_mbarrier_init();
    u32 filled = 0;
    bool more = true;
    for (u32 k = 0; k < STAGES && more; ++k) {
        more = fill(k);
        filled += more ? 1u : 0u;
    }
    for (u32 k = 0; k < filled; ++k) {
        const u32 s = k % STAGES;
        while (!mbar_try_wait(smem_u32(&full[s]), (k / STAGES) & 1u)) {
        }
        bulk_store(y + (u64)tile_of[s] * TILE_BYTES, smem_u32(ring + s * TILE_BYTES), TILE_BYTES);
        bulk_commit();
        if (k >= 1 && more) {
            bulk_wait_read<1>();
            more = fill(k - 1 + STAGES);
            filled += more ? 1u : 0u;
        }
    }
    bulk_wait_read<0>();
    __threadfence();
    if (atomicAdd(&counters[1], 1u) == gridDim.x - 1) {
        counters[0] = 0u;
        counters[1] = 0u;
    }
}
