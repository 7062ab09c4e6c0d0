// v28: v27 (v16's kernel with a running max that moves only when a row outgrew it by 2^8) with the
// skip decided per row and without a branch inside the softmax (attn_sm90_stale_rows.cuh). v27's
// machine code shows what its one vote cost: v15's schedule starts the exp2 values of a thread's
// first row while the max of its second row is still being reduced,
// and releases K_j as soon as S_j has landed; v27's vote covers both rows and ends a block, so every
// exp2 value waited for both maxima and the release came after the vote. Here each row votes as soon
// as its own max is reduced, its max moves by a select (alpha is exactly 1 when it stays, so l is
// rescaled by a multiply every step, as in v15), and the only branch left is the rescale of O, after
// P is packed. Everything else is v27's, which is v15's kernel built through its step hook.

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_stale_rows.cuh"

#define KV176_STEP consumer_step_stale_rows
#include "attn_sm90_kv176_kernel.cuh"
