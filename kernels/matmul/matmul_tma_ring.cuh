// v24's kernel body: v17's lanes and step loop (matmul_prefetch.cuh's WarpLanes: a lane's 16 x 8
// outputs, step k + 1's values read during step k's FMAs) fed by TMA from a transposed copy of A,
// through a ring of STAGES shared-memory stages guarded by mbarriers, which warp 0 keeps full.
//
// - A transposed once (transpose_into, a kernel of its own that the host launches first): At[k][m]
//   = A[m][k]. A slice of At is then a plain 2-D box, S rows of k by BM columns of m, and lands in
//   shared memory k-major, the layout v17's lanes read (sA[k][m]), with no per-element store.
// - A stage holds one S-deep slice: sA[S][BM], then sB[S][BN], unpadded and unswizzled (TMA writes
//   them; a lane's float4 reads of a row touch 8 distinct float4s a warp, one wavefront, as in v17).
// - Every warp (v17's tile of warps) consumes: for each slice, wait until its stage is full, run its
//   S steps, and after the last read of the stage release it (one arrive a warp, after __syncwarp).
//   No CTA-wide barrier in the loop: a warp runs ahead of the others as far as the ring allows, and
//   no warp waits on a global load or stores to shared memory.
// - Warp 0 also produces (a ninth warp would cap every thread at 168 registers: a scheduler's
//   quarter of the register file holds three warps of 170 at most): its lane 0 arms a stage's full
//   barrier with the stage's bytes and issues two boxes, At's and B's; it refills a stage one slice
//   after releasing it, once every warp has released it. Out-of-range rows and columns are
//   zero-filled by TMA, so the last partial slice needs no guard.
// - C is stored as v17 stores it (WarpLanes::store, float4 stores, guarded at the edges).
// - The step loop (ring_steps) and the tile (ring_tile_with) take the refill policy as a class: v24's
//   EmptyBarrierRelease here, v25's LastOutRelease in matmul_tma_ring_last.cuh. v24 ran first with its
//   own copy of the loop; sharing it renumbered two registers of its machine code, so it was timed again.
//
// fp32 only (the TMA boxes and the transposition are of 4-byte elements). The host passes n % 4 == 0
// (TMA's 16-byte row strides), padding other sizes.
//
// Reads BM, BN, WM, WN, S and STAGES, defined by the version before including it.
#pragma once

#if ELEM_FP16
#error "matmul_tma_ring.cuh: fp32 only (build with ELEM_FP16=0)"
#endif

#include "matmul_prefetch.cuh"

#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"

#define RING_WARPS (THREADS / 32)  // matmul_prefetch.cuh's THREADS: a warp a WM x WN region, every one consuming
#define RA_FLOATS (S * BM)  // sA of a stage
#define RING_STAGE_FLOATS (S * BM + S * BN)
#define RING_STAGE_BYTES (RING_STAGE_FLOATS * 4)

static_assert(STAGES >= 2, "a ring of two stages or more");
static_assert(S % 2 == 0, "the register sets alternate within a slice: step 0 of the next slice uses set 0");
static_assert(BM <= 256 && BN <= 256 && S <= 256, "a TMA box is at most 256 elements a side");
static_assert(RA_FLOATS * 4 % 128 == 0 && RING_STAGE_BYTES % 128 == 0, "TMA's shared-memory boxes are 128-byte aligned");

// the dynamic shared memory of one CTA: the stages, then a full and an empty barrier a stage
#define RING_SMEM_BYTES (STAGES * RING_STAGE_BYTES + 16 * STAGES)

// --------------------------------------------------------------- the transposition of A (a kernel of its own)
#define TR_TILE 32
#define TR_ROWS 8  // a block of 32 x 8 threads moves a 32 x 32 tile, four elements a thread

