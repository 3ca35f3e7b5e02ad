"""One place for the course's argument checks: each error names the argument, the value it got, the rule and a fix.

The vocabulary: one kind of mistake -> one exception type -> one wording (``{name}`` is the argument's name,
``{value}`` what the caller passed, ``{type}`` its type name; every template is marked with ``_()``, so a Chinese
learner reads it in Chinese):

============================  ==========  =============================================================================
kind of mistake               exception   wording (helper)
============================  ==========  =============================================================================
wrong type                    TypeError   "{name} must be {expected}, got {value} ({type}). Fix: {fix}"
                                          (``check_type``, ``wrong_type``; ``check_bool``: expected "True or False";
                                          ``check_str``: "a str"; ``check_path``: "a path (str or Path)")
integer of the wrong type     TypeError   "{name} must be an integer ({rule}), got {value!r} ({type}). Fix: {fix}"
integer out of range          ValueError  "{name} must be an integer {rule}, got {value!r}. Fix: {fix}"
                                          (``check_int``; ``check_count`` is ``check_int`` with a lower bound)
number of the wrong type      TypeError   "{name} must be a number ({rule}), got {value!r} ({type}). Fix: {fix}"
number out of range, NaN/inf  ValueError  "{name} must be a finite number {rule}, got {value!r}. Fix: {fix}"
                                          (``check_real``)
not one of the choices        ValueError  "{name} must be one of {choices}, got {value!r}. Fix: {fix}"
                                          (``check_choice``, whatever the value's type)
empty text or path            ValueError  "{name} must not be empty, got {value!r}. Fix: {fix}"
                                          (``check_str``, ``check_path``)
wrong array shape             ValueError  "{name} must be shaped {layout}, got shape {shape}. Fix: {fix}"
                                          (``check_ndim``)
two arguments that go         ValueError  "{first} and {second} go together: pass both or neither, got ..."
together, one given                       (``check_together``)
============================  ==========  =============================================================================

``{rule}`` is ``describe_range``'s text, e.g. ">= 1 and <= 8". Errors about files and content keep their own
classes: ``FileNotFoundError`` (a missing file or folder), ``NotADirectoryError`` (a file where a folder is
expected), ``PermissionError``, and ``ValueError`` for a corrupted file; a module's own error class subclasses one
of these. A mistake that no helper covers raises the exception of its kind above, with a message that says what was
wrong, the value and "Fix: ...".

Callers pass their ``fix`` (and ``expected``) already marked, ``fix=_("e.g. batch_size=32")``, without a final
period: the template adds it. ``{value}`` of a wrong-type error is ``shown(value)``, the first line of its repr (a
network's repr is a page). ``check_all_reduce_fusion_config`` checks a config value, so all of its mistakes are
ValueErrors (the file's text is wrong, as for every config key).

``check_int(name, value, low, high)`` and ``check_real(name, value, low, high, ...)`` accept numpy scalars
(``np.int64(10)`` is an int here), reject bools, NaN and infinities, and return a plain ``int``/``float``.
The config schema (``course_lib.run.config.RANGES``) and the functions use them, so a range is written once.
"""
import math
import numbers
import os

from course_lib.i18n import _

__all__ = ["check_all_reduce_fusion_config", "check_bool", "check_choice", "check_count", "check_int", "check_ndim",
           "check_path", "check_real", "check_str", "check_together", "check_type", "describe_range", "is_int",
           "is_real", "shown", "wrong_type"]


def is_int(value) -> bool:
    """An integer (Python or numpy), not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Integral)


def is_real(value) -> bool:
    """A real number (Python or numpy, ints included), not a bool."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def shown(value, limit=80) -> str:
    """``repr(value)`` for an error message: its first line, cut to ``limit`` characters (a network's repr is a
    whole page)."""
    text = repr(value)
    first = text.splitlines()[0] if text else text
    if first != text or len(first) > limit:
        return first[:limit] + "..."
    return text


def _outside(value, low, high, low_open=False, high_open=False) -> bool:
    return ((low is not None and (value <= low if low_open else value < low))
            or (high is not None and (value >= high if high_open else value > high)))


def _fix(fix, default):
    """The "Fix: ..." text: the caller's ``fix`` (a trailing period is dropped, the template adds one) or the
    default."""
    text = str(fix if fix else default).strip()
    return text[:-1] if text.endswith(".") else text


