// v17: v15 made persistent. One cluster of two CTAs per pair of SMs stays resident and loops over
// work units; the producer lane loads the next unit's Q and K/V while the consumers finish the
// current one and write its O.
//
// Everything per step is v15's, from attn_sm90_kv176.cuh (the cluster multicast of K/V halves,
// the 176-row tiles zero-filled past the end by TMA, the two consumer warpgroups taking turns,
// the softmax, the masked last step): this file adds only the persistent kernel, which is in
// attn_sm90_persistent.cuh (v18 builds on it).
//
// Work: unit w is a pair of neighbouring 128-row Q blocks of one (batch, head) (with CLUSTER 1, one
// Q block); cluster c takes units c, c + #clusters, ... in order, so the clusters in flight share a
// few heads' K/V in L2 as v15's grid did. Both CTAs of a cluster walk the same units (the K/V they
// share by multicast belong to one head), CTA rank r taking Q block 2p + r of pair p.
//
// Counting across units: the K/V ring's slot and phase come from one counter over all of a CTA's kv
// tiles (the producer's and the consumers' agree: every unit of one sequence length has the same
// number of tiles); Q has a full and an empty mbarrier, the empty one released by each consumer warp
// once its last S = Q K^T of the unit has landed (at the start of its last step), so the producer
// can load the next Q while the consumers do their last P V and the epilogue; the turns between the
// consumer warpgroups run on across units: consumer 1 skips its arrive only on its very last step.

#define PERSIST_KERNEL attn_fwd_persistent
#include "attn_sm90_persistent.cuh"
