// v23's kernel body: v17's lanes and step loop (matmul_prefetch.cuh's WarpLanes: a lane's 16 x 8
// outputs, step k + 1's values read during step k's FMAs) fed by a cp.async ring of STAGES stages,
// with A transposed on its way in by 4-byte copies, as cuBLAS's fp32 kernel feeds the same loop.
//
// - Layout: sA[k][m] k-major as in v17 (a lane's values at one k are M/4 float4s of a row), rows
//   BM + 8 floats apart; sB[k][n]. Every stage holds one S-deep slice of both.
// - A's copies: one element each (cp.async's 4-byte form may land anywhere in shared memory, so the
//   copy transposes). A warp copies 8 rows x 4 k: a half-sector of each row from global memory (the
//   other half is the next copy's, which L1 serves: the 4-byte form caches there), and in shared
//   memory k * (BM + 8) + m puts its 32 elements in 32 banks. A thread copies BM * S / THREADS
//   elements a slice (8 on 256 x 128 x 8): A_GROUPS rows, two k halves each, one pointer a row.
// - B's copies: 16 bytes each (fp32, n % 4 == 0), a warp a k row of the slice; four 4-byte copies
//   where n % 4 != 0.
// - Nothing is carried in registers between the loads and the stores (v17 carried the next slice in
//   12 registers and waited on its global loads at each slice's end): a warp issues its copies and
//   goes back to its FMAs.
// - Pipeline: slices 0 .. STAGES-1 issued before the loop; in slice s, at its last step (every value
//   of slice s already read into registers), wait for this thread's copies of slice s + 1, pass the
//   one barrier of the slice (everyone's copies of s + 1 have landed; everyone is done reading s),
//   issue slice s + STAGES into s's stage, read step 0 of slice s + 1, then the last FMAs of s. A
//   commit group every slice, empty past the last, so the wait's count holds.
// - Edges: rows of A and columns of B past the matrix are clamped to the last one (they feed only
//   outputs never stored); k past the matrix is zero-filled, in the last slice only (one uniform
//   branch a slice picks the guarded copies).
// - fp16 (not timed with this body): the same ring filled by plain loads converted to fp32 and
//   stored, which the slice's barrier covers.
//
// Reads BM, BN, WM, WN, S and STAGES, defined by the version before including it.
#pragma once

#include "matmul_prefetch.cuh"

#define PAD_AT 8  // sA's row pitch is BM + PAD_AT floats: a warp's 8 rows x 4 k of copies land in 32 banks
#define A_PITCH (BM + PAD_AT)
#define A_STAGE_AT (S * A_PITCH)  // floats of sA in a stage
#define STAGE_AT (A_STAGE_AT + S * BN)  // floats of a stage (sA, then sB)
#define A_ROW_STEP (THREADS / 4)  // rows between a thread's row groups: a warp copies 8 rows, the CTA THREADS / 4
#define A_GROUPS (BM / A_ROW_STEP)  // a thread's row groups, each copied as two k halves of one element
#define TB_ROW (BN / 4)  // threads along one k row of B's slice (a float4 each)
#define B_ROW_STEP (THREADS / TB_ROW)  // k rows of B's slice copied at once
#define B_PER (S / B_ROW_STEP)  // a thread's float4s of B a slice

static_assert(S == 8, "a warp copies A as 8 rows x 4 k, two k halves a slice");
static_assert(THREADS % 32 == 0 && BM % A_ROW_STEP == 0, "A's rows split into whole row groups of THREADS / 4");
static_assert(THREADS % TB_ROW == 0 && S % B_ROW_STEP == 0, "B's slice splits into whole float4s a thread");
static_assert(STAGES >= 2 && STAGES * STAGE_AT * 4 <= 48 * 1024, "a ring of 2+ stages in static shared memory");
static_assert(A_PITCH % 4 == 0, "a lane's float4 reads of sA stay 16-byte aligned");

__device__ __forceinline__ void cp_async4_zfill_at(u32 dst, const void* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(valid ? 4u : 0u)
                 : "memory");
}

// a thread's copies of every slice: where they start in global memory (slice 0) and land in a stage
struct TransposedCopies {
    const elem_t* pa[A_GROUPS];  // A: row group g's element at k = a_k of slice 0 (the other half 4 further)
    const elem_t* pb[B_PER];  // B: its k row's float4 of slice 0 (n % 4 == 0), else the row's start
    int a_k;  // the thread's k in a half (0..3)
    int b_k;  // its first k row of B's slice
    int b_col;  // n % 4 != 0: its first column of B (clamped element by element)
    int a_off;  // floats from a stage's start to its first element of A: row group 0, k = a_k
    int b_off;  // to its first float4 of B

