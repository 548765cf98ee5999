"""The papers' tables: the model × column tables built cell by cell (:mod:`.build`, with its
specs, cells and report beside it), KR-1 at the exact protocol (:mod:`.kr_exact`), TE-1
(:mod:`.te1`), the TE ablation (:mod:`.te_ablation`) and the thesis experiments
(:mod:`.thesis`)."""
