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
            "from course_lib.data import create_mnist_dataset\n",
            "net = nn.Dense(2, 3)\nms.set_seed(1)\nms.set_seed(2)\ny = ops.relu(net(x))\n"
            "ds = create_mnist_dataset()\ncourse_lib.paths.lesson_dir('x')\n"]
    names = lesson_stats.api_names(code)
    assert names["mindspore"] == {"mindspore.nn.Dense", "mindspore.set_seed", "mindspore.ops.relu"}
    assert names["course_lib"] == {"course_lib.data.create_mnist_dataset", "course_lib.paths.lesson_dir"}


def test_seed_mentions_and_limits(tmp_path):
    _notebook(tmp_path, "00_a.ipynb", markdown=["As seed 003 says, and seeds 001/004 too. A random seed is fine."],
              code=["import mindspore as ms\nms.set_seed(1)\n"])
    _notebook(tmp_path, "A1_b.ipynb", markdown=["word " * 2000])
    stats = lesson_stats.all_stats(tmp_path)
    assert [row["seed_mentions"] for row in stats] == [2, 0]
    assert [row["main"] for row in stats] == [True, False]
    assert lesson_stats.problems(stats) == []          # the long one is an appendix
    _notebook(tmp_path, "01_c.ipynb", markdown=["word " * 1501], code=["import course_lib\ncourse_lib.x()\n"])
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
