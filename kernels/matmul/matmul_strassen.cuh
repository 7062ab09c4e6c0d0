// One level of Strassen's algorithm on v17's loop (v27): C = A B as seven products of half-size
// operands instead of eight, every product a grid of v17 tiles, the sums of quadrants formed as the
// slices are loaded and the products added into C's quadrants as they are stored.
//
// With h = n / 2 and A, B, C in 2 x 2 quadrants of h x h (X11 X12 / X21 X22):
//   M1 = (A11 + A22)(B11 + B22)   C11 +, C22 +
//   M2 = (A21 + A22) B11          C21 +, C22 -
//   M3 = A11 (B12 - B22)          C12 +, C22 +
//   M4 = A22 (B21 - B11)          C11 +, C21 +
//   M5 = (A11 + A12) B22          C11 -, C12 +
//   M6 = (A21 - A11)(B11 + B12)   C22 +
//   M7 = (A12 - A22)(B21 + B22)   C11 +
// so C11 = M1 + M4 - M5 + M7, C12 = M3 + M5, C21 = M2 + M4, C22 = M1 - M2 + M3 + M6.
//
// - The grid is (h / BN, h / BM, 7): blockIdx.z is the product, x and y a BM x BN tile of it. Each
//   CTA runs v17's steps (matmul_prefetch_vec.cuh's run_slices) over h / S whole slices; its loader
//   (SumLoader) reads each quad of a slice from both quadrants of a two-term operand and adds them
//   (one FMA by the second term's sign, 0 for a one-term operand, whose second term is its first).
// - The epilogue adds the tile into one or two quadrants of C with vector reductions
//   (red.global.add.v4.f32): C starts zeroed, and the two to four products that meet in a quadrant
//   add in whatever order they finish, so C's last bits may differ from call to call.
// - fp32 only; n a multiple of 2·BM, 2·BN and 2·S (the version's host calls v17's kernel otherwise).
//
// Reads BM, BN, S, WM and WN as matmul_prefetch_vec.cuh does, which the version includes first.
#pragma once

#if ELEM_FP16
#error "matmul_strassen.cuh: fp32 only (build with ELEM_FP16=0)"
#endif
#if L2_PREFETCH
#error "matmul_strassen.cuh: product_tile runs the slices without v19's L2 prefetch (build with L2_PREFETCH=0)"
#endif

// which quadrants (0: X11, 1: X12, 2: X21, 3: X22) a product multiplies and where it adds its result
struct StrassenProduct {
    int a1, a2;  // A's terms: a1 + sa·a2 (sa = 0: one term)
    float sa;
    int b1, b2;  // B's terms: b1 + sb·b2
    float sb;
    int c1, c2;  // the quadrants of C it adds into, with signs s1 and s2 (c2 < 0: one)
    float s1, s2;
};

__device__ __forceinline__ StrassenProduct strassen_product(int r)
{
    switch (r) {
    case 0: return {0, 3, 1.0f, 0, 3, 1.0f, 0, 3, 1.0f, 1.0f};
    case 1: return {2, 3, 1.0f, 0, 0, 0.0f, 2, 3, 1.0f, -1.0f};
    case 2: return {0, 0, 0.0f, 1, 3, -1.0f, 1, 3, 1.0f, 1.0f};
    case 3: return {3, 3, 0.0f, 2, 0, -1.0f, 0, 2, 1.0f, 1.0f};
    case 4: return {0, 1, 1.0f, 3, 3, 0.0f, 0, 1, -1.0f, 1.0f};
    case 5: return {2, 0, -1.0f, 0, 1, 1.0f, 3, -1, 1.0f, 0.0f};
    default: return {1, 3, -1.0f, 2, 3, 1.0f, 0, -1, 1.0f, 0.0f};
    }
}

// the first row and column of quadrant q of an n x n matrix (h = n / 2)
__device__ __forceinline__ int quadrant_row(int q, int h) { return (q >> 1) * h; }
__device__ __forceinline__ int quadrant_col(int q, int h) { return (q & 1) * h; }

// u + s·v, element by element (one FMA each)
__device__ __forceinline__ float4 add4(float4 u, float4 v, float s)
{
    return make_float4(fmaf(s, v.x, u.x), fmaf(s, v.y, u.y), fmaf(s, v.z, u.z), fmaf(s, v.w, u.w));
}

// region key: v27's loader: the quads of a two-term operand added as a slice loads
// a slice's quads of two-term operands: term one's quad plus the sign times term two's, read at the
// same place of the two quadrants (two SliceLoaders whose pointers advance together)
struct SumLoader {
    SliceLoader<true> t1, t2;
    float sa, sb;  // the second term's sign for A's quads and for B's

    __device__ __forceinline__ quad_t load(int g) const
    {
        return add4(t1.load(g), t2.load(g), g < A_QUADS ? sa : sb);
    }

    __device__ __forceinline__ void advance()
    {
        t1.advance();
        t2.advance();
    }