// out[j][i] = a[i][j] for the n x n matrix a; out's rows are ld floats apart (ld >= n). Reads and
// writes whole 128-byte rows of a tile; the tile passes through shared memory padded to 33 columns.
__device__ __forceinline__ void transpose_into(const float* __restrict__ a, float* __restrict__ out, int n, int ld)
{
    __shared__ float tile[TR_TILE][TR_TILE + 1];
    const int i0 = blockIdx.y * TR_TILE, j0 = blockIdx.x * TR_TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int r = ty; r < TR_TILE; r += TR_ROWS) {
        const int i = i0 + r, j = j0 + tx;
        if (i < n && j < n) tile[r][tx] = a[at(i, j, n)];
    }
    __syncthreads();
#pragma unroll
    for (int r = ty; r < TR_TILE; r += TR_ROWS) {
        const int j = j0 + r, i = i0 + tx;
        if (i < n && j < n) out[(u64)j * (u64)ld + (u64)i] = tile[tx][r];
    }
}

// the transposition as the kernel the host launches first (every version on this ring builds it)
extern "C" __global__ void __launch_bounds__(TR_TILE * TR_ROWS)
matmul_transpose_a(const float* __restrict__ a, float* __restrict__ at, int n, int ld)
{
    transpose_into(a, at, n, ld);
}

// --------------------------------------------------------------- the ring

// the lane's M values of A and N of B at step k of the stage at `stage` (WarpLanes::load_values' reads,
// written out here: built through that member, the loop compiles to other machine code)
template <int M, int N>
__device__ __forceinline__ void ring_values(const float* stage, const WarpLanes& lanes, int k, float (&av)[M], float (&bv)[N])
{
    const float* sa = stage + k * BM + lanes.row0;
#pragma unroll
    for (int mi = 0; mi < M / 4; ++mi) put4(av, mi * 4, ld_float4(sa + mi * 32));
    const float* sb = stage + RA_FLOATS + k * BN + lanes.col0;
#pragma unroll
    for (int ni = 0; ni < N / 4; ++ni) put4(bv, ni * 4, ld_float4(sb + ni * 16));
}

// The copies of one slice: lane 0 of warp 0 arms the stage's full barrier with its bytes and issues
// two boxes, At's (S rows of k by BM columns of m) and B's (S by BN).
__device__ __forceinline__ void ring_fill(u32 base, u32 full, int st, const TmaDesc* tm_at, const TmaDesc* tm_b,
                                          int tile_row, int tile_col, int slice)
{
    const u32 bar = full + 8 * st;
    const u32 dst = base + st * RING_STAGE_BYTES;
    mbar_arrive_expect_tx(bar, RING_STAGE_BYTES);
    tma_load_box_2d(dst, tm_at, tile_row, slice * S, bar);
    tma_load_box_2d(dst + RA_FLOATS * 4, tm_b, tile_col, slice * S, bar);
}

// Where a stage's refill comes from: the copies of one slice into it, and what a version does when a
// warp has read the last values of a stage (Release, below).
struct RingCopies {
    u32 base, full;  // the stages; their full barriers
    const TmaDesc *tm_at, *tm_b;
    int tile_row, tile_col, slices;

    __device__ __forceinline__ void fill(int st, int slice) const
    {
        ring_fill(base, full, st, tm_at, tm_b, tile_row, tile_col, slice);
    }
};

// The ring's step loop, the same for every refill policy: a warp's sums over slices [0, slices) into
// acc, slice j read out of stage j % STAGES once its full barrier's phase (j / STAGES) & 1 completes.
// At the last step of slice s, with every value of stage st in the warp's registers (after
// __syncwarp), release(s, st) hands the stage back as the version does.
template <int M, int N, class Release>
__device__ __forceinline__ void ring_steps(const float* smem, u32 full, int slices, const WarpLanes& lanes,
                                           float (&acc)[M][N], Release& release)
{
    float av[2][M], bv[2][N];  // step k's values and step k + 1's
    int st = 0;  // the stage of slice s
    u32 phase = 0;
    const float* stage = smem;
    mbar_wait(full, 0);
    ring_values(stage, lanes, 0, av[0], bv[0]);
    for (int s = 0; s < slices; ++s) {
#pragma unroll
        for (int k = 0; k < S; ++k) {
            if (k == S - 1) {
                // every value of this stage is in registers: release it, and start on the next
                __syncwarp();
                release(s, st);
                if (++st == STAGES) {
                    st = 0;
                    phase ^= 1u;
                }
                stage = smem + st * RING_STAGE_FLOATS;
                if (s + 1 < slices) {
                    mbar_wait(full + 8 * st, phase);
                    ring_values(stage, lanes, 0, av[0], bv[0]);
                }
            } else {
                ring_values(stage, lanes, k + 1, av[(k + 1) & 1], bv[(k + 1) & 1]);
            }
            outer_product(acc, av[k & 1], bv[k & 1]);
        }
    }
}

