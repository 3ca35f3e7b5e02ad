"""tools/lesson_stats.py: its counting rules on small examples, and the learner-path limits on the real lessons."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import lesson_stats  # noqa: E402


def _notebook(tmp_path, name, markdown=(), code=()):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": m} for m in markdown]
    cells += [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None}
              for c in code]
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_prose_words_count_every_markdown_word_but_not_fenced_code_or_chinese():
    text = ("Train a `nn.Dense` [layer](https://x.org/a/b) 图模式 (don't stop).\n"
            "```python\nx = one + two\n```\n<img src='a.png'>")
    # Train, a, nn, Dense, layer, https, x, org, a, b, don't, stop, img, src, a, png  (图模式 and the fence: none)
    assert lesson_stats.prose_words(text) == 16


def test_recall_answers_and_link_targets_count_towards_a_lesson(tmp_path):
    answer = {"cell_type": "markdown", "metadata": {"tags": ["solution"]}, "source": "Answer: four words here"}
    path = _notebook(tmp_path, "03_x.ipynb", ["See [docs](https://www.mindspore.cn/docs)"], [])
    notebook = json.loads(path.read_text())
    notebook["cells"].append(answer)
    path.write_text(json.dumps(notebook))
    # See, docs, https, www, mindspore, cn, docs + Answer, four, words, here
    assert lesson_stats.notebook_stats(path)["prose_words"] == 11


def test_code_lines_skip_blank_comment_and_magic_lines():
    assert lesson_stats.code_lines("import x\n\n# note\n%matplotlib inline\ny = 2\n") == 2


def test_api_names_count_distinct_mindspore_and_course_lib_names():
    code = ["import course_lib\nimport mindspore as ms\nfrom mindspore import nn, ops\n"
            "from course_lib.data.datasets import create_mnist_dataset\n",
            "net = nn.Dense(2, 3)\nms.set_seed(1)\nms.set_seed(2)\ny = ops.relu(net(x))\n"
            "ds = create_mnist_dataset()\ncourse_lib.paths.lesson_dir('x')\n"]
    names = lesson_stats.api_names(code)
    assert names["mindspore"] == {"mindspore.nn.Dense", "mindspore.set_seed", "mindspore.ops.relu"}
    assert names["course_lib"] == {"course_lib.data.datasets.create_mnist_dataset", "course_lib.paths.lesson_dir"}


def test_seed_mentions_and_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(lesson_stats, "_run_seconds", lambda stem: 1.0)
    _notebook(tmp_path, "00_a.ipynb", markdown=["As seed 003 says, and seeds 001/004 too. A random seed is fine.",
                                                "**Exercise 00.1** (core, ★, 5 min) — one"],
              code=["import mindspore as ms\nms.set_seed(1)\n"])
    _notebook(tmp_path, "A1_b.ipynb", markdown=["word " * 2000])
    stats = lesson_stats.all_stats(tmp_path)
    assert [row["seed_mentions"] for row in stats] == [2, 0]
    assert [row["main"] for row in stats] == [True, False]
    assert lesson_stats.problems(stats) == []          # the long one is an appendix
    _notebook(tmp_path, "01_c.ipynb", markdown=["word " * 1497, "**Exercise 01.1** (core, ★, 5 min) — one"],
              code=["import course_lib\ncourse_lib.x()\n"])
    found = lesson_stats.problems(lesson_stats.all_stats(tmp_path))
    assert any("01_c: 1501 prose words" in line for line in found)
    assert any("01_c: 0 MindSpore names < 1 course_lib names" in line for line in found)


def test_cli_rejects_a_missing_folder(tmp_path, capsys):
    with pytest.raises(SystemExit):
        lesson_stats.main(["--folder", str(tmp_path / "nope")])
    assert "is not a folder of notebooks" in capsys.readouterr().err


def test_the_course_meets_the_learner_path_limits():
    stats = lesson_stats.all_stats()
    assert lesson_stats.problems(stats) == []
    assert any(row["main"] for row in stats)


# --- core path (issue "a learner's day"): core exercises, reading without optional exercises, run time ------------
def _cell(kind, source, tags=()):
    cell = {"cell_type": kind, "metadata": {"tags": list(tags)} if tags else {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _write(tmp_path, name, cells):
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _lesson(tmp_path, name, core_minutes=10, optional_words=240, lesson_words=120):
    return _write(tmp_path, name, [
        _cell("markdown", "word " * lesson_words),
        _cell("code", "import mindspore as ms\nms.set_seed(1)\n"),
        _cell("markdown", f"**Exercise {name[:2]}.1** (core, ★, {core_minutes} min) — do it"),
        _cell("code", "answer = ...\n", ["exercise"]),
        _cell("code", "answer = 1\n" * 16, ["solution"]),          # 16 lines: 2 minutes if counted
        _cell("markdown", f"**Exercise {name[:2]}.2** ★★ (about 15 min) — " + "word " * optional_words),
        _cell("code", "x = 1\n" * 8),                             # the optional exercise's cell: not counted
        _cell("markdown", "**Recall answers**\n" + "word " * 120, ["solution"]),
    ])


def test_exercise_markers_core_and_optional(tmp_path):
    notebook = json.loads(_lesson(tmp_path, "03_x.ipynb").read_text())
    found, bad = lesson_stats.exercises(notebook)
    assert found == [{"id": "03.1", "core": True, "stars": 1, "minutes": 10},
                     {"id": "03.2", "core": False, "stars": 2, "minutes": None}] and bad == []
    notebook["cells"].append(_cell("markdown", "**Exercise 03.3** core ★ (10 min) — wrong form"))
    assert lesson_stats.exercises(notebook)[1] == ["**Exercise 03.3** core ★ (10 min)"]


def test_core_reading_leaves_out_solutions_recall_answers_and_optional_exercises(tmp_path):
    notebook = json.loads(_lesson(tmp_path, "03_x.ipynb").read_text())
    # read: 120 words + "Exercise core min do it" (5 words; 03.1 is no word) + 2 code lines + placeholder (1 line)
    assert lesson_stats.core_reading_minutes(notebook) == pytest.approx(125 / 120 + 3 / 8)


def test_core_path_adds_core_minutes_and_run_time_and_is_limited(tmp_path, monkeypatch):
    monkeypatch.setattr(lesson_stats, "_run_seconds", lambda stem: 120.0)
    row = lesson_stats.notebook_stats(_lesson(tmp_path, "03_x.ipynb", core_minutes=10))
    assert row["core_exercises"] == ["03.1"] and row["run_seconds"] == 120.0
    assert row["core_path_minutes"] == pytest.approx(125 / 120 + 3 / 8 + 10 + 2, abs=0.05)
    assert lesson_stats.problems([row]) == []
    for number in range(10):  # ten lessons of 40 min each: 400 > 300
        _lesson(tmp_path, f"{number:02d}_y.ipynb", core_minutes=37)
    found = lesson_stats.problems(lesson_stats.all_stats(tmp_path))
    assert any(line.startswith("core path ") and "(limit 300)" in line for line in found)


def test_a_main_lesson_needs_one_or_two_core_exercises_and_a_run_time(tmp_path, monkeypatch):
    monkeypatch.setattr(lesson_stats, "_run_seconds", lambda stem: None)
    path = _write(tmp_path, "04_z.ipynb", [_cell("markdown", "**Exercise 04.1** ★ (5 min) — optional only")])
    found = lesson_stats.problems([lesson_stats.notebook_stats(path)])
    assert any("04_z: 0 core exercises" in line for line in found)
    assert any("04_z: no run time in benchmarks/results.json" in line for line in found)
    appendix = _write(tmp_path, "A1_z.ipynb", [_cell("markdown", "no exercises")])
    assert lesson_stats.problems([lesson_stats.notebook_stats(appendix)]) == []


def test_run_seconds_come_from_the_benchmark_results(tmp_path):
    from course_lib.lab.results import run_seconds

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"records": [{"notebook": "03_x.ipynb", "seconds": 12.5},
                                               {"notebook": "04_y", "seconds": 3.0, "status": "failed"}]}))
    assert run_seconds("03_x", results) == 12.5 and run_seconds("04_y", results) is None
    assert run_seconds("03_x", tmp_path / "missing.json") is None
