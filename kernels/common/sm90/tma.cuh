// TMA (the Hopper tensor memory accelerator, PTX ISA "cp.async.bulk.tensor"): the tensor map as a
// kernel receives it, its prefetch, and one box of a 2-D or 3-D tensor map copied into shared
// memory (completing its bytes on an mbarrier), multicast to the CTAs of a cluster, or
// prefetched into L2. Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name (the 2-D and 3-D boxes are two), and a
// version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"

// A CUtensorMap as the kernel receives it: 128 opaque bytes, 64-byte aligned in parameter space.
struct __align__(64) TmaDesc {
    u64 words[16];
};

__device__ __forceinline__ void prefetch_tensor_map(const TmaDesc* map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// One box (128 rows x 64 fp16 = 16 KB) at coordinates (c0 = column, c1 = row) of the tensor
// map into shared memory at dst (1024-byte aligned), completing `bytes` on the mbarrier.
__device__ __forceinline__ void tma_load_box_2d(u32 dst, const TmaDesc* map, int c0, int c1, u32 bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// The same box, written at dst in every CTA of the cluster named in cta_mask, each copy
// completing its bytes on the mbarrier at offset bar of its own CTA.
__device__ __forceinline__ void tma_load_box_multicast_2d(u32 dst, const TmaDesc* map, int c0, int c1, u32 bar,
                                                          unsigned short cta_mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;"
        ::"r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
        : "memory");
}

// One box (rows x 64 fp16) at coordinates (c0 = column, c1 = row in the head's sequence, c2 =
// batch x head) of a 3-D tensor map into shared memory at dst (1024-byte aligned), completing
// its bytes on the mbarrier; rows past the sequence's end are zero-filled.
__device__ __forceinline__ void tma_load_box_3d(u32 dst, const TmaDesc* map, int c0, int c1, int c2, u32 bar)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
        ::"r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

// The same box, written at dst in every CTA of the cluster named in cta_mask, each copy
// completing its bytes on the mbarrier at offset bar of its own CTA.
__device__ __forceinline__ void tma_load_box_multicast_3d(u32 dst, const TmaDesc* map, int c0, int c1, int c2,
                                                          u32 bar, unsigned short cta_mask)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3, %4}], [%5], %6;"
        ::"r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(cta_mask)
        : "memory");
}

// Prefetch one box of a 3-D tensor map (as tma_load_box_3d would copy it) into L2.
__device__ __forceinline__ void tma_prefetch_l2_3d(const TmaDesc* map, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];"
                 ::"l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
