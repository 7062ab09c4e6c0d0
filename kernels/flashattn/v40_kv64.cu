// v40: v36 with 64-row K/V tiles in a four-stage ring (BLOCK_N 64, STAGES 4: the same 128 KB of shared
// memory as two stages of 128-row tiles).
//
// v39's trace put a unit boundary at about a step longer than its work, whatever the turns: the two
// consumers share each K/V tile of the ring, so they reach a boundary together and do their own serial work
// there (the first softmax, staging O) at the same time. Letting consumer 1 run a tile behind consumer 0
// needs a ring that holds one tile more than today's two stages of 128 rows; with 64-row tiles four stages
// fit the same shared memory. This version is that ring alone, both consumers still in step: it measures
// what the shorter steps cost (twice the turns, barrier waits and row reductions per key) before a kernel
// depends on them.
//
// The build is v36's (attn_sm90_store_tma_kernel.cuh) with BLOCK_N 64 and STAGES 4 in the configuration:
// each step's S is m64n64k16 products (wgmma_qk's S = 32 case, common/sm90/wgmma_m64n64.cuh), its P.V four
// k16 chunks instead of eight; everything else reads BLOCK_N and STAGES.

#include "attn_sm90_store_tma_kernel.cuh"