    __device__ __forceinline__ TransposedCopies(const elem_t* __restrict__ a, const elem_t* __restrict__ b, int n,
                                                int tile_row, int tile_col)
    {
        const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
        const int m = warp * 8 + lane / 4;  // its row in row group 0
        a_k = lane % 4;
#pragma unroll
        for (int g = 0; g < A_GROUPS; ++g) pa[g] = a + at(min(tile_row + m + g * A_ROW_STEP, n - 1), a_k, n);
        const int col = tid % TB_ROW * 4;
        b_k = tid / TB_ROW;
        const bool vec = (n & 3) == 0;
        b_col = tile_col + col;
#pragma unroll
        for (int i = 0; i < B_PER; ++i) pb[i] = b + at(b_k + i * B_ROW_STEP, vec ? min(b_col, n - 4) : 0, n);
        a_off = a_k * A_PITCH + m;
        b_off = A_STAGE_AT + b_k * BN + col;
    }

    // slice `s` (k from s * S) into the stage at `stage`; GUARD: k past n zero-filled. fp32: copies
    // (cp.async, waited for by the caller); fp16: loads converted and stored, done when this returns.
    template <bool GUARD>
    __device__ __forceinline__ void issue(int s, float* stage, const elem_t* __restrict__ a,
                                          const elem_t* __restrict__ b, int n) const
    {
        const int k0 = s * S;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const bool ok = !GUARD || k0 + h * 4 + a_k < n;
#pragma unroll
            for (int g = 0; g < A_GROUPS; ++g) {
                float* dst = stage + a_off + h * 4 * A_PITCH + g * A_ROW_STEP;
                const elem_t* src = pa[g] + k0 + h * 4;
#if ELEM_FP16
                *dst = ok ? elem_to_float(*src) : 0.0f;
#else
                cp_async4_zfill_at(smem_u32(dst), ok ? src : a, ok);
#endif
            }
        }
        const bool vec = (n & 3) == 0;
#pragma unroll
        for (int i = 0; i < B_PER; ++i) {
            const bool ok = !GUARD || k0 + b_k + i * B_ROW_STEP < n;
            float* dst = stage + b_off + i * B_ROW_STEP * BN;
            const elem_t* row = pb[i] + (u64)k0 * (u64)n;
#if ELEM_FP16
#pragma unroll
            for (int j = 0; j < 4; ++j)
                dst[j] = ok ? elem_to_float(vec ? row[j] : row[min(b_col + j, n - 1)]) : 0.0f;
#else
            if (vec) {
                cp_async16_zfill(smem_u32(dst), ok ? row : b, ok);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) cp_async4_zfill_at(smem_u32(dst + j), ok ? row + min(b_col + j, n - 1) : b, ok);
            }
#endif
        }
    }
};

// the CTA's BM x BN tile of C = A B (blockIdx.x along the columns, blockIdx.y along the rows)
__device__ __forceinline__ void transposed_ring_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                                     elem_t* __restrict__ c, int n)
{
    constexpr int M = WarpLanes::M, N = WarpLanes::N;
    __shared__ __align__(16) float smem[STAGES * STAGE_AT];
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const int slices = (n + S - 1) / S;
    const bool whole = n % S == 0;  // else the last slice is guarded
    const WarpLanes lanes = warp_lanes(threadIdx.x);
    const TransposedCopies cp(a, b, n, tile_row, tile_col);

#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        if (s < slices) {
            if (whole || s < slices - 1) cp.issue<false>(s, smem + s * STAGE_AT, a, b, n);
            else cp.issue<true>(s, smem + s * STAGE_AT, a, b, n);
        }
        cp_async_commit();
    }

    float av[2][M], bv[2][N];  // step k's values and step k + 1's
    float acc[M][N] = {};
    cp_async_wait_pending<STAGES - 1>();
    __syncthreads();
    lanes.load_values(smem, smem + A_STAGE_AT, av[0], bv[0]);
    int stage = 0;  // the stage of slice s, in stages
    for (int s = 0; s < slices; ++s) {
        const float* sa = smem + stage * STAGE_AT;
        const int next = stage + 1 == STAGES ? 0 : stage + 1;
#pragma unroll
        for (int k = 0; k < S; ++k) {
            if (k == S - 1) {
                cp_async_wait_pending<STAGES - 2>();  // this thread's copies of slice s + 1
                __syncthreads();  // everyone's have landed; everyone has read slice s
                const int fill = s + STAGES;
                if (fill < slices) {
                    if (whole || fill < slices - 1) cp.issue<false>(fill, smem + stage * STAGE_AT, a, b, n);
                    else cp.issue<true>(fill, smem + stage * STAGE_AT, a, b, n);
                }
                cp_async_commit();
                const float* sn = smem + next * STAGE_AT;
                lanes.load_values(sn, sn + A_STAGE_AT, av[0], bv[0]);  // S even: set 0 is free
            } else {
                lanes.load_values(sa + (k + 1) * A_PITCH, sa + A_STAGE_AT + (k + 1) * BN, av[(k + 1) & 1],
                                  bv[(k + 1) & 1]);
            }
            outer_product(acc, av[k & 1], bv[k & 1]);
        }
        stage = next;
    }
    cp_async_wait_pending<0>();  // no copy outlives the CTA (the last groups are empty)
    lanes.store(c, acc, tile_row, tile_col, n, (n & 3) == 0);
}
