"""One place for the course's value checks: each error names the key, the value it got, the valid range and a fix.

``check_int(name, value, low, high)`` and ``check_real(name, value, low, high, ...)`` accept numpy scalars
(``np.int64(10)`` is an int here), reject bools, NaN and infinities, and return a plain ``int``/``float``.
The config schema (``course_lib.run.config.RANGES``) and the functions use them, so a range is written once.
"""
import math
import numbers

__all__ = ["check_all_reduce_fusion_config", "check_count", "check_int", "check_real", "describe_range", "is_int",
           "is_real"]


def is_int(value) -> bool:
    """An integer (Python or numpy), not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def is_real(value) -> bool:
    """A real number (Python or numpy, ints included), not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def _outside(value, low, high, low_open=False, high_open=False) -> bool:
    return ((low is not None and (value <= low if low_open else value < low))
            or (high is not None and (value >= high if high_open else value > high)))


def _fail(error, message, name, value, low, high, fix, which):
    """Raise ``error`` with a module's own wording: ``message`` is a str.format template, or a pair (wrong type,
    out of range) of them; ``which`` is 0 for the type, 1 for the range."""
    if isinstance(message, tuple):
        message = message[which]
    raise error(message.format(name=name, value=value, low=low, high=high, fix=fix,
                               type=type(value).__name__)) from None


def describe_range(low=None, high=None, low_open=False, high_open=False) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    return " and ".join(parts) if parts else "any value"


def check_int(name, value, low=None, high=None, fix=None, *, message=None, type_error=TypeError):
    """``value`` as an ``int`` in ``[low, high]``; TypeError/ValueError naming ``name``, the value and the fix.

    ``message`` (a template with ``{name} {value} {low} {high} {fix} {type}``, or a pair: wrong type, out of
    range) replaces the standard wording; a value of the wrong type then raises ``type_error``, one out of
    range ValueError.
    """
    if message is not None:
        if not is_int(value):
            _fail(type_error, message, name, value, low, high, fix, 0)
        if _outside(value, low, high):
            _fail(ValueError, message, name, value, low, high, fix, 1)
        return int(value)
    if not is_int(value):
        raise TypeError(f"{name} must be an integer ({describe_range(low, high)}), got {value!r} "
                        f"({type(value).__name__}). Fix: {fix or f'pass a whole number, e.g. {low or 1}'}.")
    value = int(value)
    if _outside(value, low, high):
        raise ValueError(f"{name} must be an integer {describe_range(low, high)}, got {value}. "
                         f"Fix: {fix or f'set {name} to a value {describe_range(low, high)}'}.")
    return value


def check_count(name, value, low, fix):
    """``value`` as an ``int`` >= ``low`` (a count: steps, repeats, batch size); ValueError for anything else,
    wrong types included, in the one wording the measuring helpers share."""
    return check_int(name, value, low, fix=fix, type_error=ValueError,
                     message="{name} must be an int >= {low}, got {value!r}. Fix: {fix}")


def check_real(name, value, low=None, high=None, low_open=False, high_open=False, fix=None, *, message=None,
               type_error=TypeError):
    """``value`` as a finite ``float`` within the bounds (``*_open``: the bound itself is excluded).

    ``message``/``type_error`` as in :func:`check_int` (a non-finite value counts as the wrong type there).
    """
    if message is not None:
        if not is_real(value) or not math.isfinite(value):
            _fail(type_error, message, name, value, low, high, fix, 0)
        if _outside(value, low, high, low_open, high_open):
            _fail(ValueError, message, name, value, low, high, fix, 1)
        return float(value)
    if not is_real(value):
        raise TypeError(f"{name} must be a number ({describe_range(low, high, low_open, high_open)}), got {value!r} "
                        f"({type(value).__name__}). Fix: {fix or f'pass a number, e.g. {low or 1}'}.")
    value = float(value)
    if not math.isfinite(value) or _outside(value, low, high, low_open, high_open):
        rule = describe_range(low, high, low_open, high_open)
        raise ValueError(f"{name} must be a finite number {rule}, got {value!r}. "
                         f"Fix: {fix or f'set {name} to a finite value {rule}'}.")
    return value


def check_all_reduce_fusion_config(value, name="all_reduce_fusion_config", fix=None) -> list:
    """A list of gradient indices where MindSpore splits the AllReduce fusion groups, e.g. ``[85, 160]``:
    whole numbers >= 1, strictly increasing, no nested lists. Returns a plain list of ints (``[]`` stays ``[]``).
    ``None`` is returned unchanged (no split)."""
    fix = fix or f"set {name} to a flat list of increasing gradient indices, e.g. [85, 160], or null"
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of gradient indices, got {value!r} ({type(value).__name__}). "
                         f"Fix: {fix}.")
    checked = []
    for position, item in enumerate(value):
        if isinstance(item, (list, tuple, dict, set)):
            raise ValueError(f"{name} must be a flat list of ints, got a nested {type(item).__name__} {item!r} "
                             f"at position {position} of {value!r}. Fix: {fix}.")
        if not is_int(item):
            raise ValueError(f"{name} must hold whole numbers only, got {item!r} ({type(item).__name__}) at "
                             f"position {position} of {value!r}. Fix: {fix}.")
        if item < 1:
            raise ValueError(f"{name} indices must be >= 1, got {item} at position {position} of {value!r}. "
                             f"Fix: {fix}.")
        if checked and item <= checked[-1]:
            raise ValueError(f"{name} must be strictly increasing, got {checked[-1]} then {item} in {value!r}. "
                             f"Fix: {fix}.")
        checked.append(int(item))
    return checked
