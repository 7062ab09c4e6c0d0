// wgmma (sm_90a warpgroup matrix multiply-accumulate, PTX ISA "wgmma"): the shared-memory matrix
// descriptor, fence / commit / wait, the fences that keep the compiler from moving accesses of
// operand registers across the asynchronous region, the generic-to-async proxy fence for shared
// memory written by ordinary stores or cp.async, the operand-list macros of a 64-register f32
// accumulator, and the f16 -> f32 products m64n128k16 (A from shared memory or registers) and
// m64n176k16 (A from shared memory).
//
// Configuration macros, read where this header is included (define them before it):
//   SWIZZLE_MODE  make_desc: descriptor bits 62-63 (default 1, the 128-byte swizzle);
//   V_TRANS       wgmma_m64n128k16_rs: imm-trans-b (default 1: B is N-major);
//   PROXY_FENCE   proxy_fence_async: 1 fences, 0 compiles to nothing (required: the versions differ).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name (wgmma_m64n128k16_rs_flags is v11's
// product with the transpose and accumulate flags as arguments), and a version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"

#ifndef SWIZZLE_MODE
#define SWIZZLE_MODE 1
#endif
#ifndef V_TRANS
#define V_TRANS 1
#endif
#ifndef PROXY_FENCE
#error "common/sm90/wgmma.cuh: define PROXY_FENCE (0 or 1) before including it"
#endif

// Matrix descriptor (PTX ISA "Matrix Descriptor Format"); base offset 0 (1024-aligned tiles).
__device__ __forceinline__ u64 make_desc(u32 saddr, u32 lbo, u32 sbo)
{
    return (u64)((saddr & 0x3FFFFu) >> 4) | ((u64)((lbo >> 4) & 0x3FFFu) << 16) |
           ((u64)((sbo >> 4) & 0x3FFFu) << 32) | ((u64)SWIZZLE_MODE << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Shared memory written through the generic proxy (st.shared, cp.async) is read by wgmma
// through the async proxy: a consumer fences after its acquire on the barrier that says the
// data is there (PROXY_FENCE 1); TMA writes through the async proxy and needs no fence.
__device__ __forceinline__ void proxy_fence_async()
{
#if PROXY_FENCE
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// Keep the compiler from moving accesses of wgmma operand registers across the async
// region (the asm statements are volatile and stay in order; these redefine the values).
template <int N>
__device__ __forceinline__ void fence_acc(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_frag(u32 (&a)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(a[i])::"memory");
}

#define ACC_LIST                                                                                       \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
    "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
    "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
    "%59, %60, %61, %62, %63}"
#define ACC8(d, i)                                                                                \
    "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), \
        "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define ACC_OPERANDS(d) \
    ACC8(d, 0), ACC8(d, 8), ACC8(d, 16), ACC8(d, 24), ACC8(d, 32), ACC8(d, 40), ACC8(d, 48), ACC8(d, 56)

// D(64x128 f32) (+)= A(64x16, smem desc, K-major) * B(16x128, smem desc, K-major)
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], u64 desc_a, u64 desc_b, u32 accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC_LIST ", %64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : ACC_OPERANDS(d)
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// D(64x128 f32) += A(64x16 f16, registers) * B(16x128, smem desc, transposed = N-major if V_TRANS)
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc_b)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC_LIST
        ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n"
        "}\n"
        : ACC_OPERANDS(d)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(1u), "n"(V_TRANS));
}

// D(64x128 f32) (+)= A(64x16 f16, registers) * B(16x128, smem desc): TRANS_B 0 for a K-major
// B (K in Q K^T), 1 for an N-major one (V in P V). `accumulate` 0 ignores the old D.
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n128k16_rs_flags(float (&d)[64], u32 a0, u32 a1, u32 a2, u32 a3, u64 desc_b,
                                                          u32 accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC_LIST
        ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n"
        "}\n"
        : ACC_OPERANDS(d)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(accumulate), "n"(TRANS_B));
}

// D(64x176 f32) (+)= A(64x16, smem desc, K-major) * B(16x176, smem desc, K-major)
__device__ __forceinline__ void wgmma_m64n176k16_ss(float (&d)[88], u64 desc_a, u64 desc_b, u32 accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %90, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 " "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}" ", %88, %89, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
