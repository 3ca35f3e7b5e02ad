"""No command that (re)generates the course's notebooks ever overwrites or deletes a learner's work.

Student/instructor editions (tools/make_editions.py), the Chinese edition (tools/translate.py), `make clean`
(tools/clean.py); the rule lives in tools/generated.py.
"""
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from babel.messages.catalog import Message

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import clean  # noqa: E402
import generated  # noqa: E402
import make_editions  # noqa: E402
import pofiles  # noqa: E402
import translate  # noqa: E402

from course_lib import staging  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIRST, SECOND = NOTEBOOKS[0].name, NOTEBOOKS[1].name
MINE = "我的 笔记 (notes).txt"          # a learner's own file: Chinese characters, spaces, brackets
MY_NOTEBOOK = "练习 答案 v2.ipynb"       # a learner's own notebook, no generation record


def edit(path: Path, how: str) -> str:
    """Change a generated notebook as a learner would; returns its new text."""
    nb = nbformat.read(path, as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    if how == "edit":
        code.source += "\nanswer = 42  # mine"
    elif how == "add-cells":
        nb.cells.append(nbformat.v4.new_markdown_cell("我的笔记: my own cell", id="mine-1"))
        nb.cells.append(nbformat.v4.new_code_cell("print('mine')", id="mine-2"))
    elif how == "run":  # only ran it: outputs and execution counts, the source untouched
        code.execution_count = 1
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    elif how == "markdown":
        md = next(c for c in nb.cells if c.cell_type == "markdown")
        md.source += "\n\n我加的一句话。"
    nbformat.write(nb, path)
    return path.read_text(encoding="utf-8")


def dead_pid() -> int:
    """The id of a process that has ended (deterministic: we waited for it)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    return int(child.stdout)


def leftovers(folder: Path) -> list:
    return [p.name for p in folder.parent.iterdir() if ".rebuild-" in p.name or p.name.endswith(".tmp")]


@pytest.fixture
def course_changed(monkeypatch):
    """The course's next version of every student notebook differs (a new last cell), as after a `git pull`."""
    plain = make_editions.student_notebook

    def newer(nb):
        nb = plain(nb)
        nb.cells.append(nbformat.v4.new_markdown_cell("A paragraph added to the course later.", id="added-later"))
        return nb
    return lambda: monkeypatch.setattr(make_editions, "student_notebook", newer)


def test_every_generated_notebook_records_its_source_and_content_hash(tmp_path):
    out = make_editions.build("student", tmp_path / "student")
    for path in [*out.glob("*.ipynb"), *(out / "zh").glob("*.ipynb")]:
        record = json.loads(path.read_text(encoding="utf-8"))["metadata"][generated.RECORD]
        assert record["from"] == [f"notebooks/{'zh/' if path.parent.name == 'zh' else ''}{path.name}"]
        assert record["content_sha256"] == generated.content_sha(nbformat.read(path, as_version=4))
    assert generated.is_unchanged_notebook(out / FIRST)


@pytest.mark.parametrize("how", ["edit", "add-cells", "run", "markdown"])
@pytest.mark.parametrize("keep_edits", [False, True], ids=["make-student", "lab-student"])
def test_a_changed_notebook_is_kept_and_the_new_version_written_beside_it(tmp_path, capsys, course_changed, how,
                                                                         keep_edits):
    out = make_editions.build("student", tmp_path / "student")
    mine = edit(out / FIRST, how)
    (out / MINE).write_text("我的", encoding="utf-8")
    (out / MY_NOTEBOOK).write_text(mine, encoding="utf-8")
    course_changed()
    make_editions.build("student", out, keep_edits=keep_edits)
    assert (out / FIRST).read_text(encoding="utf-8") == mine  # the learner's, byte for byte
    assert (out / MINE).read_text(encoding="utf-8") == "我的" and (out / MY_NOTEBOOK).read_text() == mine
    new = out / FIRST.replace(".ipynb", ".new.ipynb")
    assert "added to the course later" in new.read_text(encoding="utf-8")
    assert "added to the course later" in (out / SECOND).read_text(encoding="utf-8")  # unchanged: replaced
    said = capsys.readouterr().out
    assert f"kept your changed {out / FIRST}" in said and new.name in said
    assert not leftovers(out)


def test_two_rebuilds_back_to_back_keep_the_learners_work_and_add_nothing(tmp_path, capsys, course_changed):
    out = make_editions.build("student", tmp_path / "student")
    mine = edit(out / FIRST, "edit")
    course_changed()
    make_editions.build("student", out)
    files = sorted(p.name for p in out.iterdir())
    new_version = (out / FIRST.replace(".ipynb", ".new.ipynb")).read_text()
    make_editions.build("student", out)
    assert sorted(p.name for p in out.iterdir()) == files  # no NAME.new-2: the .new copy was the course's
    assert (out / FIRST).read_text() == mine and (out / FIRST.replace(".ipynb", ".new.ipynb")).read_text() == \
        new_version
    assert not leftovers(out)
    (out / FIRST).unlink()  # the learner wants the course's version: delete and rebuild
    make_editions.build("student", out)
    assert generated.is_unchanged_notebook(out / FIRST)
    assert not (out / FIRST.replace(".ipynb", ".new.ipynb")).exists()  # no longer needed, and the course's


def test_a_learners_new_file_beside_is_never_taken_either(tmp_path, course_changed):
    out = make_editions.build("student", tmp_path / "student")
    edit(out / FIRST, "edit")
    (out / FIRST.replace(".ipynb", ".new.ipynb")).write_text("mine too")
    course_changed()
    make_editions.build("student", out)
    assert (out / FIRST.replace(".ipynb", ".new.ipynb")).read_text() == "mine too"
    assert "added to the course later" in (out / FIRST.replace(".ipynb", ".new-2.ipynb")).read_text()


def test_lab_student_works_in_my_work_not_in_a_disposable_folder_and_moves_old_work_there(tmp_path, monkeypatch,
                                                                                       capsys):
    assert make_editions.STUDENT_WORK.relative_to(ROOT).parts[0] not in ("build", "outputs")
    ignored = subprocess.run(["git", "check-ignore", "-q", "my-work/student/x.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "my-work/ must be in .gitignore"
    # an older version's build/student/: a flat manifest, the learner's edited notebook and notes, no records
    old = tmp_path / "build" / "student"
    old.mkdir(parents=True)
    source = nbformat.read(NOTEBOOKS[0], as_version=4)
    plain = nbformat.writes(make_editions.student_notebook(source))
    (old / SECOND).write_text(plain)
    (old / FIRST).write_text(plain.replace("answer_00_1 = ...", "answer_00_1 = 7"))
    (old / MINE).write_text("我的")
    (old / ".edition-manifest.json").write_text(json.dumps({FIRST: generated.file_sha(old / SECOND),
                                                            SECOND: generated.file_sha(old / SECOND)}))
    work = tmp_path / "my-work" / "student"
    monkeypatch.setattr(make_editions, "STUDENT_WORK", work)
    monkeypatch.setattr(make_editions, "OLD_STUDENT_WORK", old)
    assert make_editions.build("student", keep_edits=True) == work
    assert "answer_00_1 = 7" in (work / FIRST).read_text() and (work / MINE).read_text() == "我的"
    assert not (old / FIRST).exists() and not (old / MINE).exists()  # moved, not copied: one place to work in
    assert generated.is_unchanged_notebook(work / SECOND)
    assert "moved your 2 file(s)" in capsys.readouterr().out


def test_lab_student_opens_the_learners_folder():
    dry_run = subprocess.run([sys.executable, str(ROOT / "course.py"), "--dry-run", "lab-student"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
    lines = dry_run.stdout.splitlines()
    build = next(i for i, line in enumerate(lines) if "make_editions.py student" in line)
    lab = next(i for i, line in enumerate(lines) if "jupyter" in line and "lab" in line and i > build)
    lab = lines[lab]
    assert f"--notebook-dir={make_editions.STUDENT_WORK.relative_to(ROOT).as_posix()}" in lab


def test_old_style_interrupted_rebuild_is_recovered_not_deleted(tmp_path, capsys):
    """The issue's case: Ctrl-C during the old rebuild left build/student.tmp as the only full copy."""
    out = make_editions.build("student", tmp_path / "student")
    mine = edit(out / FIRST, "edit")
    half = out.with_name("student.tmp")  # the old code's staging, learner's copies inside
    out.rename(half)
    (half / MINE).write_text("我的")
    (out / "zh").mkdir(parents=True)  # the old code had begun deleting student/
    make_editions.build("student", out)
    assert (out / FIRST).read_text() == mine and (out / MINE).read_text() == "我的"
    assert generated.is_unchanged_notebook(out / SECOND) and not half.exists()
    assert "moved your 2 file(s)" in capsys.readouterr().out


def test_a_killed_rebuild_is_recovered_at_the_next_start(tmp_path):
    """kill -9 half-way through the moves: a child process is killed (os._exit) after moving some files."""
    out = make_editions.build("student", tmp_path / "student")
    mine = edit(out / FIRST, "edit")
    (out / MINE).write_text("我的")
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT / 'tools')!r})
import generated, make_editions
real, moves = os.replace, []
def replace(a, b):
    moves.append(b)
    if len(moves) == 6:
        os._exit(9)  # as kill -9: no cleanup, no finally
    real(a, b)
generated.os.replace = replace
plain = make_editions.student_notebook
def newer(nb):
    nb = plain(nb)
    nb.cells.append(make_editions.nbformat.v4.new_markdown_cell("added later"))
    return nb
make_editions.student_notebook = newer
make_editions.build("student", {str(out)!r})
"""
    assert subprocess.run([sys.executable, "-c", script], cwd=tmp_path).returncode == 9
    stale = [p for p in out.parent.iterdir() if ".rebuild-" in p.name]
    assert len(stale) == 1 and any(stale[0].rglob("*.ipynb"))  # the killed run's folder, with files
    make_editions.build("student", out)  # the next start
    assert (out / FIRST).read_text() == mine and (out / MINE).read_text() == "我的"
    assert all(generated.is_unchanged_notebook(out / n.name) for n in NOTEBOOKS[1:])
    assert not leftovers(out)


def test_ctrl_c_during_a_rebuild_leaves_whole_files_and_the_next_one_finishes(tmp_path, monkeypatch,
                                                                              course_changed):
    out = make_editions.build("student", tmp_path / "student")
    mine = edit(out / FIRST, "edit")
    real, moves = os.replace, []

    def interrupted(a, b):
        moves.append(b)
        if len(moves) == 4:
            raise KeyboardInterrupt
        real(a, b)
    course_changed()
    monkeypatch.setattr(generated.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make_editions.build("student", out)
    monkeypatch.setattr(generated.os, "replace", real)
    for notebook in NOTEBOOKS:  # every file whole: the old or the new version, never missing or half-written
        nbformat.read(out / notebook.name, as_version=4)
    make_editions.build("student", out)
    assert (out / FIRST).read_text() == mine
    assert all("added to the course later" in (out / n.name).read_text() for n in NOTEBOOKS[1:])
    assert not leftovers(out)


def test_a_second_rebuild_while_one_runs_is_refused(tmp_path):
    out = make_editions.build("student", tmp_path / "student")
    running = staging.claim(tmp_path, ".student.rebuild-")  # this (live) process's record
    with pytest.raises(generated.RebuildRunning, match="Fix: wait"):
        make_editions.build("student", out)
    staging.release(running)


def test_lab_student_rebuild_on_a_full_disk_prints_one_message(tmp_path, monkeypatch, capsys):
    out = make_editions.build("student", tmp_path / "student")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    real_write = Path.write_text

    def full_disk(self, data, *args, **kwargs):
        if self.suffix == ".ipynb" and len(list(self.parent.glob("*.ipynb"))) >= 3:
            real_write(self, data[: len(data) // 2], *args, **kwargs)  # half a file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, data, *args, **kwargs)
    monkeypatch.setattr(make_editions, "STUDENT_WORK", out)
    monkeypatch.setattr(make_editions, "OLD_STUDENT_WORK", tmp_path / "none")
    monkeypatch.setattr(Path, "write_text", full_disk)
    assert make_editions.main(["student", "--keep-edits"]) == 1
    err = capsys.readouterr().err
    assert "Not enough disk space" in err and str(tmp_path) in err and "MB" in err and "Fix:" in err
    assert "Nothing in" in err and "Traceback" not in err
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not leftovers(out)


def test_student_bundle_keeps_working_and_keeps_a_changed_file(tmp_path, capsys):
    bundle = make_editions.build_bundle(tmp_path / "course-student", wheelhouse=False)
    (bundle / "notebooks" / MINE).write_text("我的")
    mine = edit(bundle / "notebooks" / FIRST, "run")
    (bundle / "Makefile").write_text((bundle / "Makefile").read_text() + "\n# my own target\n")
    makefile = (bundle / "Makefile").read_text()
    for _ in range(2):  # back to back: the course's Makefile did not change, so nothing is written beside it
        make_editions.build_bundle(bundle, wheelhouse=False)
        assert (bundle / "notebooks" / MINE).read_text() == "我的"
        assert (bundle / "notebooks" / FIRST).read_text() == mine and (bundle / "Makefile").read_text() == makefile
        assert not (bundle / "Makefile.new").exists() and not (bundle / "solutions").exists()
        assert not leftovers(bundle)


# ------------------------------------------------------------------------------------ the Chinese edition
@pytest.fixture
def zh_course(tmp_path, monkeypatch):
    """A scratch zh edition of two lessons, catalogs complete."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (tmp_path / "catalogs").mkdir()
    for path in NOTEBOOKS[:2]:
        nb = nbformat.read(path, as_version=4)
        nbformat.write(nb, notebooks / path.name)
        catalog = translate.new_catalog(path.stem)
        for c in nb.cells:
            if c.cell_type == "markdown":
                catalog[c.source] = Message(c.source, "中文：" + c.source, context=str(c.id))
            elif c.cell_type == "code":
                for _, _, token in translate.code_comments(c.source):
                    text = translate.comment_text(token)
                    catalog[text] = Message(text, "中文注释：" + text, context=translate.COMMENT)
        pofiles.write(catalog, tmp_path / "catalogs" / f"{path.stem}.po")
    monkeypatch.setattr(translate, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(translate, "CATALOGS", tmp_path / "catalogs")
    monkeypatch.setattr(translate, "OUT", notebooks / "zh")
    return notebooks / "zh"


@pytest.mark.parametrize("how", ["markdown", "add-cells", "run", "edit"])
@pytest.mark.parametrize("keep_edits", [False, True], ids=["make-zh", "lab-zh"])
def test_zh_build_never_overwrites_a_learners_zh_notebook(zh_course, how, keep_edits):
    translate.build()
    mine = edit(zh_course / FIRST, how)
    catalog = translate.CATALOGS / f"{NOTEBOOKS[0].stem}.po"  # the translation improves meanwhile
    catalog.write_text(catalog.read_text(encoding="utf-8").replace("中文：", "中文版："), encoding="utf-8")
    said = []
    written = translate.build(keep_edits=keep_edits, report=said.append)
    assert (zh_course / FIRST).read_text(encoding="utf-8") == mine
    assert "中文版：" in (zh_course / FIRST.replace(".ipynb", ".new.ipynb")).read_text(encoding="utf-8")
    assert zh_course / SECOND in written and zh_course / FIRST not in written
    assert any(line.startswith("kept your changed") for line in said)
    assert not [p for p in zh_course.parent.iterdir() if ".rebuild-" in p.name]


def test_zh_notebook_without_a_record_is_the_learners_unless_git_has_it_unchanged(zh_course, tmp_path):
    translate.build()
    nb = json.loads((zh_course / FIRST).read_text(encoding="utf-8"))
    del nb["metadata"][generated.RECORD]  # as generated before records existed, then changed
    nb["cells"].append({"cell_type": "markdown", "id": "mine", "metadata": {}, "source": "我的"})
    (zh_course / FIRST).write_text(json.dumps(nb), encoding="utf-8")
    mine = (zh_course / FIRST).read_text(encoding="utf-8")
    translate.build()
    assert (zh_course / FIRST).read_text(encoding="utf-8") == mine
    assert not generated.git_unmodified(zh_course / FIRST)  # outside git: no proof it is the course's
    committed = ROOT / "notebooks" / "zh" / FIRST
    assert generated.git_unmodified(committed) or generated.is_unchanged_notebook(committed)


# ------------------------------------------------------------------------------------------ make clean
def test_clean_removes_only_what_the_course_generated(tmp_path, capsys):
    root = tmp_path / "课程 checkout"
    out = make_editions.build("student", root / "build" / "student")
    mine = edit(out / FIRST, "run")
    (out / "zh" / MINE).write_text("我的")
    (root / "build" / "site").mkdir()
    (root / "build" / "site" / "index.html").write_text("<html>")
    (root / "build" / "nbval-second-run.x").mkdir()
    (root / "build" / "nbval-second-run.x" / SECOND).write_bytes(NOTEBOOKS[1].read_bytes())  # a test copy
    (root / "build" / "loose.ipynb").write_text("{}")  # a notebook nobody generated: someone's
    (root / "outputs" / "03").mkdir(parents=True)
    (root / "outputs" / "03" / "lenet.ckpt").write_bytes(b"x")
    (root / ".pytest_cache").mkdir()
    (root / "my-work" / "student").mkdir(parents=True)
    (root / "my-work" / "student" / FIRST).write_text("anything")
    clean.clean(root)
    said = capsys.readouterr().out
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert left == sorted(["build/loose.ipynb", f"build/student/{FIRST}", f"build/student/zh/{MINE}",
                           "build/student/.edition-manifest.json", f"my-work/student/{FIRST}"])
    assert (out / FIRST).read_text() == mine
    assert "removed" in said and f"kept {root / 'build' / 'student' / 'zh' / MINE}" in said
    clean.clean(root)  # a second clean still knows the notes are the learner's
    assert (out / "zh" / MINE).read_text() == "我的" and (out / FIRST).read_text() == mine


def test_clean_cli_dry_run_removes_nothing(tmp_path):
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "x").write_text("x")
    removed, kept = clean.clean(tmp_path, dry_run=True, report=lambda _: None)
    assert removed == [tmp_path / "outputs"] and (tmp_path / "outputs" / "x").exists() and not kept
    assert clean.main(["--bogus"]) == 2


def test_dead_pid_helper_and_stale_records(tmp_path):
    folder = staging.claim(tmp_path, ".x-")
    assert staging.owner_alive(folder) and not staging.stale_folders(tmp_path, ".x-")
    record = json.loads((folder / staging.OWNER).read_text())
    record["pid"] = dead_pid()
    (folder / staging.OWNER).write_text(json.dumps(record))
    assert staging.stale_folders(tmp_path, ".x-") == [folder]
    record["host"] = "another-machine"
    (folder / staging.OWNER).write_text(json.dumps(record))
    assert not staging.stale_folders(tmp_path, ".x-")  # cannot prove it: left alone


@pytest.mark.parametrize("edition", ["instructor", "student"])
def test_a_notebook_only_opened_and_saved_again_is_still_the_courses(tmp_path, edition):
    """JupyterLab may store strings as lists of lines or indent differently: same cells, so still the course's."""
    out = make_editions.build(edition, tmp_path / edition)
    for path in sorted(out.glob("*.ipynb"))[:3]:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else \
                cell["source"].splitlines(True)
            for output in cell.get("outputs", []):
                if isinstance(output.get("text"), list):
                    output["text"] = "".join(output["text"])
        path.write_text(json.dumps(nb, indent=2, ensure_ascii=True), encoding="utf-8")
        assert generated.is_unchanged_notebook(path), path.name
    nb = nbformat.read(out / FIRST, as_version=4)
    assert any(c.get("outputs") for c in nb.cells) == (edition == "instructor")
    make_editions.build(edition, out)
    assert not list(out.glob("*.new.ipynb"))  # replaced, nothing kept beside


def test_clean_runs_without_the_course_packages_and_removes_a_killed_datagens_folder(tmp_path):
    """`make clean` must work before `make install` (no nbformat, no psutil), and clears stale temp folders."""
    root = tmp_path / "checkout"
    out = make_editions.build("student", root / "build" / "student")
    edit(out / FIRST, "run")
    killed = staging.claim(root, staging.DATAGEN_PREFIX)
    record = json.loads((killed / staging.OWNER).read_text())
    record["pid"] = dead_pid()
    (killed / staging.OWNER).write_text(json.dumps(record))
    live = staging.claim(root, staging.DATAGEN_PREFIX)  # this process: in use
    script = (f"import runpy, sys\nfor name in ('nbformat', 'psutil', 'numpy', 'mindspore'):\n"
              f"    sys.modules[name] = None\n"
              f"ns = runpy.run_path({str(ROOT / 'tools' / 'clean.py')!r})\n"
              f"ns['clean']({str(root)!r})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not killed.exists() and live.is_dir() and (out / FIRST).is_file()
    assert not [p for p in out.iterdir() if p.name not in (FIRST, generated.MANIFEST)]
