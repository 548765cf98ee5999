"""The likelihood families scored on their own synthetic tasks against a Gaussian head
(:mod:`.family_scores`)."""
