// v36: v35 with each staged O block written out by two TMA stores instead of a warp's copy loop.
//
// v35's trace on test_small (tools/trace_probe.py, the store warps' stamps) put the consumers' units
// shorter than v34's, but the CTA ended as late: its store warps finished their last copies well after
// consumer 0's exit. A store warp's loop has one 16-byte load of shared memory in flight at a time (the
// producer warpgroup has 24 registers), and the last block of consumer 1 waits for it at the end of the
// launch.
//
// Here the consumer stages its block as two boxes of 64 rows x 64 columns, each in the tensor map's
// 128-byte swizzle (stage_at_boxes: chunk c of row r at c ^ (r % 8) within 128-byte rows, so the eight
// rows of a stmatrix matrix still fall on eight different chunks), fences its writes for the async proxy
// and arrives; lane 0 of the store warp issues one TMA store a box (O's tensor map is the kernel's extra
// parameter, made per output buffer by the host) and waits only until they have read the buffer before
// freeing it. attn_sm90_store_warps.cuh holds both halves (store_o_handoff_boxes, store_warps_tma); the
// kernel is v19's with its DQ_EXTRA_PARAMS and DQ_STORE_WARPS hooks, built by attn_sm90_store_tma_kernel.cuh;
// everything else is v35's.

#include "attn_sm90_store_tma_kernel.cuh"
