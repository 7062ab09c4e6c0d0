// Warp-level tensor-core products (PTX ISA "mma.sync", "ldmatrix"), the Ampere-style instructions
// that sm_90 still runs: ldmatrix of four 8 x 8 b16 matrices from shared memory, plain and
// transposed, and the m16n8k16 f16 product with f32 accumulators. Reads no configuration macro.
//
// Fragment layouts (lane = 4 g + t, g = lane / 4, t = lane % 4), for D(16x8) += A(16x16) B(16x8):
//   A, four f16x2 registers: a0 (row g, k 2t..2t+1), a1 (row g+8, k 2t..), a2 (row g, k 2t+8..),
//      a3 (row g+8, k 2t+8..);
//   B, two f16x2 registers: b0 (k 2t..2t+1, column g), b1 (k 2t+8.., column g);
//   D, four f32: d0, d1 (row g, columns 2t, 2t+1), d2, d3 (row g+8, the same columns).
// ldmatrix_x4 with lane l giving the address of row l % 16, columns 8 (l / 16) .. +7 of a
// row-major 16 x 16 tile returns a0..a3 of that tile; ldmatrix_x4_trans with lane l giving row
// (k) l % 16, columns (n) 8 (l / 16) .. +7 of a k-by-n row-major 16 x 16 tile returns b0, b1 of its
// first eight columns and b0, b1 of its last eight.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void ldmatrix_x4(u32 addr, u32 (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(u32 addr, u32 (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// d (16x8 f32) += a (16x16 f16, row) . b (16x8 f16, col)
__device__ __forceinline__ void mma_m16n8k16_f16_f32(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
