// v08: v07 (producer warpgroup + two wgmma consumer warpgroups taking turns on named
// barriers, sm_90a, fp16, D = 128, non-causal) with FlashAttention-3's intra-warpgroup
// overlap: each turn issues the next tile's S = Q K^T together with the previous tile's
// O += P V, and the softmax of S runs while P V is still on the tensor cores.
//
// This is v07's PIPELINE 1 schedule. v07 could not use it: ptxas serialised every wgmma
// (C7512 "insufficient register resources") and spilled 232 B. The cause was not the register
// budget: it was the `trap` that v06/v07's mbarrier waits execute after a 2 s timeout. With a
// trap in the consumers' code ptxas allocates their wgmma pipeline within the 168 registers of
// the kernel's entry, ignoring the 240 that setmaxnreg gives them; without it the same loop
// builds with no spills and no serialisation, its registers within R0-R183 (nvcc 13.0 and
// ptxas 12.8 alike). So the hang check here faults with a store to address 0 instead (see
// mbar_wait): a deadlock still becomes a launch error.
//
// Consumer w runs one step per kv tile j = 0..n (n tiles, n + 1 steps):
//
//     wait for K_j / V_{j-1} to be in shared memory (mbarriers, outside the turn)
//     bar.sync   TURN[w]                 my turn
//     issue S_j = Q K_j^T                (j < n; wgmma SS, commit group)
//     issue O += P_{j-1} V_{j-1}         (j > 0; wgmma RS, A = P_{j-1} in registers, commit)
//     bar.arrive TURN[1-w]               the other warpgroup may issue its products now
//     wait S_j (wait_group 1 while a P V group is in flight), release K_j,
//         online softmax S_j -> row max / sums, alpha_j                    (j < n)
//     wait_group 0 (P_{j-1} V_{j-1} landed), release V_{j-1},
//         O *= alpha_j, P_j = fp16(exp2(...)) packed into A fragments      (j < n)
//
// Step 0 and step n are peeled off the loop so that no wgmma sits under a condition. O is
// rescaled only after P_{j-1} V_{j-1} landed (the in-flight wgmma owns O's registers) and P_j
// overwrites P_{j-1} only then too. Registers: S_j (64 f32) + O (64 f32) + P_{j-1} (32 b32)
// + softmax state live at once.
//
// Barrier counting (a named barrier completes a phase when 256 threads arrived: the 128 of
// the owner's bar.sync plus the 128 of the other's bar.arrive; an arrive runs at most one
// phase ahead of the matching sync, which the alternation guarantees):
//   TURN[0]: consumer 0 syncs once per step = n + 1 times; consumer 1 arrives once before its
//            loop ("consumer 0 goes first") and after each of its steps but the last: n + 1.
//   TURN[1]: consumer 1 syncs n + 1 times; consumer 0 arrives after each of its n + 1 steps.
// No barrier is left with a partial arrival count when the CTA exits. Named barriers cannot
// time out: HANG_CHECK covers only the mbarrier waits.
//
// Everything else (shared-memory layout, descriptors, fragment maps, the producer) is v06's;
// see v06_wgmma.cu for the PTX facts they rely on. The kernel is in attn_sm90_overlap.cuh, whose
// hooks let v10-v14 change one part of it each; v08 takes every default.

#define OVL_KERNEL attn_fwd_overlap
#include "attn_sm90_overlap.cuh"
