// v24: v16's kernel (v15's: 176-row K/V tiles multicast to a cluster of two, one CTA per 128-row Q
// tile, two consumer warpgroups taking turns) with the softmax's row sums taken from the packed P
// (attn_sm90_psum.cuh). v15's softmax adds every exp2 value into an fp32 partial sum, an FADD per
// score (90 a step in its machine code); here the sums come from the fp16 P that pack_p already
// made, the values the P.V product multiplies, by a pairwise f16x2 tree per row at the top of the
// next step, where the warpgroup waits for its tiles and its turn: 22 packed adds per row instead
// of 44 scalar ones, and the last tile's sums after the last P.V. Everything else is v15's kernel
// (attn_sm90_kv176_kernel.cuh), built through its three hooks.

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_psum.cuh"

#define KV176_SOFTMAX_FIRST softmax_tile_no_sums
#define KV176_STEP consumer_step_psum
#define KV176_AFTER_LAST(p, l0, l1) add_p_sums(p, l0, l1)
#include "attn_sm90_kv176_kernel.cuh"
