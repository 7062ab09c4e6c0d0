// wgmma m64n64k16 (f16 -> f32, A and B from shared memory): the product of a 64-row tile of B, for the
// flash-attention kernels with 64-row K/V tiles (v40). A 32-register f32 accumulator.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place.
#pragma once

#include "common/sm90/ptx.cuh"

#define ACC32_LIST                                                                                     \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define ACC32_8(d, i)                                                                             \
    "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), \
        "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define ACC32_OPERANDS(d) ACC32_8(d, 0), ACC32_8(d, 8), ACC32_8(d, 16), ACC32_8(d, 24)

// D(64x64 f32) (+)= A(64x16, smem desc, K-major) * B(16x64, smem desc, K-major)
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], u64 desc_a, u64 desc_b, u32 accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " ACC32_LIST ", %32, %33, p, 1, 1, 0, 0;\n"
        "}\n"
        : ACC32_OPERANDS(d)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
