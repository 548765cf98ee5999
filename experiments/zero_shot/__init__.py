"""Zoo models zero-shot, beside a fitted GP: measured series (:mod:`.series`), classic test
functions (:mod:`.functions`), measured 2D fields (:mod:`.fields`, :mod:`.field_data`) and a
2D model's own prior shifted (:mod:`.shifts`)."""