    template <int GROUP>
    __device__ __forceinline__ void load_group(quad_t (&q)[GROUP_QUADS]) const
    {
#pragma unroll
        for (int g = GROUP * GROUP_QUADS; g < QUADS && g < (GROUP + 1) * GROUP_QUADS; ++g) q[g - GROUP * GROUP_QUADS] = load(g);
    }
};

// endregion

// term (quadrants qa of A and qb of B) of the CTA's tile at (tile_row, tile_col) of a product: its
// pointers at slice 0 (k from 0)
__device__ __forceinline__ void point_term(SliceLoader<true>& t, const float* __restrict__ a, const float* __restrict__ b,
                                           const QuadPlaces& places, int qa, int qb, int tile_row, int tile_col, int n)
{
    const int h = n / 2;
    t.n = n;
    t.bcol = 0;
#pragma unroll
    for (int j = 0; j < VA_ROWS; ++j)
        t.pa[j] = a + at(quadrant_row(qa, h) + tile_row + places.a_row_of(j), quadrant_col(qa, h) + places.a_k, n);
#pragma unroll
    for (int i = 0; i < B_QUADS; ++i)
        t.pb[i] = b + at(quadrant_row(qb, h) + places.b_k, quadrant_col(qb, h) + tile_col + places.b_col_of(A_QUADS + i), n);
}

// *p += v, four floats at once, in L2 (no value returned)
__device__ __forceinline__ void red_add4(float* p, float4 v)
{
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}

// sign times the lane's outputs added into quadrant q of C at the tile (tile_row, tile_col)
template <int M, int N>
__device__ __forceinline__ void add_into_quadrant(float* __restrict__ c, const float (&acc)[M][N], const WarpLanes& lanes,
                                                  int q, float sign, int tile_row, int tile_col, int n)
{
    const int h = n / 2;
    const int row0 = quadrant_row(q, h) + tile_row + lanes.row0, col0 = quadrant_col(q, h) + tile_col + lanes.col0;
#pragma unroll
    for (int ci = 0; ci < M / 4; ++ci)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int cj = 0; cj < N / 4; ++cj) {
                const float* r = &acc[ci * 4 + i][cj * 4];
                red_add4(c + at(row0 + ci * 32 + i, col0 + cj * 16, n),
                         make_float4(sign * r[0], sign * r[1], sign * r[2], sign * r[3]));
            }
}

// a product's tile from `ld`, whose pointers are at its slice 0, over `slices` slices: the lane's sums
// handed to `epilogue`
template <class Loader, class Epilogue>
__device__ __forceinline__ void product_tile(float* smem, Loader& ld, const VecOffsets& o, int slices, Epilogue epilogue)
{
    // slice 0 into stage 0 (every slice is whole), then the pointers at slice 1
#pragma unroll
    for (int g = 0; g < QUADS; ++g) vec_store_quad(smem, o, g, ld.load(g));
    ld.advance();

    float acc[WarpLanes::M][WarpLanes::N];
    run_slices(smem, o, ld, 0, slices, acc);
    epilogue(acc);
}

// a product's tile added into its one or two quadrants of C
template <int M, int N>
__device__ __forceinline__ void add_products(float* __restrict__ c, const float (&acc)[M][N], const WarpLanes& lanes,
                                             const StrassenProduct& p, int tile_row, int tile_col, int n)
{
    add_into_quadrant(c, acc, lanes, p.c1, p.s1, tile_row, tile_col, n);
    if (p.c2 >= 0) add_into_quadrant(c, acc, lanes, p.c2, p.s2, tile_row, tile_col, n);
}

// the CTA's tile of product blockIdx.z, added into C (zeroed by the caller)
__device__ __forceinline__ void strassen_tile(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                              int n)
{
    __shared__ __align__(16) float smem[2 * STAGE_FLOATS];
    const StrassenProduct p = strassen_product(blockIdx.z);
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const WarpLanes lanes = warp_lanes(threadIdx.x);
    const QuadPlaces places(threadIdx.x);
    const VecOffsets o = vec_offsets(lanes, places);

    SumLoader ld;
    point_term(ld.t1, a, b, places, p.a1, p.b1, tile_row, tile_col, n);
    point_term(ld.t2, a, b, places, p.a2, p.b2, tile_row, tile_col, n);
    ld.sa = p.sa;
    ld.sb = p.sb;
    product_tile(smem, ld, o, n / 2 / S, [&](const float (&acc)[WarpLanes::M][WarpLanes::N]) {
        add_products(c, acc, lanes, p, tile_row, tile_col, n);
    });
}

// the versions' kernels: 128 x 128 tiles two CTAs an SM, larger ones one (as v17's)
#ifndef CTAS_PER_SM
#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)
#endif

// v17's kernel on the whole matrix: what v27-v29 launch for sizes that do not split into whole tiles and slices
extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen_whole(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    vec_tile(a, b, c, n);
}
