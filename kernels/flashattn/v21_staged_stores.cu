// v21: v19 with the O block staged through shared memory. v20 made the stores 16 bytes wide by
// exchanging pairs within each quad of lanes, but the exchange costs about 450 instructions a
// thread (200 of them selects) and the stores still cover 64 bytes per row. Here each consumer
// warpgroup writes its 64 x 128 fp16 block into a 16 KB staging buffer of its own with eight
// stmatrix.x4 per thread (four 8 x 8 matrices per instruction, straight from the accumulator
// layout), waits on a named barrier of its 128 threads, and copies the block out row by row: each
// thread 8 ld.shared.v4 and 8 st.global.v4, a warp instruction covering two whole 256-byte rows.
// The buffer's 16-byte chunks are XOR-swizzled by row (chunk c of row r at c ^ (r % 8)), so
// neither the stmatrix rows (256 bytes apart) nor the row-wise reads conflict on banks.
//
// Shared memory: v19's 193 KB, the barrier block padded to 1 KB, and 2 x 16 KB of staging
// (227 KB in all with 128-row tiles and two Q buffers). Everything else is v19's (its kernel,
// attn_sm90_double_q.cuh): only the STORE_O hook changes (attn_sm90_staged_store.cuh); the buffer is
// found from the same layout macros as v19's tiles.

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void store_o_staged(const float (&o)[64], float inv0, float inv1, u16* o0, int lane);

#define STORE_O store_o_staged
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
