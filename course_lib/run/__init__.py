"""For engineers and scripts: the training run behind ``scripts/`` (train.py, eval.py, export.py), for those who use
or adapt those scripts. Learners in the notebooks never need it.

- ``config`` (+ ``configs/default.yaml``): the YAML configuration (``load_config``), every key range-checked;
- ``env``: ``init_env``, the run environment (device, mode, data-parallel setup);
- ``factory``: ``create_dataset``, ``create_network``, ``create_loss``, ``create_optimizer``, ... from a config;
- ``cli``: command lines generated from the config schema (``--help`` lists every key), the checks made before
  MindSpore is imported (working directory, msrun variables), and the scripts' one-message error boundary;
- ``cluster``: which process of an msrun job this is (scheduler or worker, rank), and the per-rank log files;
- ``settings``: ``run_settings.json``, the settings a run's checkpoints were trained with (``--resume`` checks them);
- ``fit``: the training run itself (resume, checkpoints on rank 0 only, ranks checked to end identical).

Importing this package does not import MindSpore, so ``cli.load`` can refuse a bad command line, a leftover
``MS_ROLE`` or a deleted working directory with one message before MindSpore starts.
"""
