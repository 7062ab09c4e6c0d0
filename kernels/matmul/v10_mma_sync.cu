// v10: fp16 on the tensor cores with the warp-level product (mma.sync m16n8k16, f32 accumulate):
// the same two-level tiling as the CUDA-core versions, but a warp, not a thread, is the unit that
// multiplies, and its operands reach it through ldmatrix instead of scalar shared-memory reads.
//
// Block: an L x L tile of C (128 x 128), THREADS = (L/WM)(L/WN) x 32 threads; warp w owns the
// WM x WN region at row (w / (L/WN)) WM, column (w % (L/WN)) WN (64 x 32 by default). A slice is S
// deep (32 by default; the version's CONFIG, from the sweep, builds 64): A's L x S part row-major,
// B's S x L part row-major, both fp16 in shared memory.
// STAGES slices are in flight (cp.async, 16 bytes = 8 halves a copy, zero-filled outside the
// matrix): slice s + STAGES - 1 is issued while slice s is multiplied, one barrier a slice.
//
// A warp's step (16 deep): ldmatrix_x4 gives each of its WM/16 A fragments (16 x 16),
// ldmatrix_x4_trans two B fragments (16 x 8) per 16 columns (B is k-by-n row-major, the
// transposed load turns it into the "col" operand), then (WM/16)(WN/8) mma.sync. Accumulators:
// (WM/16)(WN/8) x 4 f32 a thread, 64 by default.
//
// Bank conflicts: ldmatrix reads eight 16-byte rows per phase. A's rows are S halves (64 bytes at
// S = 32), so rows two apart would share banks; its 16-byte chunk c of row m is stored at
// c ^ ((m / 2) % 4) (S = 32) or c ^ (m % 8) (S = 64), which spreads eight consecutive rows over all
// 32 banks. B's rows are L halves (256 bytes): every row starts at bank 0, so chunk c of row k is
// stored at c ^ (k % 8).
//
// Edges: a copy is all inside or all outside the matrix when n % 8 == 0 (rows are then 16-byte
// aligned); otherwise the same chunks are filled by guarded scalar loads and one 16-byte shared
// store, which the slice's barrier covers as it covers the copies. C is stored as f16 pairs when n
// is even, element by element otherwise, each guarded.
//
// fp16 only: the tensor cores' fp32 path is TF32, another precision (the module refuses fp32).

#ifndef ELEM_FP16
#define ELEM_FP16 1  // fp16 unless a build says otherwise (and then the #error below says why not)
#endif
#include "matmul.cuh"
#include "common/sm90/mma_sync.cuh"

#if !ELEM_FP16
#error "v10_mma_sync multiplies fp16 on the tensor cores: build it with ELEM_FP16=1"
#endif

#ifndef L
#define L 128
#endif
#ifndef S
#define S 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 4
#endif
#define THREADS ((L / WM) * (L / WN) * 32)
#define MI (WM / 16)  // A fragments of a warp
#define NI (WN / 8)   // n8 tiles of a warp

static_assert(S == 32 || S == 64, "S is 32 or 64 (the A swizzle)");
static_assert(L % WM == 0 && L % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && L >= 64, "tile shape");

// halves from the start of a stage's A part to chunk c (8 halves) of row m, and of its B part to
// chunk c of row k
__device__ __forceinline__ int a_offset(int m, int c)
{
    const int sw = S == 32 ? ((m >> 1) & 3) : (m & 7);
    return m * S + ((c ^ sw) << 3);
}
__device__ __forceinline__ int b_offset(int k, int c) { return k * L + ((c ^ (k & 7)) << 3); }

// eight halves m[row][col .. col+7] into shared memory at dst: one zero-filling cp.async when
// vec8 (n % 8 == 0), otherwise guarded loads and a 16-byte store
__device__ __forceinline__ void copy8(elem_t* dst, const elem_t* __restrict__ m, int row, int col, int n, bool vec8)
{
    if (vec8) {
        const bool inside = row < n && col < n;
        cp_async16_zfill(smem_u32(dst), inside ? m + at(row, col, n) : m, inside);
        return;
    }
    u32 w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const bool in0 = row < n && col + 2 * j < n, in1 = row < n && col + 2 * j + 1 < n;
        const u32 lo = in0 ? m[at(row, col + 2 * j, n)] : 0u, hi = in1 ? m[at(row, col + 2 * j + 1, n)] : 0u;
        w[j] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
}

