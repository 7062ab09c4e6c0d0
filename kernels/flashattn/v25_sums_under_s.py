"""v24 with the row sums of the previous tile's P added while the step's S runs, not at the step's top.

Structure: v24's kernel (``v24_packed_row_sums.cu``: v15's kernel built through its hooks with
``attn_sm90_psum.cuh``) and launch, built with ``PSUM_AT=1``: a step issues S_j and P_{j-1}·V_{j-1},
passes the turn, then runs the f16x2 tree over P_{j-1}'s registers (which the P·V in flight only reads)
while it waits for S_j, and adds the sums into l before the softmax rescales it. That is the source's
order: in the machine code ptxas moves the tree past the wait for S_j, into the softmax's max reduction.

Hypothesis: v24 raised the median SM clock over the benchmark by 3 % and still lost 2.5 % to v16,
because its tree of dependent adds sat at the top of the step, ahead of the wait for the tiles and the
turn, where every cycle it takes delays the warpgroup's turn. After the products are issued the
warpgroup only waits for S_j, for longer than the tree takes: there the tree costs no cycle on the
critical path, and v24's higher clock should show as time. Predicted: the benchmark 2–3 % faster than
v16.
"""

from __future__ import annotations

import v24_packed_row_sums as v24

SOURCE = v24.SOURCE
CONFIG: dict[str, int] = {**v24.CONFIG, "PSUM_AT": 1}
make_kernel = v24.make_kernel
custom_kernel = make_kernel(CONFIG)
