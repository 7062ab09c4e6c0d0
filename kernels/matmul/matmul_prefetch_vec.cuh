// v17's kernel body: v09's register-prefetched pipeline (matmul_prefetch.cuh: the lanes, the quads,
// two shared stages, one barrier a slice, step k + 1's values read during step k's FMAs) with a main
// loop that issues little besides its FMAs and shared loads.
//
// - Compiled twice, for n % 4 == 0 (vector quads) and for the scalar path, chosen once per CTA
//   (sliced_tile<VEC>); the shared stages are declared once, in vec_tile, and handed to both.
// - No guard in the loop. Rows of A and columns of B past the matrix are clamped to its last row or
//   column (quad) once, before the loop: they only feed rows and columns of C that are never stored.
//   The k direction needs zeros, so the partial slice comes first (CUTLASS's residue-first order):
//   slice 0 covers k in [r - S, r) with r = n - (slices - 1)·S in [1, S], loaded with guards in the
//   prologue (zeros for k < 0); every later slice is whole. The last iteration loads nothing (one
//   uniform predicate on its loads; v09 loaded and stored a slice of zeros there) and stores what the
//   registers hold into the stage no one reads again.
// - At S >= 16 the next slice's quads come in two groups (LOAD_GROUPS): the first loaded before
//   step 0 and stored at step S/2, the second loaded then and stored before the last step, so half
//   as many registers wait on global memory, each group still half a slice ahead of its store.
// - Strength-reduced addresses: a thread's global quads are a few pointers advanced by a constant
//   a slice (A: one pointer per distinct row, its k groups at immediate offsets; B: one per quad),
//   its shared offsets are computed once, and with the slice unrolled every shared load and store
//   has an immediate offset (the stage toggles a register by XOR once a slice).
// - sA is k-major without padding, swizzled instead: in the rows k with k % 8 >= 4 the columns are
//   XORed with 16, so a warp's transposed stores of two k rows 4 apart land in 32 distinct banks
//   (v09 padded the rows by 4 floats); a lane's float4 reads stay contiguous and conflict-free. At
//   S = 16 on 256 x 128 tiles the two stages are 48 KiB, what static shared memory allows.
//
// B's quads are laid out differently from v09's (a thread's quads share one k row, TPR = THREADS / S
// threads a row): a warp still reads whole 32-byte sectors, 64 bytes or more of a row.
//
// With L2_PREFETCH = d > 0 (v19), each slice also asks the slice d further on into L2 (prefetch.global.L2),
// so that its loads, issued a slice ahead, find it there.
//
// Reads BM, BN, S, WM and WN (matmul_prefetch.cuh's macros), defined by the version before including it,
// L2_PREFETCH (default 0: none) and FMA_ORDER (v22; default 0: outer_product's order).
#pragma once

#include "matmul_prefetch.cuh"

#include "common/sm90/prefetch.cuh"

#ifndef FMA_ORDER
#define FMA_ORDER 0  // the FMAs' issue order in a step (matmul.cuh's outer_product_ordered); 0: outer_product
#endif
#ifndef L2_PREFETCH
#define L2_PREFETCH 0  // slices ahead asked into L2; 0: none
#endif

#define VA_ROWS (2 * BM / THREADS)  // distinct rows of A a thread loads; quad i: row group i % VA_ROWS, k group i / VA_ROWS
#define VB_TPR (THREADS / S)  // threads along one k row of B's slice
#define A_STAGE (S * BM)  // floats of sA in one stage (k-major, no padding)
#define STAGE_FLOATS (S * BM + S * BN)
#define QUADS (A_QUADS + B_QUADS)  // a thread's quads of a slice: A's, then B's
#ifndef LOAD_GROUPS
#define LOAD_GROUPS (S >= 16 ? 2 : 1)  // the slice's quads are loaded (and stored) in this many groups
#endif
#define GROUP_QUADS ((QUADS + LOAD_GROUPS - 1) / LOAD_GROUPS)

