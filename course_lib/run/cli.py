"""Command lines of the course's scripts, generated from the config schema, and their error boundary.

``--help`` lists every key of ``course_lib/run/configs/default.yaml`` with its type, default, allowed range and meaning
(the comment after the key in that file), read from the same schema ``course_lib.run.config.load_config`` checks
values against, so the help cannot drift from what is accepted. Every key can be set as ``--key value``; unknown
keys and stray arguments are refused. Nothing here imports MindSpore: ``preflight`` runs its checks first.
"""
import argparse
import os
import re
import sys
import textwrap
import traceback

import yaml

from course_lib.i18n import _
from course_lib.run import config as _config

_SECTION = re.compile(r"^#\s*---\s*(?P<title>.+?)\s*---")
_KEY_LINE = re.compile(r"^(?P<key>[a-z_][a-z0-9_]*):\s*(?P<value>[^#]*?)\s*(?:#\s*(?P<meaning>.*))?$")


def schema() -> list:
    """``[(section, key, default, type_text, range_text, meaning)]`` for every key of default.yaml, in file order.

    A key without a comment is an error: the comment is the key's documentation in ``--help``."""
    text = _config.DEFAULT_CONFIG.read_text(encoding="utf-8")
    defaults = yaml.safe_load(text)
    rows, section = [], ""
    for line in text.splitlines():
        found = _SECTION.match(line)
        if found:
            section = found["title"]
            continue
        found = _KEY_LINE.match(line)
        if not found or found["key"] not in defaults:
            continue
        key = found["key"]
        meaning = (found["meaning"] or "").strip()
        if not meaning:
            raise ValueError(_("{name}: key {key!r} has no comment, so --help cannot say what it means. Fix: write "
                               "'# <meaning>' after its value.").format(name=_config.DEFAULT_CONFIG.name, key=key))
        rows.append((section, key, defaults[key], _type_text(key, defaults[key]), _range_text(key), meaning))
    missing = sorted(set(defaults) - {row[1] for row in rows})
    if missing:
        raise ValueError(_("{name}: keys {missing} are not on a 'key: value  # meaning' line. Fix: write each key "
                           "on one line.").format(name=_config.DEFAULT_CONFIG.name, missing=missing))
    return rows


def _type_text(key, default) -> str:
    if default is None:
        kind = _config.NULLABLE_TYPES.get(key)
        name = "path" if key in _config.PATH_KEYS else {int: "int", str: "text", list: "list"}.get(kind, "value")
        return f"{name} or null"
    if key in _config.CHOICES:
        return "{" + ",".join(_config.CHOICES[key]) + "}"
    return {bool: "true|false", int: "int", float: "float", str: "text"}.get(type(default), type(default).__name__)


def _range_text(key) -> str:
    if key in _config.CHOICES:
        return "one of " + ", ".join(_config.CHOICES[key])
    if key not in _config.RANGES:
        return ""
    low, high, low_open, high_open = _config.RANGES[key]
    text = f"{low} {'<' if low_open else '<='} value"
    if high is not None:
        text += f" {'<' if high_open else '<='} {f'{high:g}' if isinstance(high, float) else high}"
    if key == "steps_per_epoch":
        text += ", not 0"
    return text


