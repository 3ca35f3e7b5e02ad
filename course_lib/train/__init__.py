"""For learners: the training library the lessons teach, one concept per module.

``trainer.py`` (a training loop over ``@ms.jit``), ``callbacks.py`` (progress, evaluation, best checkpoint),
``checkpoint.py`` (saving, loading, keeping the best), ``schedules.py`` (learning-rate schedules), ``optim.py``
(parameter groups), ``losses.py`` and ``metrics.py``.
"""
