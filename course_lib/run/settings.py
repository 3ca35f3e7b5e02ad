"""``run_settings.json``: the settings a run's checkpoints were trained with, written beside them.

``--resume`` compares the new command line with it and refuses, naming each differing setting, unless
``--resume_with_changes`` is given: a resumed run that silently trains on with another learning rate or batch size
is not the run its checkpoints belong to.
"""
import json
import os
import uuid
from pathlib import Path

from course_lib.i18n import _

SETTINGS_NAME = "run_settings.json"
#: Keys that do not change what the run computes (where files go, how many threads, housekeeping, the flags of
#: this launch), so they may differ when a run is resumed.
NOT_COMPARED = ("checkpoint_dir", "checkpoint_path", "resume", "resume_with_changes", "overwrite", "debug",
                "num_parallel_workers", "device_id", "rank_id", "save_checkpoint_epochs", "keep_checkpoint_max",
                "all_reduce_fusion_config")


def run_settings(cfg) -> dict:
    """The settings of ``cfg`` that define the training (``data_path`` as an absolute path)."""
    values = {key: value for key, value in cfg.to_dict().items() if key not in NOT_COMPARED}
    if values.get("data_path"):
        values["data_path"] = str(Path(values["data_path"]).expanduser().resolve())
    return values


def differences(recorded: dict, current: dict) -> list:
    """``[(key, recorded value, current value)]``. ``epochs`` counts only with the cosine schedule, whose learning
    rates depend on it: a constant-rate run may be extended."""
    found = []
    for key in sorted(set(recorded) | set(current)):
        if key == "epochs" and current.get("lr_schedule") == recorded.get("lr_schedule") == "constant":
            continue
        if recorded.get(key, "(missing)") != current.get(key, "(missing)"):
            found.append((key, recorded.get(key, "(missing)"), current.get(key, "(missing)")))
    return found


def read(folder):
    """The recorded settings in ``folder``, or None if it has no run_settings.json."""
    from course_lib.paths import relative

    path = Path(folder) / SETTINGS_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return dict(data["settings"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(_("{path} is not a run-settings file written by scripts/train.py ({error}). Fix: restore "
                           "it, or move it away and resume with --resume_with_changes true to record the settings "
                           "of this run.").format(path=relative(path), error=error)) from None


def write(folder, settings: dict, changes=()) -> Path:
    """Write ``run_settings.json`` atomically (temporary file, fsync, rename); earlier changes are kept."""
    path = Path(folder) / SETTINGS_NAME
    history = []
    if path.is_file():
        try:
            history = list(json.loads(path.read_text(encoding="utf-8")).get("resumed_with_changes", []))
        except (ValueError, AttributeError):
            history = []
    if changes:
        history.append({key: {"was": old, "now": new} for key, old, new in changes})
    text = json.dumps({"written_by": "scripts/train.py", "settings": settings, "resumed_with_changes": history},
                      indent=2, sort_keys=True) + "\n"
    temp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return path


def check_resume(folder, settings: dict, allow_changes: bool) -> list:
    """Compare ``settings`` with the folder's run_settings.json; raise ValueError naming every difference unless
    ``allow_changes``. Returns the differences (empty when the file is missing or equal)."""
    from course_lib.paths import relative

    recorded = read(folder)
    if recorded is None:
        return []
    found = differences(recorded, settings)
    if found and not allow_changes:
        listed = "; ".join(_("{key}: {old!r} in the run, {new!r} now").format(key=key, old=old, new=new)
                           for key, old, new in found)
        again = " ".join(f"--{key} {_arg(old)}" for key, old, _new in found)
        raise ValueError(_("--resume: the settings differ from those the checkpoints in {folder} were trained with "
                           "({settings_name}): {listed}. Continuing would mix two different trainings. Fix: resume "
                           "with the run's values ({again}), train into a new --checkpoint_dir, or add "
                           "--resume_with_changes to continue with the new settings on purpose.").format(
                               folder=relative(folder), settings_name=SETTINGS_NAME, listed=listed, again=again))
    return found


def _arg(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
