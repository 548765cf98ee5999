"""The README's demo, ``tnpx demo``: its run (:mod:`tnpx.demo.run`), settings
(:mod:`tnpx.demo.settings`), the shipped model's zero-shot part (:mod:`tnpx.demo.zero_shot`)
and the report it writes (:mod:`tnpx.demo.report`). Modules are imported by name: this
package imports nothing itself.
"""
