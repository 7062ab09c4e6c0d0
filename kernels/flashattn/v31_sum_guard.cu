// v31: v28 (v16's kernel with a running max that moves only when a row outgrew it by 2^8) without the
// tile's row maxima. v28 reduces each row's 176 scores to their max (88 FMNMX a thread, two shuffles
// a row) before any exp2 value can start, only to learn, on almost every step, that the max stays.
// Here the exp2 values are taken against the running max at once, and the row sums that the softmax
// adds anyway are the guard: a partial sum at most 2^8 means each value under it is too. When some
// lane's sum passed it, the warp takes the rare path: the row maxima of the exp2 values, the max moved
// by their log2, the values and sums rescaled (attn_sm90_sum_guard.cuh). Step 0 keeps v15's softmax,
// which sets the first max. Everything else is v28's, which is v15's kernel built through its step hook.

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_sum_guard.cuh"

#define KV176_STEP consumer_step_sum_guard
#include "attn_sm90_kv176_kernel.cuh"
