"""tools/pins_table.py: the committed pins table matches the requirement files, and the pin logic is right."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import course_cli  # noqa: E402
import pins_table  # noqa: E402
from pins_table import PLATFORMS, PYTHONS, Cell, check_against_constraints, marker_env, pins_for  # noqa: E402

PLATFORM = {p.label: p for p in PLATFORMS}


def env(label, python):
    return marker_env(PLATFORM[label], python)


def test_committed_table_is_current():
    recorded = pins_table.recorded_hash()
    assert recorded == pins_table.inputs_hash(), (
        "docs/PINS.md was made from other requirement files. Fix: python tools/pins_table.py")


def test_committed_table_resolves_every_platform_and_python():
    text = pins_table.TABLE.read_text(encoding="utf-8")
    assert "FAIL" not in text and "## Failures" not in text
    for platform in PLATFORMS:
        row = next(line for line in text.splitlines() if line.startswith(f"| {platform.label} |"))
        assert row.count("ok ") == 2 * len(PYTHONS), row


def test_hash_follows_content_not_line_endings(tmp_path):
    for name in pins_table.INPUTS:
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    first = pins_table.inputs_hash(tmp_path)
    assert first == pins_table.inputs_hash()
    crlf = (tmp_path / "constraints.txt").read_text().replace("\n", "\r\n")
    (tmp_path / "constraints.txt").write_bytes(crlf.encode())
    assert pins_table.inputs_hash(tmp_path) == first
    with (tmp_path / "requirements.txt").open("a") as handle:
        handle.write("six==1.17.0\n")
    assert pins_table.inputs_hash(tmp_path) != first


def test_check_mode_fails_on_a_stale_table(tmp_path):
    stale = tmp_path / "PINS.md"
    stale.write_text("<!-- inputs-sha256: " + "0" * 64 + " -->\n")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "pins_table.py"), "--check", "--out", str(stale)],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "stale" in result.stderr and "Fix:" in result.stderr
    current = subprocess.run([sys.executable, str(ROOT / "tools" / "pins_table.py"), "--check"],
                             capture_output=True, text=True)
    assert current.returncode == 0, current.stderr


@pytest.mark.parametrize("platform", [p.label for p in PLATFORMS])
@pytest.mark.parametrize("python", PYTHONS)
def test_every_environment_gets_one_pin_per_package_and_the_requirements_agree(platform, python):
    constraints = pins_for(ROOT / "constraints.txt", env(platform, python))
    assert constraints["numpy"] == "1.26.4"  # numpy 2 breaks MindSpore 2.10 (tests/test_environment.py)
    assert constraints["mindspore"] == "2.10.0"
    for name in ("requirements.txt", "requirements-torch.txt", "requirements-fast-conv.txt"):
        for package, version in pins_for(ROOT / name, env(platform, python)).items():
            assert constraints.get(package) == version, f"{name} and constraints.txt disagree on {package}"


def test_markers_pick_the_versions_each_python_and_platform_can_install():
    linux_310, linux_3112, linux_3117 = env("Linux x86-64", "3.10.0"), env("Linux x86-64", "3.11.2"), \
        env("Linux x86-64", "3.11.7")
    constraints = ROOT / "constraints.txt"
    assert pins_for(constraints, linux_3117)["pillow"] == "13.0.0"  # today's version where outputs were made
    assert pins_for(constraints, linux_310)["pillow"] == "12.3.0"  # pillow 13 has no cp310 wheels
    assert pins_for(constraints, linux_3117)["soupsieve"] == "4.1.2"
    assert pins_for(constraints, linux_3112)["soupsieve"] == "2.10"  # soupsieve 4 needs Python >= 3.11.5
    assert "exceptiongroup" in pins_for(constraints, linux_310) and "exceptiongroup" not in pins_for(
        constraints, linux_3117)
    intel_mac = env("macOS x86-64", "3.12.0")
    assert pins_for(ROOT / "requirements-torch.txt", intel_mac) == {"torch": "2.2.2"}
    assert pins_for(ROOT / "requirements-torch.txt", env("macOS arm64", "3.12.0")) == {"torch": "2.13.0"}
    assert pins_for(constraints, intel_mac)["argon2-cffi-bindings"] == "25.1.0"
    # The private oneDNN has wheels for Linux x86-64 only: everywhere else the file pins nothing.
    onednn = {"onednn-cpu-gomp": "2023.2.0", "onednn-devel-cpu-gomp": "2023.2.0"}
    for platform in PLATFORMS:
        for python in PYTHONS:
            want = onednn if platform.label == "Linux x86-64" else {}
            assert pins_for(ROOT / "requirements-fast-conv.txt", env(platform.label, python)) == want
            got = {name: version for name, version in pins_for(constraints, env(platform.label, python)).items()
                   if name in onednn}
            assert got == want, (platform.label, python)


def test_the_table_resolves_the_same_files_as_course_py_installs():
    assert list(pins_table.INSTALLS["default"]) == course_cli.requirement_files(False)
    assert list(pins_table.INSTALLS["full"]) == course_cli.requirement_files(True)
    assert set(course_cli.requirement_files(True)) | {"constraints.txt"} == set(pins_table.INPUTS)


def test_overlapping_markers_and_loose_pins_are_refused(tmp_path):
    twice = tmp_path / "twice.txt"
    twice.write_text('pillow==13.0.0\npillow==12.3.0; python_version < "3.11"\n')
    with pytest.raises(ValueError, match="two pins.*Fix: make their markers exclude each other"):
        pins_for(twice, env("Linux x86-64", "3.10.0"))
    assert pins_for(twice, env("Linux x86-64", "3.11.7")) == {"pillow": "13.0.0"}
    loose = tmp_path / "loose.txt"
    loose.write_text("numpy>=1.26\n")
    with pytest.raises(ValueError, match="not an exact pin"):
        pins_for(loose, env("Linux x86-64", "3.11.7"))
    broken = tmp_path / "broken.txt"
    broken.write_text("numpy==1.26.4; python_version <<< 3\n")
    with pytest.raises(ValueError, match=r"(?s)broken.txt:1: .*Fix:"):
        pins_for(broken, env("Linux x86-64", "3.11.7"))


def test_a_resolution_passes_only_when_every_package_is_pinned_at_that_version():
    constraints = {"numpy": "1.26.4", "six": "1.17.0"}
    good = Cell("Linux x86-64", "3.11.7", "full", packages={"numpy": "1.26.4", "nvidia-cublas": "13.1.1.3",
                                                            "triton": "3.7.1"})
    check_against_constraints(good, constraints)
    assert good.ok and good.cuda_only == ["nvidia-cublas==13.1.1.3", "triton==3.7.1"]
    bad = Cell("Linux x86-64", "3.11.7", "default", packages={"numpy": "2.0.0", "wheel": "0.48.0"})
    check_against_constraints(bad, constraints)
    assert not bad.ok
    assert bad.problems == ["numpy: resolved 2.0.0, constraints.txt pins 1.26.4",
                            "wheel==0.48.0 is not pinned in constraints.txt"]


def test_uv_output_is_parsed_and_surprises_are_refused():
    text = "numpy==1.26.4\nJinja2==3.1.6\n    # via nbconvert\ntyping_extensions==4.16.0\n"
    assert pins_table.parse_compiled(text) == {"numpy": "1.26.4", "jinja2": "3.1.6", "typing-extensions": "4.16.0"}
    with pytest.raises(ValueError, match="not 'name==version'"):
        pins_table.parse_compiled("numpy @ https://example.org/numpy.whl\n")


def test_describe_groups_columns_by_python_and_platform():
    every_310 = [(p.label, "3.10.0") for p in PLATFORMS]
    assert pins_table.describe(every_310) == "Python 3.10.0 (every platform)"
    intel = [("macOS x86-64", py) for py in PYTHONS]
    assert pins_table.describe(intel + [("Windows amd64", "3.12.0")]) == \
        "macOS x86-64 (every Python), Windows amd64 (Python 3.12.0)"
