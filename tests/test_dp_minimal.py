"""Lesson 08's minimal worker (scripts/dp_minimal.py): two ranks read disjoint shards and end with equal weights."""
import re

from course_lib.parallel.launch import launch
from course_lib.paths import PROJECT_ROOT

WORKER = PROJECT_ROOT / "scripts" / "dp_minimal.py"
LINE = re.compile(r"rank (\d) of 2: (\w+), 128 samples, ids \[(\d+), .*weights sha256 (\w+)")


def test_two_ranks_disjoint_shards_same_weights(tmp_path):
    assert sum(1 for line in WORKER.read_text().splitlines() if line.strip()) <= 40  # readable top to bottom
    result = launch(WORKER, worker_num=2, timeout=300, log_dir=tmp_path / "logs")
    found = {}
    for rank, text in result.logs.items():
        match = next(m for m in map(LINE.search, text.splitlines()) if m)
        found[rank] = match.groups()
    reducer = "DistributedGradReducer"
    assert [found[r][:3] for r in (0, 1)] == [("0", reducer, "0"), ("1", reducer, "1")]
    assert found[0][3] == found[1][3]
