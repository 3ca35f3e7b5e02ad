"""course_lib.run: the training run behind ``scripts/`` (train.py, eval.py, export.py), for engineers who use or
adapt those scripts. Learners in the notebooks never need it.

- ``factory``: ``create_dataset``, ``create_network``, ``create_loss``, ``create_optimizer``, ... from a config;
- ``cli``: command lines generated from the config schema (``--help`` lists every key), the scripts' one-message
  error boundary, and the checks made before MindSpore is imported;
- ``cluster``: which process of an msrun job this is (scheduler or worker, rank), and the per-rank log files;
- ``settings``: ``run_settings.json``, the settings a run's checkpoints were trained with (``--resume`` checks them);
- ``fit``: the training run itself (resume, checkpoints on rank 0 only, ranks checked to end identical).

Importing this package does not import MindSpore: the checks of ``cli.preflight`` run first.
"""