static_assert(2 * BM % THREADS == 0 && THREADS % 64 == 0, "a thread's quads of A lie in whole row groups, THREADS/2 rows apart");
static_assert(THREADS % S == 0 && (BN / 4) % VB_TPR == 0, "B's slice rows split into whole quads per thread");
static_assert(A_QUADS == VA_ROWS * (S / 8) && B_QUADS == (BN / 4) / VB_TPR, "the two layouts count the same quads");
static_assert(LOAD_GROUPS == 1 || (LOAD_GROUPS == 2 && S % 4 == 0), "one group, or two half a slice apart");

#ifndef B_ROTATE
#define B_ROTATE 0  // sB's quads stored rotated by this many elements (v26); 0: as loaded
#endif
static_assert(B_ROTATE >= 0 && B_ROTATE < 4, "a rotation within a quad");

#if B_ROTATE
// v with its elements rotated by R: element p of the result is element (p + R) % 4 of v
template <int R>
__device__ __forceinline__ float4 rotate4(float4 v)
{
    if (R == 1) return make_float4(v.y, v.z, v.w, v.x);
    if (R == 2) return make_float4(v.z, v.w, v.x, v.y);
    return make_float4(v.w, v.x, v.y, v.z);
}
#define B_STORED(v) rotate4<B_ROTATE>(v)  // a quad of B as sB holds it
#define B_READ(v) rotate4<4 - B_ROTATE>(v)  // and back in column order
#else
#define B_STORED(v) (v)  // without rotation the source is v17's exactly, and so is its machine code
#define B_READ(v) (v)
#endif

// the swizzle of sA: columns XORed with 16 in the rows k with k % 8 >= 4
__device__ __forceinline__ constexpr int a_swizzle(int k) { return (k & 4) ? 16 : 0; }

