// v30: v28 with the scores from e4m3. A pass of its own rounds Q and K to e4m3 (round_qk_e4m3), and
// v15's kernel then reads the Q tile and the K tiles in e4m3 (half the bytes: one 128-byte swizzle
// row a row) and issues S = Q K^T as four m64n176k32 e4m3 products instead of eight m64n176k16 f16
// ones, at twice the tensor rate. P, V and the P.V product stay f16, the softmax and O f32, and
// the step is v28's (the stale running max). In a cluster of two each CTA copies half of a K tile's
// rows to both. Everything else (the grid, the turns, the V ring, the epilogue) is v28's.

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_e4m3.cuh"

#define KV176_Q_BYTES Q8_TILE_BYTES
#define KV176_LOAD_Q load_q_e4m3
#define KV176_PRODUCE_K produce_k_e4m3
#define KV176_ISSUE_QK issue_qk_e4m3
#define KV176_STEP consumer_step_e4m3
#include "attn_sm90_kv176_kernel.cuh"
