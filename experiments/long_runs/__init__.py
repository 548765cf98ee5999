"""The project's long training runs: the driver (:mod:`.driver`: ``status``, ``advance``,
``tidy``), the plan that times a step of each (:mod:`.plan`) and time to accuracy
(:mod:`.time_to_accuracy`)."""
