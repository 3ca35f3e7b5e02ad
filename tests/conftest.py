import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before any test imports mindspore)

# check() records every attempt (course_lib.exercises.progress); the tests' attempts go to a throw-away file,
# not the clone's.
import os as _os  # noqa: E402
import tempfile as _tempfile  # noqa: E402

_os.environ.setdefault("COURSE_PROGRESS_FILE",
                       _os.path.join(_tempfile.mkdtemp(prefix="course-progress-"), "exercises.jsonl"))
