// v11: fp16 on Hopper's warpgroup tensor-core product (wgmma, asynchronous, operands read straight
// from shared memory) fed by TMA, with warpgroups specialised: one produces, two consume.
//
// Block: a BM x BN = 128 x 256 tile of C, 384 threads = three warpgroups. Warpgroup 2 is the
// producer: one lane issues, for slice k (BK = 64 deep), one TMA box of A (128 rows x 64 columns)
// and four of B (64 rows x 64 columns each, the tile's four 64-column blocks) into ring slot
// k % STAGES, after an arrive.expect_tx of the slot's 48 KB on its "full" mbarrier; before reusing a
// slot it waits on the slot's "empty" mbarrier. Warpgroups 0 and 1 consume: warpgroup w owns rows
// 64w .. 64w + 63 of the tile and all 256 columns (128 f32 accumulators a thread); for each slice
// it waits on "full", issues four m64n256k16 products (one per 16 of k), commits them as a group,
// waits until only this group is in flight (the previous slice's products are done) and releases
// the previous slot (one arrive per warp, eight per slot). So the tensor cores always have a
// slice queued while the TMA engine fills the slots ahead. setmaxnreg moves registers from the
// producer (40) to the consumers (232): 40 + 2 x 232 = 504 = 3 x 168, the budget of 384 threads.
//
// Layouts (128-byte swizzle, the TMA boxes' and the descriptors'): A's slot is 128 rows of 128 B
// (64 halves of k), K-major: SBO 1024 B between 8-row groups, LBO unused, a 16-deep step +32 B on
// the start address, warpgroup w's rows at +w x 8192 B. B's slot is four 64-column blocks of 64 k
// rows x 128 B, N-major (imm-trans-b 1): LBO = 8192 B between the 64-column blocks, SBO = 1024 B
// between 8-row k groups, a 16-deep step +2048 B.
//
// Edges: TMA zero-fills what lies outside the matrix, so partial tiles and a k range past n need
// no code; the expected bytes are the full boxes' either way. TMA needs 16-byte row strides
// (n % 8 == 0): the host pads other sizes (v11_wgmma_tma.py). C is stored straight from the
// accumulators as f16 pairs, guarded by row and column.
//
// fp16 only: the tensor cores' fp32 path is TF32, another precision. The ring, the producer's and
// the consumers' loops and the epilogue are matmul_wgmma.cuh's; the kernel here puts them together.

#include "matmul_wgmma.cuh"

// B's slice: its four 64-column blocks, one box each
struct FourBoxes {
    const TmaDesc* tm_b;
    int tile_col;
    __device__ __forceinline__ void operator()(u32 dst, int k, u32 bar) const
    {
#pragma unroll
        for (int j = 0; j < 4; ++j) tma_load_box_2d(dst + j * B_BLOCK_BYTES, tm_b, tile_col + 64 * j, k * BK, bar);
    }
};

struct ReleaseLocal {
    __device__ __forceinline__ void operator()(u32 bar) const { mbar_arrive(bar); }
};

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_wgmma_tma(const __grid_constant__ TmaDesc tm_a, const __grid_constant__ TmaDesc tm_b, elem_t* __restrict__ c,
                 int n)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const Ring ring = ring_at(smem_raw);
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const int slices = (n + BK - 1) / BK;

    if (threadIdx.x == 0) init_ring(ring, CONSUMER_WARPS);
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x % 128 >= 32) return;  // one warp waits, its lane 0 issues
        if ((threadIdx.x & 31) == 0) {
            prefetch_tensor_map(&tm_a);
            prefetch_tensor_map(&tm_b);
        }
        produce_slices(ring, &tm_a, tile_row, slices, FourBoxes{&tm_b, tile_col});
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    consume_slices(acc, ring, wg, lane, slices, ReleaseLocal{});
    store_acc(c, acc, tile_row, tile_col, wg, warp, lane, n);
}
