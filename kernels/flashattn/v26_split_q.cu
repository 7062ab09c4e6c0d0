// v26: v19's persistent kernel (the next unit's Q loaded ahead by a Q warp, the K/V lane running
// on across units) on v15's 176-row K/V tiles, which v19 could not keep: two 32 KB Q tiles beside
// a two-stage ring of 176-row tiles need 241 KB. Here Q is held per consumer warpgroup. A piece is
// one warpgroup's 64 query rows of a unit (16 KB); there are three slots, and piece k (k = 2 * unit
// + warpgroup, the order the consumers need them) goes into slot k % 3 as soon as piece k - 3 has
// left it, that is once its warpgroup's last S of that unit has landed. So while both warpgroups
// work on unit u, the third slot already holds consumer 0's piece of unit u + 1; consumer 1's piece
// of u + 1 goes into consumer 0's slot when consumer 0's last S of u lands, about one and a half
// steps before consumer 1 needs it. Q 48 KB + the ring 176 KB + barriers: 225 KB.
//
// A piece's two column halves are 8 KB apart (a 128-row tile's are 16 KB apart): S is issued from a
// piece by v15's issue_qk and issue_step with that distance (their Q_HALF); finish_step, the softmax
// and the last P.V are v15's too. The Q map's box is 64 rows.
//
// There is no room left for v21's 32 KB of staging buffers: the epilogue is v17's, f16x2 pairs
// stored straight from the accumulators (STORE_O, store_o_pairs).
//
// The kernel is in attn_sm90_split_q.cuh.

#include "attn_sm90_split_q.cuh"
