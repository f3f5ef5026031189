"""Checks that belong to the Yun construction: Lemma 4.2's P1-P4 over the extended grid
(:mod:`.lemmas`), the value map against ``f_bar`` and the quantizer at its breakpoints
(:mod:`.value`), and the ``d_p`` decomposition of the softened network (:mod:`.dp`)."""