// v24's release: every warp arrives on the stage's empty barrier; warp 0 is also the producer and, at
// the end of slice s >= 1, refills slice s - 1's stage with slice s - 1 + STAGES once every warp has
// released it (one slice earlier than the one it has just released itself, so the wait is for warps a
// slice behind it, not for the slowest warp of the slice it is on). The empty barriers follow the full
// ones, 8 bytes a stage.
struct EmptyBarrierRelease {
    RingCopies copies;
    u32 empty;
    bool leader, producer;  // lane 0; warp 0
    int rst = 0;  // the stage of slice s - 1, which warp 0 refills
    u32 rphase = 0;

    static __device__ __forceinline__ void init(u32 second, int st) { mbar_init(second + 8 * st, RING_WARPS); }

    __device__ __forceinline__ EmptyBarrierRelease(const RingCopies& c, u32 second)
        : copies(c), empty(second), leader((threadIdx.x & 31) == 0), producer(threadIdx.x < 32) {}

    __device__ __forceinline__ void operator()(int s, int st)
    {
        if (leader) mbar_arrive(empty + 8 * st);
        if (producer && s >= 1) {
            if (s - 1 + STAGES < copies.slices) {
                // every warp's reads of the stage happen before its arrive, which this wait acquires:
                // the mbarrier hand-off that TMA pipelines rely on before they copy into a slot
                mbar_wait(empty + 8 * rst, rphase);
                if (leader) copies.fill(rst, s - 1 + STAGES);
            }
            if (++rst == STAGES) {
                rst = 0;
                rphase ^= 1u;
            }
        }
    }
};

// The CTA's BM x BN tile of C = A B from At (A transposed) and B, both as tensor maps of S x BM and
// S x BN boxes (blockIdx.x along the columns, blockIdx.y along the rows), n % 4 == 0, with the refill
// policy Release: the stages, then a full barrier a stage, then Release's word a stage at `second`
// (Release::init sets it up; RING_SMEM_BYTES leaves 8 bytes a stage).
template <class Release>
__device__ __forceinline__ void ring_tile_with(const TmaDesc* tm_at, const TmaDesc* tm_b, float* __restrict__ c, int n)
{
    extern __shared__ __align__(128) float smem[];
    const u32 base = smem_u32(smem);
    const u32 full = base + STAGES * RING_STAGE_BYTES, second = full + 8 * STAGES;
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const int slices = (n + S - 1) / S;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int st = 0; st < STAGES; ++st) {
            mbar_init(full + 8 * st, 1);
            Release::init(second, st);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        prefetch_tensor_map(tm_at);
        prefetch_tensor_map(tm_b);
    }
    __syncthreads();
    const RingCopies copies{base, full, tm_at, tm_b, tile_row, tile_col, slices};
    if (threadIdx.x == 0) {
        for (int j = 0; j < STAGES && j < slices; ++j) copies.fill(j, j);
    }

    const WarpLanes lanes = warp_lanes(threadIdx.x);
    float acc[WarpLanes::M][WarpLanes::N] = {};
    Release release(copies, second);
    ring_steps(smem, full, slices, lanes, acc, release);
    lanes.store(c, acc, tile_row, tile_col, n, true);
}

// v24's tile: warp 0 refills through the empty barriers
__device__ __forceinline__ void tma_ring_tile(const TmaDesc* tm_at, const TmaDesc* tm_b, float* __restrict__ c, int n)
{
    ring_tile_with<EmptyBarrierRelease>(tm_at, tm_b, c, n);
}
