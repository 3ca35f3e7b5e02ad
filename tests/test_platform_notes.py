"""Linux-only lesson cells (msrun, g++ shared libraries, MindSpore's libdnnl.so.3) explain themselves elsewhere.

Lessons 08 and A6 start msrun, A8 builds Linux shared libraries and links ``mindspore/lib/libdnnl.so.3``. On macOS
and Windows each such cell must print a note instead of failing, and on Linux it must still run the real thing
(nbval checks that). These tests read the committed notebooks and simulate the platform.
"""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: notebook -> (flag the first code cell defines, note it defines, calls that need Linux)
LINUX_ONLY = {
    "08_distributed_data_parallel": ("MSRUN_WORKS", "MSRUN_NOTE", ("subprocess.run(command", "launch(", "log_dir /")),
    "A6_distributed_details": ("MSRUN_WORKS", "MSRUN_NOTE", ("launch(", "two.reports", "run_2 /", "one.reports")),
    "A8_custom_operators": ("LINUX", "LINUX_NOTE", ('"g++"', "onednn_lines(kind)", "build()", "FastConv2d(")),
}


def code_cells(stem):
    cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def platform_lines(stem, flag, note):
    """The first cell's lines that define the flag and the note (a statement may span several lines)."""
    lines = code_cells(stem)[0].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{flag} ="))
    end = next(i for i, line in enumerate(lines) if i > start and not line.startswith((" ", f"{note} =")))
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("stem", sorted(LINUX_ONLY))
@pytest.mark.parametrize("platform, linux", [("linux", True), ("darwin", False), ("win32", False)])
def test_the_flag_follows_the_platform_and_the_note_names_it(monkeypatch, stem, platform, linux):
    flag, note, _ = LINUX_ONLY[stem]
    monkeypatch.setattr(sys, "platform", platform)
    names = {"sys": sys}
    exec(platform_lines(stem, flag, note), names)  # noqa: S102 - the notebook's own two statements
    assert names[flag] is linux
    assert f"Skipped on {platform}" in names[note] and "Linux" in names[note]


@pytest.mark.parametrize("stem", sorted(LINUX_ONLY))
def test_every_linux_only_call_sits_in_the_linux_branch(stem):
    flag, note, calls = LINUX_ONLY[stem]
    guarded = 0
    for source in code_cells(stem)[1:]:
        lines = source.splitlines()
        for number, line in enumerate(lines):
            if any(call in line for call in calls) and not line.lstrip().startswith(("#", "def ")):
                guard = next((i for i, text in enumerate(lines) if text == f"if not {flag}:"), None)
                assert guard is not None and guard < number and line.startswith("    "), (
                    f"{stem}: '{line.strip()}' needs Linux but is not under 'if not {flag}: print({note}) else:'")
                assert lines[guard + 1].strip() == f"print({note})"
                guarded += 1
    assert guarded >= 3


def test_lesson_07_asks_for_torch_through_require_torch_first():
    first = code_cells("07_migrate_resnet_from_pytorch")[0]
    assert "import torch" not in first and "torch = require_torch()" in first
    assert first.index("torch = require_torch()") < first.index("torch.set_num_threads")