// m[row][col .. col+3] as stored, zeros outside the matrix (B's row and A's col, the k of slice 0,
// may be negative): the prologue's guarded load. With VEC a quad lies wholly inside or outside (col
// and n multiples of 4).
template <bool VEC>
__device__ __forceinline__ quad_t guarded_quad(const elem_t* __restrict__ m, int row, int col, int n)
{
    if (VEC) {
        if (row < 0 || row >= n || col < 0 || col >= n) return zero_quad();
        return *reinterpret_cast<const quad_t*>(m + at(row, col, n));
    }
    elem_t e[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        e[j] = (row >= 0 && row < n && col + j >= 0 && col + j < n) ? m[at(row, col + j, n)] : (elem_t)0;
    return pack_quad(e[0], e[1], e[2], e[3]);
}

// where a thread's quads lie: quad g < A_QUADS is A's rows a_row + (g % VA_ROWS)·THREADS/2, k
// a_k + (g / VA_ROWS)·8 (v09's order); quad A_QUADS + i is B's row b_k, columns b_col + i·TPR·4
struct QuadPlaces {
    int a_row, a_k, b_k, b_col;
    __device__ __forceinline__ explicit QuadPlaces(int tid)
        : a_row(tid / 2), a_k(tid % 2 * 4), b_k(tid / VB_TPR), b_col(tid % VB_TPR * 4) {}
    __device__ __forceinline__ int a_row_of(int g) const { return a_row + g % VA_ROWS * (THREADS / 2); }
    __device__ __forceinline__ int a_k_of(int g) const { return a_k + g / VA_ROWS * 8; }
    __device__ __forceinline__ int b_col_of(int g) const { return b_col + (g - A_QUADS) * VB_TPR * 4; }
};

// quad g of slice 0 (k from k0 = r - S, negative k zero), guarded
template <bool VEC>
__device__ __forceinline__ quad_t first_slice_quad(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                                   const QuadPlaces& at_, int g, int tile_row, int tile_col, int k0, int n)
{
    if (g < A_QUADS) return guarded_quad<VEC>(a, tile_row + at_.a_row_of(g), k0 + at_.a_k_of(g), n);
    return guarded_quad<VEC>(b, k0 + at_.b_k, tile_col + at_.b_col_of(g), n);
}

// a thread's share of the whole slices: where its quads of the next one lie in global memory
template <bool VEC>
struct SliceLoader {
    const elem_t* pa[VA_ROWS];  // A: row group r's quads of the next slice (its k groups of 8 at immediate offsets)
    const elem_t* pb[B_QUADS];  // B: quad i of the next slice (VEC); the first element of its k row (scalar path: pb[0])
    int bcol;  // scalar path: B's quad 0's first column in C (quad i's TPR·4·i further), each element clamped to n - 1
    int n;

    // quad g of the slice the pointers are at: no guard (rows and columns clamped, k inside)
    __device__ __forceinline__ quad_t load(int g) const
    {
        if (g < A_QUADS) {
            const elem_t* p = pa[g % VA_ROWS] + g / VA_ROWS * 8;
            if (VEC) return *reinterpret_cast<const quad_t*>(p);
            return pack_quad(p[0], p[1], p[2], p[3]);
        }
        const int i = g - A_QUADS;
        if (VEC) return *reinterpret_cast<const quad_t*>(pb[i]);
        const elem_t* row = pb[0];
        const int c0 = bcol + i * VB_TPR * 4;
        return pack_quad(row[min(c0, n - 1)], row[min(c0 + 1, n - 1)], row[min(c0 + 2, n - 1)], row[min(c0 + 3, n - 1)]);
    }

    __device__ __forceinline__ void advance()
    {
#pragma unroll
        for (int r = 0; r < VA_ROWS; ++r) pa[r] += S;
#pragma unroll
        for (int i = 0; i < (VEC ? B_QUADS : 1); ++i) pb[i] += (u64)S * (u64)n;
    }

#if L2_PREFETCH
    // the slice `ahead` slices past the one the pointers are at, asked into L2 (no registers, no
    // wait): A's quads by the first thread of each pair that shares a row's 32-byte sector, B's by
    // one thread in eight along a k row (a 128-byte line); the vector path only. The caller keeps
    // the slice inside the matrix.
    __device__ __forceinline__ void prefetch_l2(int ahead, bool a_owner, bool b_owner) const
    {
        if (!VEC) return;
        if (a_owner) {
#pragma unroll
            for (int g = 0; g < A_QUADS; ++g) prefetch_global_l2(pa[g % VA_ROWS] + g / VA_ROWS * 8 + ahead * S);
        }
        if (b_owner) {
#pragma unroll
            for (int i = 0; i < B_QUADS; ++i) prefetch_global_l2(pb[i] + (u64)ahead * S * (u64)n);
        }
    }
#endif

    template <int GROUP>
    __device__ __forceinline__ void load_group(quad_t (&q)[GROUP_QUADS]) const
    {
#pragma unroll
        for (int g = GROUP * GROUP_QUADS; g < QUADS && g < (GROUP + 1) * GROUP_QUADS; ++g) q[g - GROUP * GROUP_QUADS] = load(g);
    }
};

// the lane's shared-memory offsets, in floats from a stage's start
struct VecOffsets {
    int a_read[2];  // sA column of the lane's first float4 in rows with k % 8 < 4 and >= 4 (the swizzle)
    int b_read;  // A_STAGE + the lane's first column of sB
    int a_store;  // this thread's first transposed store of A (its k group's row 0 or 4, swizzled column)
    int b_store;  // A_STAGE + its first quad of B
};

// the offsets of a lane at `lanes` that loads the quads at `places`
__device__ __forceinline__ VecOffsets vec_offsets(const WarpLanes& lanes, const QuadPlaces& places)
{
    VecOffsets o;
    o.a_read[0] = lanes.row0;
    o.a_read[1] = lanes.row0 ^ 16;
    o.b_read = A_STAGE + lanes.col0;
    o.a_store = places.a_k * BM + (places.a_row ^ a_swizzle(places.a_k));
    o.b_store = A_STAGE + places.b_k * BN + places.b_col;
    return o;
}

// the lane's M values of A and N of B at step k of the stage at `stage` (k known at compile time)
template <int M, int N>
__device__ __forceinline__ void vec_values(const float* stage, const VecOffsets& o, int k, float (&av)[M], float (&bv)[N])
{
    const float* sa = stage + k * BM + o.a_read[(k >> 2) & 1];
#pragma unroll
    for (int mi = 0; mi < M / 4; ++mi) put4(av, mi * 4, ld_float4(sa + mi * 32));
    const float* sb = stage + o.b_read + k * BN;
#pragma unroll
    for (int ni = 0; ni < N / 4; ++ni) put4(bv, ni * 4, B_READ(ld_float4(sb + ni * 16)));
}

// quad g into the stage at `stage` as fp32: A's down a column of sA, B's whole
__device__ __forceinline__ void vec_store_quad(float* stage, const VecOffsets& o, int g, quad_t q)
{
    const float4 v = quad_float4(q);
    if (g < A_QUADS) {
        // k group g / VA_ROWS (8 rows of sA), row group g % VA_ROWS (THREADS / 2 columns): neither
        // moves bit 4 of the column, so the swizzle folded into a_store holds for every quad
        float* p = stage + o.a_store + g / VA_ROWS * 8 * BM + g % VA_ROWS * (THREADS / 2);
        p[0] = v.x;
        p[BM] = v.y;
        p[2 * BM] = v.z;
        p[3 * BM] = v.w;
    } else {
        st_float4(stage + o.b_store + (g - A_QUADS) * VB_TPR * 4, B_STORED(v));
    }
}

template <int GROUP>
__device__ __forceinline__ void vec_store_group(float* stage, const VecOffsets& o, const quad_t (&q)[GROUP_QUADS])
{
#pragma unroll
    for (int g = GROUP * GROUP_QUADS; g < QUADS && g < (GROUP + 1) * GROUP_QUADS; ++g)
        vec_store_quad(stage, o, g, q[g - GROUP * GROUP_QUADS]);
}

// one slice's S steps out of the stage at `stage`, while the next slice's quads are loaded (when
// `more`; else the registers keep what they hold) in groups, the first before step 0, the second at
// step S/2 once the first is stored, into the stage at `next`; the last group is stored before the
// last step, and step 0's values of `next` are read after the barrier. `next` was last read before
// the previous slice's barrier: it is free all slice long.
template <class Loader, int M, int N>
__device__ __forceinline__ void vec_slice(const float* stage, float* next, const VecOffsets& o, Loader& ld,
                                          bool more, quad_t (&q)[GROUP_QUADS], float (&av)[2][M], float (&bv)[2][N],
                                          float (&acc)[M][N])
{
    if (more) ld.template load_group<0>(q);
#pragma unroll
    for (int k = 0; k < S; ++k) {
        if (LOAD_GROUPS == 2 && k == S / 2) {
            vec_store_group<0>(next, o, q);
            if (more) ld.template load_group<LOAD_GROUPS - 1>(q);
        }
        if (k == S - 1) {
            vec_store_group<LOAD_GROUPS - 1>(next, o, q);
            __syncthreads();  // the stage is whole; and every read of the other is done
            vec_values(next, o, 0, av[0], bv[0]);  // S even: set 0 is free
        } else {
            vec_values(stage, o, k + 1, av[(k + 1) & 1], bv[(k + 1) & 1]);
        }
#if FMA_ORDER
        outer_product_ordered<FMA_ORDER>(acc, av[k & 1], bv[k & 1]);
#else
        outer_product(acc, av[k & 1], bv[k & 1]);
#endif
    }
    ld.advance();
}

// slices [s0, s1) out of the two stages at smem, slice s0 already stored into stage 0 (no barrier passed
// since) and `ld`'s pointers at slice s0 + 1: their sums written to acc. Loader gives load_group<G>
// and advance() (SliceLoader; v27's two-term loader), and prefetch_l2 with L2_PREFETCH.
template <class Loader, int M, int N>
__device__ __forceinline__ void run_slices(float* smem, const VecOffsets& o, Loader& ld, int s0, int s1,
                                           float (&acc)[M][N]
#if L2_PREFETCH
                                           , bool a_owner, bool b_owner
#endif
)
{
    float av[2][M], bv[2][N];  // step k's values and step k + 1's
    float sum[M][N] = {};
    quad_t q[GROUP_QUADS];
#pragma unroll
    for (int g = 0; g < GROUP_QUADS; ++g) q[g] = zero_quad();  // what the last slice stores into the unused stage
    u32 cur = 0;  // the stage being read, in floats from smem: 0 or STAGE_FLOATS
    __syncthreads();
    vec_values(smem, o, 0, av[0], bv[0]);
    // slice s - 1 out of stage cur, slice s into the other; the last iteration loads nothing and
    // stores what the registers hold into the stage no one reads again (one barrier more a segment)
    for (int s = s0 + 1; s <= s1; ++s) {
#if L2_PREFETCH
        if (s + L2_PREFETCH < s1) ld.prefetch_l2(L2_PREFETCH, a_owner, b_owner);  // the pointers are at slice s
#endif
        vec_slice(smem + cur, smem + (cur ^ STAGE_FLOATS), o, ld, s < s1, q, av, bv, sum);
        cur ^= STAGE_FLOATS;
    }
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) acc[i][j] = sum[i][j];
}

