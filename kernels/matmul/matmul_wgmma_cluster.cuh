// The cluster pieces of matmul's wgmma versions that pair two CTAs (v12 on): B's slice copied half
// by each CTA of the pair and multicast to both, and a slot released in both CTAs. Why, and the
// barrier counts they need, are in v12_cluster_multicast.cu.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "matmul_wgmma.cuh"
#include "common/sm90/cluster.cuh"
#include "common/sm90/cluster_arrive.cuh"

// B's slice: this CTA's two 64-column blocks (2 rank, 2 rank + 1), to both CTAs of the cluster
struct HalfMulticast {
    const TmaDesc* tm_b;
    int tile_col;
    u32 rank;
    __device__ __forceinline__ void operator()(u32 dst, int k, u32 bar) const
    {
#pragma unroll
        for (int j = 2 * (int)rank; j < 2 * (int)rank + 2; ++j)
            tma_load_box_multicast_2d(dst + j * B_BLOCK_BYTES, tm_b, tile_col + 64 * j, k * BK, bar, 0x3);
    }
};

// a slot's release: on this CTA's empty barrier and on the neighbour's
struct ReleaseBoth {
    u32 peer;
    __device__ __forceinline__ void operator()(u32 bar) const
    {
        mbar_arrive(bar);
        mbar_arrive_peer(bar, peer);
    }
};
