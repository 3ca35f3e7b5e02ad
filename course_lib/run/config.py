"""The YAML configuration scaffold of the migration guide's training script: defaults in the package, a user
YAML on top, then overrides.

``load_config(path=None, argv=None, **overrides)`` returns a ``Config`` whose keys are read as attributes
(``cfg.batch_size``). Unknown keys and values of the wrong type are rejected with a message that names the
key, the value and the fix. YAML is read with ``yaml.safe_load`` only.
"""
import copy
import numbers
import os
from pathlib import Path

import yaml

from course_lib.i18n import _

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "default.yaml"

#: Keys whose default is null, and the type a non-null value must have.
NULLABLE_TYPES = {
    "device_target": str,
    "all_reduce_fusion_config": list,
    "data_path": str,
    "num_parallel_workers": int,
    "checkpoint_dir": str,
    "checkpoint_path": str,
}

#: Keys whose value must come from a fixed set (checked here so a typo fails before any work starts).
CHOICES = {
    "context_mode": ("graph", "pynative"),
    "dataset": ("digits_mnist", "imagefolder", "shapes"),
    "model": ("lenet5", "resnet18", "resnet34", "resnet50", "resnet101"),
    "lr_schedule": ("constant", "cosine"),
}


#: Keys whose value is a path: on the command line the text typed is the path (``--checkpoint_dir ~`` is the home
#: folder, ``--data_path null`` a folder named "null"), never YAML's null.
PATH_KEYS = ("data_path", "checkpoint_dir", "checkpoint_path")

#: The valid range of every numeric key: (low, high, low_open, high_open); checked with course_lib.validation.
#: tests/test_config.py proves that every int/float key of default.yaml has an entry.
RANGES = {
    "seed": (0, 2 ** 32 - 1, False, False),
    "device_num": (1, 4096, False, False),
    "device_id": (0, 4095, False, False),
    "rank_id": (0, 4095, False, False),
    "batch_size": (1, 65536, False, False),
    "image_size": (1, 4096, False, False),
    "num_classes": (2, 1_000_000, False, False),
    "num_parallel_workers": (1, 1024, False, False),
    "epochs": (1, 100_000, False, False),
    "steps_per_epoch": (-1, None, False, False),  # -1 = whole data set; 0 is rejected separately
    "lr": (0.0, 100.0, True, False),
    "lr_end": (0.0, 100.0, False, False),
    "warmup_epochs": (0, 100_000, False, False),
    "momentum": (0.0, 1.0, False, True),
    "weight_decay": (0.0, 1.0, False, False),
    "label_smooth_factor": (0.0, 1.0, False, True),
    "loss_scale": (1.0, 2.0 ** 126, False, False),
    "save_checkpoint_epochs": (1, 100_000, False, False),
    "keep_checkpoint_max": (1, 100_000, False, False),
}


def _check_range(key, value, where):
    from course_lib.validation import check_int, check_real

    low, high, low_open, high_open = RANGES[key]
    fix = _("set {key} in your YAML or with --{key}").format(key=key)
    name = _("Config key {key!r}{where}").format(key=key, where=where)
    if not isinstance(low, float):
        value = check_int(name, value, low, high, fix=fix)
        if key == "steps_per_epoch" and value == 0:
            raise ValueError(_("{name} must be -1 (the whole data set) or >= 1, got 0. Fix: {fix}.").format(
                name=name, fix=fix))
        return value
    return check_real(name, value, low, high, low_open, high_open, fix=fix)


class Config:
    """Attribute access to a flat mapping of settings; ``to_dict()`` gives a plain copy back."""

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, key):
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(_("Config has no key {key!r}. Known keys: {known}.").format(
                key=key, known=', '.join(sorted(self._values)))) from None

    def __setattr__(self, key, value):
        self._values[key] = value

    def __contains__(self, key):
        return key in self._values

    def __eq__(self, other):
        return isinstance(other, Config) and self._values == other._values

    def get(self, key, default=None):
        return self._values.get(key, default)

    def to_dict(self) -> dict:
        return copy.deepcopy(self._values)

    def __repr__(self):
        return yaml.safe_dump(self._values, sort_keys=False, default_flow_style=None).rstrip()


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with the same key twice (plain YAML keeps the last value
    without a word), at any depth."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: SafeLoader reports it itself
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _DuplicateKey(key, first, line)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


