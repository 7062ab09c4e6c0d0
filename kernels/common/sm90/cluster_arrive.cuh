// An arrive on the mbarrier at the same shared-memory offset in another CTA of the cluster (PTX ISA
// "mapa", "mbarrier.arrive" on a shared::cluster address): how a consumer releases a ring slot that
// a neighbour's multicast copies fill. Reads no configuration macro.
//
// The arrive keeps mbarrier.arrive's default semantics (release at CTA scope): the slot was read by
// wgmma (the async proxy) and wgmma.wait_group has returned, so no generic access of this thread
// needs ordering before the neighbour's TMA overwrites it.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void mbar_arrive_peer(u32 bar, u32 peer_rank)
{
    asm volatile(
        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [ra]; }"
        ::"r"(bar), "r"(peer_rank)
        : "memory");
}
