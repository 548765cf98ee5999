"""The Bayes reference: how close to the GP oracle any zoo model can get (:mod:`.reference`),
its cached densities (:mod:`.cache`) and its report (:mod:`.report`)."""