def _shown(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def build_parser(prog: str, description: str, extra_help: str = "") -> argparse.ArgumentParser:
    """An argparse parser used for ``--help`` only (``load_config`` parses the values, so that ``--epoch`` is
    refused rather than taken as an abbreviation of ``--epochs``)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Values are read as YAML scalars (--lr 5e-3, --resume true; a true/false key alone means true). "
               "Order: default.yaml, then --config FILE, then the command line. Unknown keys are refused."
               + (f"\n\n{extra_help}" if extra_help else ""))
    parser.add_argument("--config", metavar="FILE",
                        help="a YAML file with keys from course_lib/run/configs/default.yaml")
    groups = {}
    for section, key, default, type_text, range_text, meaning in schema():
        group = groups.get(section) or groups.setdefault(section, parser.add_argument_group(section))
        details = f"{meaning}. Default: {_shown(default)}."
        if range_text and not range_text.startswith("one of"):
            details += f" Range: {range_text}."
        metavar = type_text if "{" in type_text or "|" in type_text else type_text.upper()
        group.add_argument(f"--{key}", metavar=metavar.replace(" OR NULL", "|null"),
                           help=details.replace("%", "%%"))
    return parser


def first_paragraph(doc: str) -> str:
    """The first paragraph of a docstring, in one line (a description that is not cut mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())


def wants_help(argv) -> bool:
    return any(arg in ("-h", "--help") for arg in argv)


def check_working_directory():
    """A deleted working directory makes ``import mindspore`` abort; say so first."""
    try:
        os.getcwd()
    except (FileNotFoundError, OSError):
        raise RuntimeError(_("the current working directory no longer exists (it was deleted or moved after this "
                             "shell went into it); MindSpore cannot start there. Fix: cd into an existing folder "
                             "(e.g. cd ~) and run the command again.")) from None


def load(argv, description: str, script: str, doc: str = "", extra_help: str = ""):
    """Parse ``argv`` into a checked Config; ``None`` after printing ``--help``. Runs the checks that must come
    before MindSpore is imported (working directory, msrun environment)."""
    from course_lib.run import cluster

    check_working_directory()
    if wants_help(argv):
        text = textwrap.fill(description, 100) + ("\n\n" + textwrap.dedent(doc) if doc else "")
        build_parser(f"scripts/{script}", text, extra_help).print_help()
        return None
    cfg = _config.load_config(argv=argv)
    cluster.check_environment(cfg)
    return cfg


# ------------------------------------------------------------------------------------------ the error boundary
class TrainingInterrupted(Exception):
    """Ctrl-C during training: carries where it stopped."""


class DataPipelineFailed(RuntimeError):
    """MindData failed mid-epoch (a file that does not decode, ...): the message names the file and the fix."""


_DATA_FILE = re.compile(r"corresponding data file is: (?P<file>.+?)\.?(?: |$)", re.M)
_MAP_OP = re.compile(r"map operation: \[(?P<op>\w+)\] failed")


def describe_pipeline_error(text: str, where: str = ""):
    """One clear message for a MindData runtime error (which operation, which file, the fix), or None if ``text``
    is not one. ``where`` says when it happened, e.g. "at epoch 1, step 3"."""
    if "dataset pipeline" not in text.lower():  # also holds the "Dataset Pipeline Error Message" heading
        return None
    # only now: course_lib.data imports MindSpore, and run_cli reports errors raised before MindSpore may be imported
    from course_lib.data.stats import pipeline_error_lines

    detail = [line.removeprefix("[ERROR]").strip() for line in pipeline_error_lines(text) or ()]
    found, op = _DATA_FILE.search(text), _MAP_OP.search(text)
    file = found.group("file") if found else None
    what = _("the data pipeline failed")
    if where:
        what += " " + where
    if op:
        what += _(" in its {op} step").format(op=op.group("op"))
    if file:
        what += _(" on the file {file}").format(file=file)
    # MindData's own text (detail) stays as MindData wrote it
    message = _("{what}: {detail}").format(what=what, detail=" ".join(detail)[:400]) if detail else what + "."
    if file and op and op.group("op") == "Decode":
        fix = _("Fix: {file} is not a readable image: remove or replace it, then run again").format(file=file)
    elif file:
        fix = _("Fix: check {file} (remove or replace it), then run again").format(file=file)
    else:
        fix = _("Fix: check the data set files (run with --debug true for MindData's full report), then run again")
    return _("{message}\n{fix} (--resume continues from the last checkpoint).").format(message=message, fix=fix)


def check_other_output_folders():
    """Every folder besides checkpoint_dir that the run writes into (MindSpore's log, compile cache or graph
    folders when the environment switches them on): created and proven writable before any training starts."""
    from course_lib.paths import check_output_folder, mindspore_output_folders

    for what, folder, fix in mindspore_output_folders():
        check_output_folder(folder, what, fix)


def _debug_requested(argv) -> bool:
    if os.environ.get("COURSE_DEBUG") == "1":
        return True
    for i, arg in enumerate(argv):
        if arg in ("--debug=true", "--debug=True"):
            return True
        if arg == "--debug":
            following = argv[i + 1] if i + 1 < len(argv) else "true"
            return following.startswith("--") or following.lower() == "true"
    return False


def run_cli(main_fn, argv=None) -> int:
    """Call ``main_fn(argv)`` and turn every error into one clear message (``--debug true`` or COURSE_DEBUG=1 shows
    the traceback too). Exit codes: 0 done, 1 an error, 130 interrupted (Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = _debug_requested(argv)
    try:
        check_working_directory()
        check_other_output_folders()  # before mindspore is imported: its logger creates GLOG_log_dir/rank_0 then
        main_fn(argv)
        return 0
    except TrainingInterrupted as stop:
        print(str(stop), file=sys.stderr, flush=True)
        return 130
    except KeyboardInterrupt:
        print(_("interrupted before training started; nothing was written."), file=sys.stderr, flush=True)
        return 130
    except Exception as error:  # noqa: BLE001 - the script's boundary: one readable message, never a raw traceback
        if debug:
            traceback.print_exc()
        text = str(error).strip() or type(error).__name__
        described = None if isinstance(error, DataPipelineFailed) else describe_pipeline_error(text)
        if described is not None:
            text = described
        elif isinstance(error, RuntimeError) and not isinstance(error, (NotImplementedError, DataPipelineFailed)):
            lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("-", "["))]
            text = "\n".join(lines[:6])
            if "mpirun" in text or "MS_WORKER_NUM" in text or "communication" in text.lower():
                text += "\n" + _("Fix: start distributed runs with msrun (not mpirun), e.g. msrun --worker_num=2 "
                                  "--local_worker_num=2 scripts/train.py --device_num 2")
        print(_("error ({error_type}): {text}").format(
            error_type=type(error).__name__, text=text), file=sys.stderr, flush=True)
        if not debug:
            print(_("(run with --debug true, or COURSE_DEBUG=1, for the full traceback)"), file=sys.stderr, flush=True)
        return 1