def describe_range(low=None, high=None, low_open=False, high_open=False) -> str:
    """The rule as text, e.g. ``">= 1 and <= 8"``, ``"> 0"``; ``"(any value)"`` without bounds."""
    lower = None if low is None else f"{'>' if low_open else '>='} {low}"
    upper = None if high is None else f"{'<' if high_open else '<='} {high}"
    if lower and upper:
        return _("{lower} and {upper}").format(lower=lower, upper=upper)
    return lower or upper or _("(any value)")


def wrong_type(name, value, expected, fix) -> TypeError:
    """The TypeError of the vocabulary, to ``raise`` where no ``check_*`` fits (a test that is not an isinstance):
    "{name} must be {expected}, got {value} ({type}). Fix: {fix}"."""
    return TypeError(_("{name} must be {expected}, got {value} ({type}). Fix: {fix}.").format(
        name=name, expected=expected, value=shown(value), type=type(value).__name__, fix=_fix(fix, "")))


def check_type(name, value, types, expected, fix):
    """``value`` if it is an instance of ``types``; else TypeError "{name} must be {expected}, got ...".
    ``expected`` says the type in words (e.g. ``_("a mindspore.nn.Cell")``); ``fix`` says what to pass."""
    if isinstance(value, types):
        return value
    raise wrong_type(name, value, expected, fix) from None


def check_bool(name, value, fix=None) -> bool:
    """``value`` as a ``bool`` (numpy's bool too); TypeError for anything else, 0 and 1 included."""
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")):
        return bool(value)
    raise wrong_type(name, value, _("True or False"), _fix(fix, _("pass True or False"))) from None


def check_str(name, value, fix, *, none_ok=False, empty_ok=False):
    """``value`` as a ``str`` (``None`` passes with ``none_ok``); TypeError for another type, ValueError for an
    empty or blank text unless ``empty_ok``."""
    if value is None and none_ok:
        return None
    if not isinstance(value, str):
        raise wrong_type(name, value, _("a str or None") if none_ok else _("a str"), fix) from None
    if not empty_ok and not value.strip():
        raise ValueError(_("{name} must not be empty, got {value!r}. Fix: {fix}.").format(
            name=name, value=value, fix=_fix(fix, "")))
    return value


def check_path(name, value, fix, *, none_ok=False):
    """``value`` (a str or ``os.PathLike``) as a ``pathlib.Path``; ``None`` passes with ``none_ok``. TypeError
    for another type, ValueError for an empty or blank path. Whether it exists is the caller's check."""
    from pathlib import Path

    if value is None and none_ok:
        return None
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise wrong_type(name, value, _("a path (str or Path) or None") if none_ok else _("a path (str or Path)"),
                         fix) from None
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(_("{name} must not be empty, got {value!r}. Fix: {fix}.").format(
            name=name, value=text, fix=_fix(fix, "")))
    return Path(text)


def _same(value, choice) -> bool:
    """``value == choice`` without its surprises: ``True`` is not ``1``, an array compares as unequal."""
    if isinstance(value, bool) != isinstance(choice, bool):
        return False
    try:
        return bool(value is choice or value == choice)
    except (TypeError, ValueError):  # an array compared with a str
        return False


def check_choice(name, value, choices, fix=None):
    """``value`` if it is one of ``choices``; ValueError otherwise, whatever its type."""
    if any(_same(value, choice) for choice in choices):
        return value
    choices = tuple(choices)
    raise ValueError(_("{name} must be one of {choices}, got {value}. Fix: {fix}.").format(
        name=name, choices=choices, value=shown(value), fix=_fix(fix, _("pass e.g. {example!r}").format(
            example=choices[0]))))


def check_ndim(name, shape, layouts, fix):
    """``shape`` (a tuple) if its length is one of ``layouts``' keys; else ValueError naming the layouts.
    ``layouts`` maps a number of dimensions to its text, e.g. ``{4: "(N, C, H, W)", 3: "(C, H, W)"}``."""
    shape = tuple(int(size) for size in shape)
    if len(shape) in layouts:
        return shape
    layout = _(" or ").join(layouts.values()) if len(layouts) > 1 else next(iter(layouts.values()))
    raise ValueError(_("{name} must be shaped {layout}, got shape {shape}. Fix: {fix}.").format(
        name=name, layout=layout, shape=shape, fix=_fix(fix, "")))


