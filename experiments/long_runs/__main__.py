"""``python -m experiments.long_runs`` runs :mod:`.driver` (the command the zoo cards record as
their ``train_command``)."""

from experiments.long_runs.driver import main

main()