// this thread's share of slice k0: A's L x S part and B's S x L part
__device__ __forceinline__ void fetch_slice(elem_t* sa, elem_t* sb, const elem_t* __restrict__ a,
                                            const elem_t* __restrict__ b, int tile_row, int tile_col, int k0, int n,
                                            bool vec8, int tid)
{
#pragma unroll
    for (int q = tid; q < L * S / 8; q += THREADS) {
        const int m = q / (S / 8), c = q % (S / 8);
        copy8(sa + a_offset(m, c), a, tile_row + m, k0 + c * 8, n, vec8);
    }
#pragma unroll
    for (int q = tid; q < S * L / 8; q += THREADS) {
        const int k = q / (L / 8), c = q % (L / 8);
        copy8(sb + b_offset(k, c), b, k0 + k, tile_col + c * 8, n, vec8);
    }
}

// one slice: S / 16 steps of the warp's (WM/16) x (WN/8) mma.sync
__device__ __forceinline__ void multiply_slice(const elem_t* sa, const elem_t* sb, float (&acc)[MI][NI][4], int wm0,
                                               int wn0, int lane)
{
    const u32 a_base = smem_u32(sa), b_base = smem_u32(sb);
#pragma unroll
    for (int kk = 0; kk < S / 16; ++kk) {
        u32 af[MI][4], bf[NI / 2][4];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
            const int m = wm0 + mi * 16 + (lane & 15);
            ldmatrix_x4(a_base + 2 * a_offset(m, kk * 2 + (lane >> 4)), af[mi]);
        }
#pragma unroll
        for (int nj = 0; nj < NI / 2; ++nj) {
            const int k = kk * 16 + (lane & 15);
            ldmatrix_x4_trans(b_base + 2 * b_offset(k, (wn0 + nj * 16) / 8 + (lane >> 4)), bf[nj]);
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
                mma_m16n8k16_f16_f32(acc[mi][ni], af[mi], bf[ni / 2][(ni & 1) * 2], bf[ni / 2][(ni & 1) * 2 + 1]);
    }
}

// C[row][col], C[row][col + 1] = v0, v1 (col even): one 4-byte store when n is even
__device__ __forceinline__ void store_pair(elem_t* __restrict__ c, int row, int col, int n, float v0, float v1)
{
    if ((n & 1) == 0) {
        if (row < n && col < n) *reinterpret_cast<u32*>(c + at(row, col, n)) = pack_half2(v0, v1);
        return;
    }
    store_if_inside(c, row, col, n, v0);
    store_if_inside(c, row, col + 1, n, v1);
}

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_mma_sync(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    extern __shared__ __align__(128) elem_t smem[];  // STAGES x (A's L x S, B's S x L)
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm0 = (warp / (L / WN)) * WM, wn0 = (warp % (L / WN)) * WN;
    const int tile_row = blockIdx.y * L, tile_col = blockIdx.x * L;
    const bool vec8 = (n & 7) == 0;
    const int slices = (n + S - 1) / S;
    constexpr int STAGE = 2 * L * S;  // halves
    float acc[MI][NI][4] = {};

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) fetch_slice(smem + s * STAGE, smem + s * STAGE + L * S, a, b, tile_row, tile_col, s * S, n, vec8, tid);
        cp_async_commit();
    }
    for (int s = 0; s < slices; ++s) {
        cp_async_wait_pending<STAGES - 2>();  // this thread's copies of slice s have landed
        __syncthreads();  // every thread's; and everyone is done with slice s - 1, whose stage is refilled next
        const int next = s + STAGES - 1;
        if (next < slices) {
            elem_t* st = smem + (next % STAGES) * STAGE;
            fetch_slice(st, st + L * S, a, b, tile_row, tile_col, next * S, n, vec8, tid);
        }
        cp_async_commit();  // possibly empty, so that the wait above always means slice s
        const elem_t* cur = smem + (s % STAGES) * STAGE;
        multiply_slice(cur, cur + L * S, acc, wm0, wn0, lane);
    }
    cp_async_wait_pending<0>();

    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
            const int row = tile_row + wm0 + mi * 16 + g, col = tile_col + wn0 + ni * 8 + 2 * t;
            store_pair(c, row, col, n, acc[mi][ni][0], acc[mi][ni][1]);
            store_pair(c, row + 8, col, n, acc[mi][ni][2], acc[mi][ni][3]);
        }
}
