// TMA stores (PTX ISA "cp.async.bulk.tensor", shared -> global): one box of a 2-D tensor map written
// from shared memory in the thread's current bulk group; what lies outside the tensor is not
// written. The group's commit and waits, and the proxy fence the writers of the box call first,
// are common/sm90/bulk.cuh's. Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"
#include "common/sm90/tma.cuh"

// the box at shared-memory address src (laid out as the map's swizzle says) to coordinates
// (c0 = column, c1 = row) of the tensor map
__device__ __forceinline__ void tma_store_box_2d(const TmaDesc* map, u32 src, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