class _DuplicateKey(Exception):
    def __init__(self, key, first, second):
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second


def _safe_load_unique(text: str):
    """``yaml.safe_load`` that raises ``_DuplicateKey`` for a key written twice in one mapping."""
    loader = _UniqueKeyLoader(text)  # what yaml.safe_load does, with the duplicate check
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _read_yaml(path) -> dict:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(_("Config path must be a file path (str or Path) or None, got {path!r} ({path_type}). Fix: "
                          "e.g. load_config('my.yaml'), or path=None for the defaults.").format(
                              path=path, path_type=type(path).__name__))
    path = Path(path).expanduser()
    if path.is_dir():
        raise IsADirectoryError(_("Config path {path} is a folder, not a YAML file. Fix: pass the .yaml file "
                                  "inside it, e.g. {example}.").format(
                                      path=path, example=path / 'config.yaml'))
    if not path.is_file():
        raise FileNotFoundError(_("Config file {path} does not exist. Fix: pass the path of a YAML file, e.g. "
                                  "course_lib/run/configs/default.yaml, or path=None for the defaults.").format(
                                      path=path))
    try:
        data = _safe_load_unique(path.read_bytes().decode("utf-8"))
    except _DuplicateKey as duplicate:
        raise ValueError(_("Config file {path} sets key {duplicate_key!r} twice (lines {duplicate_first} and "
                           "{duplicate_second}); YAML would silently keep only the last value. Fix: keep one "
                           "{duplicate_key!r} line and delete the other.").format(
                               path=path, duplicate_key=duplicate.key, duplicate_first=duplicate.first,
                               duplicate_second=duplicate.second)) from None
    except UnicodeDecodeError as error:
        raise ValueError(_("Config file {path} is not UTF-8 text (byte {byte:#04x} at offset {error_start}). Fix: "
                           "save the file as UTF-8.").format(
                               path=path, byte=error.object[error.start], error_start=error.start)) from None
    except yaml.YAMLError as error:
        raise ValueError(_("Config file {path} is not valid YAML: {error}").format(path=path, error=error)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(_("Config file {path} must hold a mapping of key: value lines, got a {data_type}. Fix: "
                           "write one `key: value` per line.").format(path=path, data_type=type(data).__name__))
    return data


def _check_value(key, value, default, source):
    where = _(" (from {source})").format(source=source) if source else ""
    if default is None:
        expected = NULLABLE_TYPES.get(key)
        if value is None or expected is None:
            return value
        if key in PATH_KEYS and isinstance(value, str) and not value.strip():
            raise ValueError(_("Config key {key!r} is an empty path ({value!r}){where}: it would silently mean the "
                               "default or the current folder. Fix: write a path, or null for the default.").format(
                                   key=key, value=value, where=where))
        if key == "all_reduce_fusion_config":
            from course_lib.validation import check_all_reduce_fusion_config

            return check_all_reduce_fusion_config(
                value, _("Config key {key!r}{where}").format(key=key, where=where),
                fix=_("set {key} in your YAML (or --{key}) to a flat list of increasing gradient indices, "
                      "e.g. [85, 160], or null").format(key=key))
        if expected is int and isinstance(value, bool):
            pass
        elif isinstance(value, expected) or (expected is int and hasattr(value, "__index__")):
            return _check_range(key, int(value), where) if key in RANGES else value
        # Translators: {article} is English "a"/"an"; leave it out
        raise TypeError(_("Config key {key!r} must be null or {article} {kind}, got "
                          "{value!r}{where}. Fix the value in your YAML or override.").format(
                              key=key, article="an" if expected is int else "a", kind=expected.__name__,
                              value=value, where=where))
    if isinstance(value, str) and isinstance(default, float):
        value = _number_from_text(value, float)
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, type(default))
    if not ok:
        kind = type(default).__name__
        # Translators: {article} is English "a"/"an"; leave it out
        raise TypeError(_("Config key {key!r} must be {article} {kind} like its default "
                          "{default!r}, got {value!r} ({value_type}){where}. Fix the value in your YAML or "
                          "override.").format(
                              key=key, article="an" if kind[0] in "aeiou" else "a", kind=kind,
                              default=default, value=value, value_type=type(value).__name__, where=where))
    if ok and key in RANGES:
        value = _check_range(key, value, where)
    if key in CHOICES and value not in CHOICES[key]:
        raise ValueError(_("Config key {key!r} must be one of {choices}, got {value!r}{where}. Fix the YAML key "
                           "{key}.").format(key=key, choices=list(CHOICES[key]), value=value, where=where))
    return value


