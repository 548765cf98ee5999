"""The Bayesian-optimisation benchmark: its config and cells (:mod:`.benchmark`), the command
that runs it (:mod:`.run`) and its report (:mod:`.report`)."""
