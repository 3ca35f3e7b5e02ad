"""The lint configuration keeps its promises: ruff's S rules (and the banned yaml loaders) catch unsafe code, the
lint step catches numpy's allow_pickle, and the pre-commit hooks are the pinned tools with the right options."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_cli  # noqa: E402

UNSAFE = '''import pickle

import yaml


def load_everything(path, text):
    a = pickle.loads(text)
    b = yaml.load(text)
    c = yaml.full_load(text)
    d = yaml.unsafe_load(text)
    e = eval(text)
    exec(text)
    return a, b, c, d, e
'''


def ruff_codes(source, filename):
    """The rule codes ruff, with the repo's pyproject.toml, reports on ``source`` as if it were ``filename``."""
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "--no-cache",
                             "--stdin-filename", filename, "-"], input=source, capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode in (0, 1), result.stderr
    return sorted({line.split(": ", 1)[1].split()[0] for line in result.stdout.splitlines() if ": " in line and
                   line.startswith(filename)})


@pytest.mark.parametrize("filename", ["course_lib/unsafe.py", "tools/unsafe.py", "scripts/unsafe.py"])
def test_ruff_catches_unsafe_deserialisation_and_eval_exec(filename):
    # S301 pickle, S506 yaml.load, TID251 yaml.full_load/unsafe_load, S307 eval, S102 exec
    assert ruff_codes(UNSAFE, filename) == ["S102", "S301", "S307", "S506", "TID251"]


def test_course_lib_imports_are_sorted_in_their_own_section_after_third_party():
    use = "\n\nprint(os, numpy, course_lib)\n"
    assert ruff_codes("import course_lib.paths\nimport numpy\nimport os" + use, "tools/sorting.py") == ["I001"]
    assert ruff_codes("import os\n\nimport numpy\n\nimport course_lib.paths" + use, "tools/sorting.py") == []
    # the bare import that sets environment defaults stays above mindspore with `# isort: skip`
    first = "import course_lib  # isort: skip\nimport os\n\nimport mindspore\n\nprint(os, mindspore)\n"
    assert ruff_codes(first, "tools/sorting.py") == []


def test_lint_finds_allow_pickle_which_no_ruff_rule_does(tmp_path, monkeypatch):
    (tmp_path / "course_lib").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "course_lib" / "ok.py").write_text("import numpy as np\nnp.load('x.npy')\n")
    (tmp_path / "notebooks" / "01_x.ipynb").write_text('{"source": ["np.load(p, allow_pickle = True)"]}\n')
    assert course_cli.unsafe_lines(str(tmp_path)) == [
        os.path.join("notebooks", "01_x.ipynb") + ":1: numpy with allow_pickle on (it then unpickles arbitrary "
        "objects). Fix: save and load arrays, not objects"]
    monkeypatch.setattr(course_cli, "ROOT", str(tmp_path))
    monkeypatch.setattr(course_cli, "run", lambda command, env=None, cwd=None, check=True: 0)
    with pytest.raises(course_cli.CourseError, match=r"unsafe code:\n  notebooks.01_x.ipynb:1: numpy with"):
        course_cli.cmd_lint(None, course_cli.Environment("py"))


def test_the_course_itself_has_no_allow_pickle():
    assert course_cli.unsafe_lines(str(ROOT)) == []


def requirement_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"([A-Za-z0-9_.-]+)==([^\s;#]+)", line)
        if match:
            pins[match[1].lower()] = match[2]
    return pins


def test_pre_commit_hooks_are_local_pinned_and_keep_the_notebooks_outputs():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"]  # no hook repository to fetch from GitHub
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert sorted(hooks) == ["codespell", "nbstripout", "no-allow-pickle", "ruff"]
    # notebooks are committed executed: outputs, counts and ids stay (tools/execute_notebook.py writes them)
    assert hooks["nbstripout"]["entry"].split() == ["nbstripout", "--keep-output", "--keep-count", "--keep-id"]
    assert hooks["nbstripout"]["types"] == ["jupyter"]
    pins = requirement_pins()
    for hook in hooks.values():
        for requirement in hook.get("additional_dependencies", []):
            name, version = re.fullmatch(r"([\w-]+)==([\w.]+)(;.*)?", requirement).group(1, 2)  # pinned
            if name in pins:  # the same version as `python course.py lint` uses
                assert pins[name] == version, (hook["id"], requirement, pins[name])
    assert {"ruff", "codespell"} <= set(pins)
    assert hooks["ruff"]["entry"].split()[:2] == ["ruff", "check"]
    pickle_hook = re.compile(hooks["no-allow-pickle"]["entry"])
    assert [pattern.pattern for pattern in course_cli.UNSAFE_PATTERNS.values()] == [pickle_hook.pattern]
    assert pickle_hook.search("np.load(path, allow_pickle = True)") and not pickle_hook.search("np.load(path)")
