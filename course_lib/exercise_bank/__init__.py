"""The checkers of every lesson's exercises: one module per lesson (``lesson_00.py``, ``lesson_02.py``, …)."""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
