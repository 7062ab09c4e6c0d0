// v09's kernel body (v16 runs it with larger tiles): the next S-deep slices of A and B are loaded
// from global memory into registers while the threads multiply the current ones out of shared
// memory, then stored into the other of two shared stages, A's transposed (sA[k][m]); one barrier a
// slice; and each thread reads its values of A and B for step k + 1 while the FMAs of step k run.
//
// The CTA computes a BM x BN tile of C with THREADS threads. Its warps own WM x WN regions of it;
// in a region the 32 lanes are 8 rows x 4 columns of 4 x 4 micro-tiles, repeated (WM/32) x (WN/16)
// times, so a lane holds M = WM/32*4 rows 32 apart by N = WN/16*4 columns 16 apart (store_chunks).
// With sA stored k-major like sB, a lane's values at one k are M/4 float4s of an sA row and N/4 of
// an sB row: at 8 x 8, 64 FMAs for four 16-byte shared loads. A warp's float4 of sA spans 8
// distinct float4s (128 bytes, every bank once; the 4 lanes of a row read the same one) and its
// float4 of sB 4 distinct ones: each read is one wavefront.
//
// Global loads are quads of four elements (16 bytes fp32, 8 bytes fp16) kept as loaded: an fp16
// quad is converted only when it is stored to shared memory, so nothing waits on a load until the
// last step of the slice. Zeros outside the matrix, four guarded scalar loads where n % 4 != 0
// (load_quad_or_zero). A's quads: a warp covers 16 rows x 8 k (one 32-byte sector a row) and stores
// each quad down a column of sA; rows of sA are BM + PAD_T floats, so the rows k and k + 4 that a
// warp writes are 16 banks apart and its 32 scalar stores hit 32 banks. B's quads go to sB whole.
//
// The loop, one iteration per slice s (in stage s & 1; step 0's values already in registers):
//   load slice s + 1's quads (past the last slice: zeros, no access);
//   for each step k of the slice: at the last step first store the quads into stage (s+1) & 1 and
//   pass the barrier, then read step k + 1's values (of slice s + 1 at the last step) into the
//   other register set, then the outer product of step k.
// A stage is refilled only after the barrier that follows every read of it: stage (s+1) & 1 was
// last read in iteration s - 1, before that iteration's barrier.
//
// Reads BM, BN, S (a multiple of 8), WM and WN, defined by the version before including it.
#pragma once

#include "matmul.cuh"

#define THREADS ((BM / WM) * (BN / WN) * 32)  // a warp a region
#define PAD_T 4  // sA's row pitch is BM + PAD_T floats: rows 4 apart fall 16 banks apart
#define A_QUADS (BM * S / 4 / THREADS)  // a thread's quads of A's slice
#define B_QUADS (S * BN / 4 / THREADS)

static_assert(S % 8 == 0, "a warp loads A in groups of 8 k");
static_assert(BM * S / 4 % THREADS == 0 && S * BN / 4 % THREADS == 0, "every thread loads whole quads");
static_assert(BM % 32 == 0 && BN % 4 == 0 && WM % 32 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0,
              "the regions tile the CTA's tile and the lanes' micro-tiles tile a region");

// four elements as loaded: 16 bytes fp32, 8 bytes fp16 (converted when stored to shared memory)
#if ELEM_FP16
typedef uint2 quad_t;
__device__ __forceinline__ quad_t zero_quad() { return make_uint2(0u, 0u); }
__device__ __forceinline__ quad_t pack_quad(elem_t e0, elem_t e1, elem_t e2, elem_t e3)
{
    return make_uint2((u32)e0 | ((u32)e1 << 16), (u32)e2 | ((u32)e3 << 16));
}
__device__ __forceinline__ float4 quad_float4(quad_t q) { return quad_to_float4(q); }
#else
typedef float4 quad_t;
__device__ __forceinline__ quad_t zero_quad() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }
__device__ __forceinline__ quad_t pack_quad(elem_t e0, elem_t e1, elem_t e2, elem_t e3)
{
    return make_float4(e0, e1, e2, e3);
}
__device__ __forceinline__ float4 quad_float4(quad_t q) { return q; }
#endif

// m[row][col] as stored, or a zero element outside the n x n matrix
__device__ __forceinline__ elem_t elem_or_zero(const elem_t* __restrict__ m, int row, int col, int n)
{
    return (row < n && col < n) ? m[at(row, col, n)] : (elem_t)0;
}

// m[row][col .. col+3] as stored (zeros outside the matrix): one vector load when vec
__device__ __forceinline__ quad_t load_quad_or_zero(const elem_t* __restrict__ m, int row, int col, int n, bool vec)
{
    if (vec) {
        if (row >= n || col >= n) return zero_quad();
        return *reinterpret_cast<const quad_t*>(m + at(row, col, n));
    }
    return pack_quad(elem_or_zero(m, row, col, n), elem_or_zero(m, row, col + 1, n), elem_or_zero(m, row, col + 2, n),
                     elem_or_zero(m, row, col + 3, n));
}

// where quad i of this thread lies in A's slice (row m, first k) and in B's (row k, first column c):
// A's in groups of 8 k, consecutive threads two to a row; B's along its rows
__device__ __forceinline__ void a_quad_at(int tid, int i, int& m, int& k)
{
    const int q = tid + i * THREADS;
    m = q % (2 * BM) / 2;
    k = q / (2 * BM) * 8 + q % 2 * 4;
}
__device__ __forceinline__ void b_quad_at(int tid, int i, int& k, int& c)
{
    const int q = tid + i * THREADS;
    k = q / (BN / 4);
    c = q % (BN / 4) * 4;
}