// slices [s0, s1) of the BM x BN tile of C at (tile_row, tile_col): their sums written to acc (the lane's
// outputs), with the loop compiled for one path (VEC: n % 4 == 0). Slices count from the partial
// one: slice 0 covers k in [r - S, r), slice j >= 1 covers [r + (j - 1)·S, r + j·S). Slice s0 is
// loaded with guards (only slice 0 needs them); every later one is whole. Stage 0 is written first:
// the caller passes a barrier between two calls on one smem.
template <bool VEC>
__device__ __forceinline__ void sliced_segment(float* smem, const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                               int n, int tile_row, int tile_col, int s0, int s1,
                                               float (&acc)[WarpLanes::M][WarpLanes::N])
{
    const int tid = threadIdx.x;
    const int slices = (n + S - 1) / S;
    // k of slice 0 run from r - S to r - 1, from r on every slice is whole; slice s0 + 1 starts at rs
    const int rs = n - (slices - 1) * S + s0 * S;
    const WarpLanes lanes = warp_lanes(tid);
    const QuadPlaces places(tid);
    const VecOffsets o = vec_offsets(lanes, places);

    // slice s0, guarded, into stage 0
#pragma unroll
    for (int g = 0; g < QUADS; ++g)
        vec_store_quad(smem, o, g, first_slice_quad<VEC>(a, b, places, g, tile_row, tile_col, rs - S, n));

    // the pointers at slice s0 + 1 (k from rs), rows and columns clamped into the matrix
    SliceLoader<VEC> ld;
    ld.n = n;
#pragma unroll
    for (int j = 0; j < VA_ROWS; ++j) ld.pa[j] = a + at(min(tile_row + places.a_row_of(j), n - 1), rs + places.a_k, n);
    ld.bcol = tile_col + places.b_col;
#pragma unroll
    for (int i = 0; i < B_QUADS; ++i)  // VEC: n >= 4
        ld.pb[i] = b + at(min(rs + places.b_k, n - 1), VEC ? min(tile_col + places.b_col_of(A_QUADS + i), n - 4) : 0, n);

    run_slices(smem, o, ld, s0, s1, acc
#if L2_PREFETCH
               , places.a_k == 0, places.b_col % 32 == 0
#endif
    );
}

// the CTA's BM x BN tile of C with the loop compiled for one path (VEC: n % 4 == 0)
template <bool VEC>
__device__ __forceinline__ void sliced_tile(float* smem, const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                            elem_t* __restrict__ c, int n)
{
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    float acc[WarpLanes::M][WarpLanes::N];
    sliced_segment<VEC>(smem, a, b, n, tile_row, tile_col, 0, (n + S - 1) / S, acc);
    warp_lanes(threadIdx.x).store(c, acc, tile_row, tile_col, n, VEC);
}

// the CTA's BM x BN tile of C = A B (blockIdx.x along the columns, blockIdx.y along the rows)
__device__ __forceinline__ void vec_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                         elem_t* __restrict__ c, int n)
{
    __shared__ __align__(16) float smem[2 * STAGE_FLOATS];
    if ((n & 3) == 0) {
        sliced_tile<true>(smem, a, b, c, n);
    } else {
        sliced_tile<false>(smem, a, b, c, n);
    }
}