def _number_from_text(text, kind):
    """YAML 1.1 reads ``5e-3`` (no dot) as text; a number written as text is still a number."""
    try:
        number = float(text.strip())
    except ValueError:
        return text
    if kind is int:
        return int(number) if number.is_integer() else text
    return number


def _merge(values: dict, updates: dict, defaults: dict, source: str):
    unknown = sorted(set(updates) - set(defaults))
    if unknown:
        raise ValueError(_("Unknown config key(s) {unknown} (from {source}). Known keys: {known}. "
                           "Fix: check the spelling or remove the key.").format(
                               unknown=unknown, source=source, known=', '.join(sorted(defaults))))
    for key, value in updates.items():
        values[key] = _check_value(key, value, defaults[key], source)


def parse_overrides(argv) -> tuple:
    """Parse ``--config FILE`` and ``--key value`` pairs; values are read as YAML scalars (``0.1`` -> float).
    A true/false key given without a value (``--resume``, ``--overwrite``) means true."""
    argv = list(argv)
    flags = {key for key, value in yaml.safe_load(DEFAULT_CONFIG.read_text()).items() if isinstance(value, bool)}
    config_path, overrides, i = None, {}, 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("--"):
            raise ValueError(_("Unexpected command-line argument {token!r}. Use --key value pairs, e.g. "
                               "--epochs 3.").format(token=token))
        key, eq, raw = token[2:].partition("=")
        if not eq:
            if key.replace("-", "_") in flags and (i + 1 >= len(argv) or argv[i + 1].startswith("--")):
                raw, i = "true", i + 1
            elif i + 1 >= len(argv):
                raise ValueError(_("Command-line option --{key} needs a value, e.g. --{key} 1.").format(key=key))
            else:
                raw, i = argv[i + 1], i + 2
        else:
            i += 1
        key = key.replace("-", "_")
        if key in ("config", "config_path"):
            config_path = raw
            continue
        if key in PATH_KEYS:
            if not raw.strip():
                raise ValueError(_("Command-line option --{key} is empty ({raw!r}): an empty path would silently "
                                   "mean the default or the current folder. Fix: pass a path, or leave out --{key} "
                                   "for its default.").format(key=key, raw=raw))
            overrides[key] = raw  # a path typed on the command line is a path, even "~" or "null"
            continue
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        if isinstance(value, str):  # YAML 1.1 reads "1e-4" (no dot) as text; on a command line it is a number
            for number in (int, float):
                try:
                    value = number(value)
                    break
                except ValueError:
                    pass
        overrides[key] = value
    return config_path, overrides


def load_config(path=None, argv=None, **overrides) -> Config:
    """Defaults, then the YAML at ``path`` (or ``--config`` in ``argv``), then ``argv``, then ``overrides``."""
    defaults = yaml.safe_load(DEFAULT_CONFIG.read_text())
    values = dict(defaults)
    cli_path, cli_overrides = parse_overrides(argv) if argv is not None else (None, {})
    path = path if path is not None else cli_path
    if path is not None:
        _merge(values, _read_yaml(path), defaults, str(path))
    _merge(values, cli_overrides, defaults, _("the command line"))
    _merge(values, overrides, defaults, _("keyword overrides"))
    return Config(values)