// this thread's quads of slice k0: A's BM x S and B's S x BN, into registers
__device__ __forceinline__ void load_slice(quad_t (&qa)[A_QUADS], quad_t (&qb)[B_QUADS], const elem_t* __restrict__ a,
                                           const elem_t* __restrict__ b, int tile_row, int tile_col, int k0, int n,
                                           bool vec, int tid)
{
#pragma unroll
    for (int i = 0; i < A_QUADS; ++i) {
        int m, k;
        a_quad_at(tid, i, m, k);
        qa[i] = load_quad_or_zero(a, tile_row + m, k0 + k, n, vec);
    }
#pragma unroll
    for (int i = 0; i < B_QUADS; ++i) {
        int k, c;
        b_quad_at(tid, i, k, c);
        qb[i] = load_quad_or_zero(b, k0 + k, tile_col + c, n, vec);
    }
}

// the quads into one stage as fp32: A's down the columns of sA (transposed), B's whole
__device__ __forceinline__ void store_slice(float (*sa)[BM + PAD_T], float (*sb)[BN], const quad_t (&qa)[A_QUADS],
                                            const quad_t (&qb)[B_QUADS], int tid)
{
#pragma unroll
    for (int i = 0; i < A_QUADS; ++i) {
        int m, k;
        a_quad_at(tid, i, m, k);
        const float4 v = quad_float4(qa[i]);
        sa[k][m] = v.x;
        sa[k + 1][m] = v.y;
        sa[k + 2][m] = v.z;
        sa[k + 3][m] = v.w;
    }
#pragma unroll
    for (int i = 0; i < B_QUADS; ++i) {
        int k, c;
        b_quad_at(tid, i, k, c);
        st_float4(&sb[k][c], quad_float4(qb[i]));
    }
}

struct WarpLanes {
    static constexpr int M = WM / 32 * 4, N = WN / 16 * 4;  // a lane's outputs
    int row0, col0;  // the lane's first row and column in the CTA's tile

    // the lane's M values of A and N of B at one k, from that k's rows of sA and sB
    __device__ __forceinline__ void load_values(const float* sa_k, const float* sb_k, float (&av)[M], float (&bv)[N]) const
    {
#pragma unroll
        for (int mi = 0; mi < M / 4; ++mi) put4(av, mi * 4, ld_float4(sa_k + row0 + mi * 32));
#pragma unroll
        for (int ni = 0; ni < N / 4; ++ni) put4(bv, ni * 4, ld_float4(sb_k + col0 + ni * 16));
    }

    __device__ __forceinline__ void store(elem_t* c, const float (&acc)[M][N], int tile_row, int tile_col, int n,
                                          bool vec) const
    {
        store_chunks(c, acc, tile_row + row0, 32, tile_col + col0, 16, n, vec);
    }
};

__device__ __forceinline__ WarpLanes warp_lanes(int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    return WarpLanes{warp / (BN / WN) * WM + lane / 4 * 4, warp % (BN / WN) * WN + lane % 4 * 4};
}

// the CTA's BM x BN tile of C = A B (blockIdx.x along the columns, blockIdx.y along the rows)
__device__ __forceinline__ void prefetched_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                                elem_t* __restrict__ c, int n)
{
    __shared__ __align__(16) float sA[2][S][BM + PAD_T];
    __shared__ __align__(16) float sB[2][S][BN];
    const int tid = threadIdx.x;
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const bool vec = (n & 3) == 0;
    const int slices = (n + S - 1) / S;
    const WarpLanes lanes = warp_lanes(tid);
    quad_t qa[A_QUADS], qb[B_QUADS];
    float av[2][WarpLanes::M], bv[2][WarpLanes::N];  // step k's values and step k + 1's
    float acc[WarpLanes::M][WarpLanes::N] = {};

    load_slice(qa, qb, a, b, tile_row, tile_col, 0, n, vec, tid);
    store_slice(sA[0], sB[0], qa, qb, tid);
    __syncthreads();
    lanes.load_values(sA[0][0], sB[0][0], av[0], bv[0]);
    for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        // slice s + 1 (past the last slice every quad lies outside the matrix: zeros, no access, and
        // the stage they fill is never read, so the last iteration needs no branch)
        load_slice(qa, qb, a, b, tile_row, tile_col, (s + 1) * S, n, vec, tid);
#pragma unroll
        for (int k = 0; k < S; ++k) {
            if (k == S - 1) {
                store_slice(sA[cur ^ 1], sB[cur ^ 1], qa, qb, tid);
                __syncthreads();  // the stage is whole; and every read of stage cur is done
                lanes.load_values(sA[cur ^ 1][0], sB[cur ^ 1][0], av[0], bv[0]);  // S even: set 0 is free
            } else {
                lanes.load_values(sA[cur][k + 1], sB[cur][k + 1], av[(k + 1) & 1], bv[(k + 1) & 1]);
            }
            outer_product(acc, av[k & 1], bv[k & 1]);
        }
    }
    lanes.store(c, acc, tile_row, tile_col, n, vec);
}
