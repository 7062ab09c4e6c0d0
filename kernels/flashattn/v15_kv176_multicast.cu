// v15: v14 (a TMA producer lane multicasting K/V halves to a cluster of two CTAs; two wgmma
// consumer warpgroups taking turns and overlapping their softmax with their own P.V; sm_90a,
// fp16, D = 128, non-causal) with v12's kv tile width: BLOCK_N = 176 rows of K and V per step.
//
// v12 tried 176-row tiles on v08, whose cp.async producer paid for the partial last tile with
// a zero-filling slow path; here the copy engine handles it. K and V are described by 3-D
// tensor maps [B*H, S, 128] (box 1 x BLOCK_N x 64), so a box that runs past the end of a head's
// sequence is zero-filled by TMA (and its bytes still count toward the barrier's transaction),
// and the consumers set the scores of those columns to -inf (mask_tail, v12's) before the
// softmax. Per step a consumer warpgroup computes S = Q K^T as eight wgmma m64n176k16 (88 f32
// accumulators per thread) and O += P V as eleven m64n128k16 with P in 44 registers.
// Shared memory: Q 32 KB + 2 stages x (44 + 44) KB; a third stage does not fit.
// BLOCK_N 128 builds v14's geometry from this source (the sweep compares the two).
//
// Everything else is v14's: the cluster protocol (empty barriers counting the consumer warps of
// both CTAs, local + remote releases at CTA scope, cluster barriers after initialisation and at
// the end), the schedule and turn counting (v08), the layout and PTX facts (v06).
//
// Structure: the machinery (tile copies, the ring's barriers, the consumer steps) is
// attn_sm90_kv176.cuh's, the set-up attn_sm90_cta.cuh's and the cluster's barriers
// attn_sm90_cluster.cuh's; the kernel (one CTA per Q tile, the producer lane's loop and the
// consumers' steps, the masked last step apart) is attn_sm90_kv176_kernel.cuh's, built here with
// its defaults.

#include "attn_sm90_kv176_kernel.cuh"
