"""tools/make_bundles.py: per-platform learner bundles, their wheelhouse check, and their README.

The checks run on small fake wheels (a filename and a METADATA file), so no test downloads anything."""
import io
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_bundles  # noqa: E402

LINUX, WINDOWS, MAC_ARM = (make_bundles.PLATFORMS[n] for n in ("linux-x86_64", "windows-amd64", "macos-arm64"))

REQUIREMENTS = 'app==1.0\nlib==2.0; python_version >= "3.11"\nlib==1.5; python_version < "3.11"\n'
CONSTRAINTS = ('app==1.0\nlib==2.0; python_version >= "3.11"\nlib==1.5; python_version < "3.11"\n'
               'winpty==3.0\nsoup==2.0; python_full_version < "3.11.5"\nsoup==4.0; python_full_version >= "3.11.5"\n'
               'setuptools==80.0\nfast==1.0\n')


def wheel_bytes(name: str, version: str, requires=()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        metadata += "".join(f"Requires-Dist: {line}\n" for line in requires)
        wheel.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
    return buffer.getvalue()


#: app needs lib, soup (any version the constraints pin), fast (compiled) and, on Windows only, winpty.
APP = ["lib", "soup", "fast", 'winpty; os_name == "nt"', 'extra-only; extra == "docs"']


def fake_wheelhouse(folder: Path, platform_tag: str, skip=()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheels = {"app-1.0-py3-none-any.whl": wheel_bytes("app", "1.0", APP),
              "lib-2.0-py3-none-any.whl": wheel_bytes("lib", "2.0"),
              "soup-2.0-py3-none-any.whl": wheel_bytes("soup", "2.0"),
              "soup-4.0-py3-none-any.whl": wheel_bytes("soup", "4.0"),
              f"fast-1.0-cp311-cp311-{platform_tag}.whl": wheel_bytes("fast", "1.0"),
              "setuptools-80.0-py3-none-any.whl": wheel_bytes("setuptools", "80.0")}
    if platform_tag == "win_amd64":
        wheels["winpty-3.0-cp311-cp311-win_amd64.whl"] = wheel_bytes("winpty", "3.0")
    for name, data in wheels.items():
        if not any(name.startswith(s) for s in skip):
            (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def pins(tmp_path):
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    (tmp_path / "constraints.txt").write_text(CONSTRAINTS)
    return tmp_path


def check(folder, platform, pins, python="3.11"):
    return make_bundles.check_wheels(make_bundles.wheels_in_folder(folder), platform, python,
                                     [pins / "requirements.txt"], pins / "constraints.txt")


def test_markers_are_evaluated_for_the_target_not_for_this_machine(pins):
    on_310 = make_bundles.read_pins(pins / "constraints.txt", make_bundles.marker_env(WINDOWS, "3.10"))
    on_311 = make_bundles.read_pins(pins / "constraints.txt", make_bundles.marker_env(WINDOWS, "3.11"))
    assert str(on_310["lib"].specifier) == "==1.5" and str(on_311["lib"].specifier) == "==2.0"
    first = make_bundles.read_pins(pins / "constraints.txt", make_bundles.marker_env(LINUX, "3.11", "0"))
    newest = make_bundles.read_pins(pins / "constraints.txt", make_bundles.marker_env(LINUX, "3.11", "99"))
    assert str(first["soup"].specifier) == "==2.0" and str(newest["soup"].specifier) == "==4.0"


def test_a_complete_wheelhouse_passes_on_each_platform(tmp_path, pins):
    assert check(fake_wheelhouse(tmp_path / "lin", "manylinux_2_17_x86_64"), LINUX, pins) == []
    assert check(fake_wheelhouse(tmp_path / "win", "win_amd64"), WINDOWS, pins) == []
    assert check(fake_wheelhouse(tmp_path / "mac", "macosx_11_0_arm64"), MAC_ARM, pins) == []


def test_a_windows_only_dependency_is_required_on_windows_only(tmp_path, pins):
    assert check(fake_wheelhouse(tmp_path / "lin", "manylinux_2_17_x86_64", skip=("winpty",)), LINUX, pins) == []
    problems = check(fake_wheelhouse(tmp_path / "win", "win_amd64", skip=("winpty",)), WINDOWS, pins)
    assert problems == ["missing: winpty==3.0 (no wheel for windows-amd64, Python 3.11.0)"]


def test_every_patch_release_needs_its_pinned_version(tmp_path, pins):
    problems = check(fake_wheelhouse(tmp_path / "lin", "manylinux_2_17_x86_64", skip=("soup-4",)), LINUX, pins)
    assert problems == ["missing: soup==4.0 (no wheel for linux-x86_64, Python 3.11.99)"]


def test_a_wheel_for_another_platform_or_version_does_not_count(tmp_path, pins):
    wrong_os = fake_wheelhouse(tmp_path / "w", "manylinux_2_17_x86_64")
    problems = check(wrong_os, WINDOWS, pins)
    assert "fast-1.0-cp311-cp311-manylinux_2_17_x86_64.whl: not installable on windows-amd64 with Python 3.11" \
        in problems and "missing: fast==1.0 (no wheel for windows-amd64, Python 3.11.0)" in problems
    too_new_glibc = fake_wheelhouse(tmp_path / "g", "manylinux_2_34_x86_64")
    assert any(p.startswith("missing: fast") for p in check(too_new_glibc, LINUX, pins))
    on_310 = check(fake_wheelhouse(tmp_path / "l", "manylinux_2_17_x86_64"), LINUX, pins, python="3.10")
    assert "missing: lib==1.5 (no wheel for linux-x86_64, Python 3.10.0)" in on_310


def _archive(tmp_path, wheelhouse: Path, kind: str, pins: Path) -> Path:
    top = "course-student-x"
    if kind == "zip":
        path = tmp_path / "course-student-windows-amd64-py3.11.zip"
        with zipfile.ZipFile(path, "w") as out:
            for name in ("requirements.txt", "constraints.txt"):
                out.write(pins / name, f"{top}/{name}")
            for wheel in wheelhouse.iterdir():
                out.write(wheel, f"{top}/wheelhouse/{wheel.name}")
    else:
        path = tmp_path / "course-student-linux-x86_64-py3.11.tar.gz"
        with tarfile.open(path, "w:gz") as out:
            for name in ("requirements.txt", "constraints.txt"):
                out.add(pins / name, f"{top}/{name}")
            out.add(wheelhouse, f"{top}/wheelhouse")
    return path


def test_the_check_reads_zip_and_tar_archives_without_unpacking(tmp_path, pins, capsys):
    good = _archive(tmp_path, fake_wheelhouse(tmp_path / "lin", "manylinux_2_28_x86_64"), "tar.gz", pins)
    assert make_bundles.check_archive(good, LINUX, "3.11") == []
    assert make_bundles.main(["--check", str(good)]) == 0
    bad = _archive(tmp_path, fake_wheelhouse(tmp_path / "win", "win_amd64", skip=("winpty",)), "zip", pins)
    assert make_bundles.main(["--check", str(bad)]) == 1
    assert "missing: winpty==3.0" in capsys.readouterr().out


def test_download_asks_pip_for_the_targets_pins_then_adds_what_pip_skipped(tmp_path, pins, monkeypatch):
    calls = []
    monkeypatch.setattr(make_bundles, "ROOT", pins)

    def fake_pip(*args, report=print):  # pip on Linux skips winpty (its marker fails here): simulate that
        calls.append(args)
        dest = Path(args[args.index("-d") + 1])
        if "--no-deps" in args:
            assert args[-1] == "winpty==3.0"
            (dest / "winpty-3.0-cp311-cp311-win_amd64.whl").write_bytes(wheel_bytes("winpty", "3.0"))
            return
        requirements = Path(args[args.index("-r") + 1]).read_text()
        assert ";" not in requirements and "lib==2.0" in requirements and "setuptools==80.0" in requirements
        assert "win_amd64" in args and "--only-binary=:all:" not in args  # _pip adds it
        fake_wheelhouse(dest, "win_amd64", skip=("winpty",))
    monkeypatch.setattr(make_bundles, "_pip", fake_pip)
    make_bundles.download(WINDOWS, "3.11", tmp_path / "wh", report=lambda *_: None)
    assert [a[a.index("--python-version") + 1] for a in calls if "--no-deps" not in a] == ["3.11.0", "3.11.99"]
    assert (tmp_path / "wh" / "winpty-3.0-cp311-cp311-win_amd64.whl").is_file()


@pytest.mark.parametrize("name", list(make_bundles.PLATFORMS))
def test_the_learner_readme_has_that_systems_commands_and_no_developer_text(name):
    platform = make_bundles.PLATFORMS[name]
    text = make_bundles.learner_readme(platform, "3.11", f"course-student-{name}-py3.11")
    assert "--no-index --find-links wheelhouse -r requirements.txt -c constraints.txt" in text
    assert platform.label in text and "jupyterlab notebooks" in text
    assert not re.search(r"make test|tests/|solutions/|make lab", text)
    if platform.os == "windows":
        assert "py -3.11 -m venv .venv" in text and r".venv\Scripts\python" in text and ".venv/bin" not in text
    else:
        assert "python3.11 -m venv .venv" in text and ".venv/bin/python" in text and "Scripts" not in text
    assert ("tar -xzf" in text) == (platform.archive == "tar.gz")


def test_a_bundle_holds_the_student_course_the_wheels_and_its_readme(tmp_path, pins):
    wheels = fake_wheelhouse(tmp_path / "wh", "win_amd64")
    folder = tmp_path / "course-student-windows-amd64-py3.11"
    folder.mkdir()
    make_bundles.write_platform_bundle(folder, WINDOWS, "3.11", wheels)
    assert not (folder / "solutions").exists() and not (folder / "tests").exists()
    assert not (folder / "docs" / "facilitator").exists()  # the instructor's notes stay with the instructor
    assert sorted(p.name for p in (folder / "wheelhouse").iterdir()) == sorted(p.name for p in wheels.iterdir())
    assert "Windows" in (folder / "README.md").read_text()
    lesson = (folder / "notebooks" / "00_environment.ipynb").read_text()
    assert '"outputs": []' in lesson and "NBVAL_" not in lesson
    archive = make_bundles.make_archive(folder, tmp_path / f"{folder.name}.zip")
    with zipfile.ZipFile(archive) as bundle:
        names = bundle.namelist()
    assert f"{folder.name}/README.md" in names and all(n.startswith(folder.name + "/") for n in names)
    assert not [n for n in names if n.endswith(".partial")] and not list(tmp_path.glob(".*.partial"))


def test_bad_platform_or_python_is_refused_with_the_fix():
    with pytest.raises(SystemExit, match=r"unknown platform 'win32'\. Fix: use one of linux-x86_64"):
        make_bundles.platform_of("win32")
    with pytest.raises(SystemExit, match=r"unsupported Python '3.13'\. Fix: use one of 3.10, 3.11, 3.12"):
        make_bundles.check_python("3.13")


def test_the_readme_runs_the_preflight_check_when_the_course_has_it(tmp_path, monkeypatch):
    monkeypatch.setattr(make_bundles, "ROOT", tmp_path)
    without = make_bundles.learner_readme(LINUX, "3.11", "x")
    assert "tools/preflight.py" not in without and "mindspore.run_check()" in without
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "preflight.py").write_text("print('PASS')\n")
    assert ".venv/bin/python tools/preflight.py" in make_bundles.learner_readme(LINUX, "3.11", "x")
    assert r".venv\Scripts\python tools/preflight.py" in make_bundles.learner_readme(WINDOWS, "3.11", "x")


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_try_bundle_unpacks_either_archive_into_a_path_with_spaces(tmp_path, kind):
    import try_bundle
    folder = tmp_path / "src" / "course-student-x"
    (folder / "wheelhouse").mkdir(parents=True)
    (folder / "README.md").write_text("hi")
    archive = make_bundles.make_archive(folder, tmp_path / f"course-student-x.{kind}")
    into = tmp_path / "a folder 课程"
    into.mkdir()
    unpacked = try_bundle.unpack(archive, into)
    assert unpacked == into / "course-student-x" and (unpacked / "README.md").read_text() == "hi"


def test_try_bundle_isolates_the_network_only_where_it_can(monkeypatch):
    import try_bundle
    monkeypatch.setattr(try_bundle.shutil, "which", lambda name: "/usr/bin/unshare")
    monkeypatch.setattr(try_bundle.sys, "platform", "linux")
    monkeypatch.setattr(try_bundle.os, "geteuid", lambda: 0, raising=False)
    assert try_bundle._offline_prefix()[:3] == ["/usr/bin/unshare", "-n", "--"]
    monkeypatch.setattr(try_bundle.os, "geteuid", lambda: 1000, raising=False)
    assert try_bundle._offline_prefix() == []  # not root: pip's --no-index alone keeps it offline
    monkeypatch.setattr(try_bundle.sys, "platform", "darwin")
    monkeypatch.setattr(try_bundle.os, "geteuid", lambda: 0, raising=False)
    assert try_bundle._offline_prefix() == []
