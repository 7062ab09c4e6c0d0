// The overlapped schedule of v06's INTRA_WG_OVERLAP and v07's PIPELINE 1, as statements: this file
// is included inside a consumer's code (no include guard), which it reads the names of: sc and p
// (declared here), o, m0, m1, l0, l1, desc_q, desc_k, desc_v, bar_full_k, bar_full_v, bar_empty_k,
// bar_empty_v, lane, n_tiles, scale_log2. As a function taking the softmax state by reference it
// compiled to other PTX (the compiler numbered the state's registers in another order), which the
// versions' records may not: written once here, it is the same code in both kernels.
//
// FlashAttention-3's overlap: S_j = Q K^T of tile j is issued with O += P_{j-1} V_{j-1} in one
// turn, and the softmax of S_j runs while P V is still in flight; O is rescaled and P_j packed only
// after that product landed, so no register an in-flight wgmma reads is written. Step 0 (S_0 only)
// and step n (the last P V only) are peeled off the loop so that no wgmma sits under a condition.
//
// Hooks, defined by the including file where it runs this schedule (v06: empty; v07: its
// named-barrier turns); where it defines none (the other schedule), this file compiles to nothing, so
// every build reads it, as a record's source closure says:
//   OVERLAP_TAKE_TURN()       before a step's wgmma are issued;
//   OVERLAP_PASS_TURN()       after them, on every step but the last;
//   OVERLAP_PASS_LAST_TURN()  after the last step's (v07: consumer 0 only, the turn counting).
//
// Every wait traps (mbar_wait_trap), as v06's. Append-only, as the headers.
#ifdef OVERLAP_TAKE_TURN
    float sc[64];
    u32 p[32];
    {
        // ---- step 0: S_0 only
        mbar_wait_trap(bar_full_k, 0);
        proxy_fence_async();
        OVERLAP_TAKE_TURN();
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k);
        wgmma_commit();
        OVERLAP_PASS_TURN();  // n >= 1, so step 0 is never consumer 1's last step
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k);
        float alpha0, alpha1;
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);  // O is still 0: no rescale
        pack_p(sc, p, 1.f);
    }
    for (int j = 1; j < n_tiles; ++j) {
        // ---- step j: S_j and O += P_{j-1} V_{j-1} in one turn
        const int s = j % STAGES, sp = (j - 1) % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u, phase_p = (u32)((j - 1) / STAGES) & 1u;
        mbar_wait_trap(bar_full_k + 8 * s, phase);
        proxy_fence_async();
        mbar_wait_trap(bar_full_v + 8 * sp, phase_p);
        proxy_fence_async();
        fence_acc(o);
        fence_frag(p);
        fence_acc(sc);
        OVERLAP_TAKE_TURN();
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));      // group: S_j
        wgmma_commit();
        issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));           // group: O += P_{j-1} V_{j-1}
        wgmma_commit();
        OVERLAP_PASS_TURN();  // j < n: not the last step
        wgmma_wait<1>();          // S_j complete, P.V may still run
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k + 8 * s);
        float alpha0, alpha1;
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
        wgmma_wait<0>();          // P_{j-1} V_{j-1} landed: O and P are ours again
        fence_acc(o);
        fence_frag(p);
        if (lane == 0) mbar_arrive(bar_empty_v + 8 * sp);
        rescale_o(o, alpha0, alpha1);
        pack_p(sc, p, 1.f);
    }
    {
        // ---- step n: O += P_{n-1} V_{n-1} only (v07: consumer 1's last step, no arrive)
        const int sp = (n_tiles - 1) % STAGES;
        mbar_wait_trap(bar_full_v + 8 * sp, (u32)((n_tiles - 1) / STAGES) & 1u);
        proxy_fence_async();
        fence_acc(o);
        fence_frag(p);
        OVERLAP_TAKE_TURN();
        wgmma_fence();
        issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));
        wgmma_commit();
        OVERLAP_PASS_LAST_TURN();
        wgmma_wait<0>();
        fence_acc(o);
        fence_frag(p);
        if (lane == 0) mbar_arrive(bar_empty_v + 8 * sp);
    }
#endif  // OVERLAP_TAKE_TURN
