"""For learners and scripts: the course's data sets and what you can measure about a MindData pipeline.

- ``datasets.py``: the embedded data sets as MindData pipelines (lessons 01-09);
- ``generate.py``: rebuilds ``data/`` bit for bit (``python -m course_lib.data.generate``);
- ``stats.py``: throughput, steps per epoch, shard contents and MindData's error text (lesson 01).
"""
