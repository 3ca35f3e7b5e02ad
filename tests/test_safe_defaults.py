"""Safe defaults across the code base: no unsafe deserialisation, no eval/exec of user strings."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("course_lib", "scripts", "benchmarks", "tools")
                 for p in (ROOT / folder).rglob("*.py"))


def test_there_is_code_to_check():
    assert len(SOURCES) >= 10


def test_no_pickle_loading_or_eval_exec():
    patterns = {
        "allow_pickle=True": re.compile(r"allow_pickle\s*=\s*True"),
        "yaml.load (use yaml.safe_load)": re.compile(r"yaml\.(load|unsafe_load|full_load)\("),
        "pickle.load": re.compile(r"pickle\.loads?\("),
    }
    found = [f"{p.relative_to(ROOT)}: {what}" for p in SOURCES for what, rx in patterns.items()
             if rx.search(p.read_text())]
    assert not found, found


def test_no_builtin_eval_or_exec_calls():
    calls = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in SOURCES for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec")]
    assert not calls, calls
