// Two plain copies of an array by SM kernels, for tools/copy_ceiling_probe.py: how close to the
// device-to-device memcpy an SM kernel gets on this GPU when it only moves the bytes.
//
// copy_vec4: a grid-stride loop, one 16-byte load and one 16-byte store per thread per step
// (transform v02/v03's access pattern without the arithmetic).
// copy_bulk: transform v07's ring without the arithmetic: per block, thread 0 keeps STAGES
// tiles of TILE_BYTES loading with cp.async.bulk and writes each back with one bulk store.

#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#ifndef TILE_BYTES
#define TILE_BYTES 8192
#endif

extern "C" __global__ void __launch_bounds__(256)
copy_vec4(const uint4* __restrict__ x, uint4* __restrict__ y, u64 n16)
{
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (u64)gridDim.x * blockDim.x) y[i] = x[i];
}

extern "C" __global__ void __launch_bounds__(256)
copy_bulk(const unsigned char* __restrict__ x, unsigned char* __restrict__ y, u64 tiles)
{
    __shared__ __align__(128) unsigned char ring[STAGES][TILE_BYTES];
    __shared__ __align__(8) u64 full[STAGES];
    if (threadIdx.x != 0) return;
    const u32 mine = tiles > blockIdx.x ? (u32)((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x) : 0u;
    auto fill = [&](u32 k) {
        const u32 s = k % STAGES, bar = smem_u32(&full[s]);
        mbar_arrive_expect_tx(bar, TILE_BYTES);
        bulk_load(smem_u32(ring[s]), x + ((u64)blockIdx.x + (u64)k * gridDim.x) * TILE_BYTES, TILE_BYTES, bar);
    };
    for (u32 s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
    fence_mbarrier_init();
    for (u32 k = 0; k < STAGES && k < mine; ++k) fill(k);
    for (u32 k = 0; k < mine; ++k) {
        const u32 s = k % STAGES;
        while (!mbar_try_wait(smem_u32(&full[s]), (k / STAGES) & 1u)) {
        }
        bulk_store(y + ((u64)blockIdx.x + (u64)k * gridDim.x) * TILE_BYTES, smem_u32(ring[s]), TILE_BYTES);
        bulk_commit();
        if (k >= 1 && k - 1 + STAGES < mine) {
            bulk_wait_read<1>();
            fill(k - 1 + STAGES);
        }
    }
    bulk_wait_read<0>();
}
