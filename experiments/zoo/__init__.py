"""The pretrained zoo: train (:mod:`.train`), score (:mod:`.score`), ship (:mod:`.ship`,
:mod:`.ship_2d`) and report (:mod:`.report`, :mod:`.report_2d`, :mod:`.goals`,
:mod:`.readme`) the models in ``tnpx.zoo``, with each model's safe range (:mod:`.safe_range`)
and its gap by task family (:mod:`.families`)."""
