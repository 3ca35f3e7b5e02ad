"""For learners and scripts: data-parallel training on one machine with msrun (lesson 08, appendix A6).

- ``launch.py``: the launcher's side (``launch``: start msrun, bound it, collect each rank's log);
- ``worker.py``: the worker's side (its role, its reports, what it trained on);
- ``_watchdog.py``: ends a job's processes when the launcher dies.
"""