def check_together(first, first_value, second, second_value, fix):
    """Two optional arguments that need each other: ValueError when exactly one of them is ``None``."""
    if (first_value is None) == (second_value is None):
        return
    raise ValueError(_("{first} and {second} go together: pass both or neither, got {first}={first_value}, "
                       "{second}={second_value}. Fix: {fix}.").format(
        first=first, second=second, first_value=shown(first_value, 40), second_value=shown(second_value, 40),
        fix=_fix(fix, "")))


def check_int(name, value, low=None, high=None, fix=None):
    """``value`` as an ``int`` in ``[low, high]``; TypeError (wrong type) or ValueError (out of range) naming
    ``name``, the value and the fix.
    """
    rule = describe_range(low, high)
    if not is_int(value):
        raise TypeError(_("{name} must be an integer ({rule}), got {value!r} ({type}). Fix: {fix}.").format(
            name=name, rule=rule, value=value, type=type(value).__name__,
            fix=_fix(fix, _("pass a whole number, e.g. {example}").format(example=low or 1))))
    value = int(value)
    if _outside(value, low, high):
        raise ValueError(_("{name} must be an integer {rule}, got {value!r}. Fix: {fix}.").format(
            name=name, rule=rule, value=value,
            fix=_fix(fix, _("set {name} to a value {rule}").format(name=name, rule=rule))))
    return value


def check_count(name, value, low, fix):
    """``value`` as an ``int`` >= ``low`` (a count: steps, repeats, batch size); :func:`check_int`'s errors."""
    return check_int(name, value, low, fix=fix)


def check_real(name, value, low=None, high=None, low_open=False, high_open=False, fix=None):
    """``value`` as a finite ``float`` within the bounds (``*_open``: the bound itself is excluded); TypeError for
    a value that is not a number (bools included), ValueError for NaN, infinities and values out of range.
    """
    rule = describe_range(low, high, low_open, high_open)
    if not is_real(value):
        raise TypeError(_("{name} must be a number ({rule}), got {value!r} ({type}). Fix: {fix}.").format(
            name=name, rule=rule, value=value, type=type(value).__name__,
            fix=_fix(fix, _("pass a number, e.g. {example}").format(example=low or 1))))
    value = float(value)
    if not math.isfinite(value) or _outside(value, low, high, low_open, high_open):
        raise ValueError(_("{name} must be a finite number {rule}, got {value!r}. Fix: {fix}.").format(
            name=name, rule=rule, value=value,
            fix=_fix(fix, _("set {name} to a finite value {rule}").format(name=name, rule=rule))))
    return value


def check_all_reduce_fusion_config(value, name="all_reduce_fusion_config", fix=None) -> list:
    """A list of gradient indices where MindSpore splits the AllReduce fusion groups, e.g. ``[85, 160]``:
    whole numbers >= 1, strictly increasing, no nested lists. Returns a plain list of ints (``[]`` stays ``[]``).
    ``None`` is returned unchanged (no split). A config value, so every mistake is a ValueError (the config
    loader's kind: the file's text is wrong)."""
    fix = _fix(fix, _("set {name} to a flat list of increasing gradient indices, e.g. [85, 160], or null").format(
        name=name))
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(_("{name} must be a list of gradient indices, got {value!r} ({type}). Fix: {fix}.").format(
            name=name, value=value, type=type(value).__name__, fix=fix))
    checked = []
    for position, item in enumerate(value):
        if isinstance(item, (list, tuple, dict, set)):
            raise ValueError(_("{name} must be a flat list of ints, got a nested {type} {item!r} at position "
                               "{position} of {value!r}. Fix: {fix}.").format(
                name=name, type=type(item).__name__, item=item, position=position, value=value, fix=fix))
        if not is_int(item):
            raise ValueError(_("{name} must hold whole numbers only, got {item!r} ({type}) at position {position} "
                               "of {value!r}. Fix: {fix}.").format(
                name=name, item=item, type=type(item).__name__, position=position, value=value, fix=fix))
        if item < 1:
            raise ValueError(_("{name} indices must be >= 1, got {item} at position {position} of {value!r}. "
                               "Fix: {fix}.").format(name=name, item=item, position=position, value=value, fix=fix))
        if checked and item <= checked[-1]:
            raise ValueError(_("{name} must be strictly increasing, got {previous} then {item} in {value!r}. "
                               "Fix: {fix}.").format(name=name, previous=checked[-1], item=item, value=value,
                                                     fix=fix))
        checked.append(int(item))
    return checked
