// v27: v16's kernel (v15's: 176-row K/V tiles multicast to a cluster of two, one CTA per 128-row Q
// tile, two consumer warpgroups taking turns) with a running max that moves only when a row grew by
// more than 2^8 (attn_sm90_stale_max.cuh; FlashAttention-4's conditional rescaling). v15's softmax
// moves every row's max to the tile's new maximum on every step and rescales l and the 64 O
// accumulators by alpha = exp2(m_old - m_new): two ex2 and 66 multiplies a thread a step, with the
// multiplies of O between the wait for the P.V and the packing of the next P. Here the warp votes,
// once its row maxima are reduced, on whether any of its 16 rows exceeds its running max by more than
// RESCALE_LOG2 (8, in the log2 units of the scaled scores); only then do the maxima move and l and O
// get rescaled. Otherwise the tile's exp2 values are taken against the old max and are at most 2^8,
// which fp16 P and the fp32 sums and products hold with their usual precision; the result is the
// same softmax, normalised by the same l at the end. On the cases' random scores the maxima settle
// in the first tiles, so almost every step skips the rescale. Step 0 keeps v15's softmax (O is zero
// there). Everything else is v15's kernel (attn_sm90_kv176_kernel.cuh), built through its step hook.

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_stale_max.cuh"

#define KV176_STEP consumer_step_stale
#include "attn_sm90_kv176_kernel.cuh"
