"""The course's front door, the same on Linux, macOS and Windows (PowerShell and cmd):

    python course.py lab     set up .venv (first time only) and open the course in JupyterLab
    python course.py test    set up .venv if needed, then lint, unit tests and every notebook under nbval

`python course.py --help` lists every command. Standard library only. This file runs on any Python 3 far enough
to find a supported interpreter (CPython 3.10-3.12) or to say why there is none; the work is in tools/course_cli.py.
"""
import os
import sys

if sys.version_info < (3, 6):  # noqa: UP036  (this line must run on the oldest Python a learner may type)
    sys.stderr.write("course.py needs Python 3 (CPython 3.10, 3.11 or 3.12); this is Python "
                     + sys.version.split()[0] + ".\nFix: install Python 3.12 from python.org (Windows, macOS) or "
                     "your system's packages, then run e.g. 'python3.12 course.py lab'.\n")
    sys.exit(1)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools"))

import course_cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(course_cli.main(sys.argv[1:]))
