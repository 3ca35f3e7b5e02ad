"""Reference solutions of the exercises, one module per lesson; `tests/test_exercises.py` checks them all."""
