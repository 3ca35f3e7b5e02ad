#!/bin/sh
# Refuse, within seconds, an interpreter that cannot run MindSpore 2.10 (called by the Makefile before the venv
# is made). MindSpore 2.10.0 has working x86-64 Linux wheels for CPython 3.11 only: Python 3.12's index entry is a
# "none-any" wheel whose binaries are aarch64 (`import mindspore` fails with "No module named
# 'mindspore._c_expression'"), and there are no 3.13 wheels.
# Usage: tools/check_python.sh PYTHON
python="$1"
how="Fix: install Python 3.11 and run e.g. 'make install PYTHON=python3.11'. Ways to get it: pyenv
('pyenv install 3.11'), uv ('uv python install 3.11'), the deadsnakes PPA on Ubuntu
('sudo add-apt-repository ppa:deadsnakes/ppa && sudo apt install python3.11 python3.11-venv'), or conda
('conda env create -f environment.yml')."
if [ -z "$python" ]; then
    echo "No Python interpreter found (looked for python3.11 and python3). The course needs CPython 3.11." >&2
    echo "$how" >&2
    exit 1
fi
found=$("$python" -c 'import platform, sys; print("%d.%d.%d %s %s" % (sys.version_info[:3] + (platform.python_implementation(), platform.machine())))' 2>/dev/null)
if [ -z "$found" ]; then
    echo "PYTHON=$python does not run (or is not a Python 3 interpreter). The course needs CPython 3.11." >&2
    echo "$how" >&2
    exit 1
fi
version=${found%% *}
rest=${found#* }
implementation=${rest%% *}
case "$version" in
    3.11.*) ;;
    *)
        echo "PYTHON=$python is Python $version ($implementation, ${rest#* }), but MindSpore 2.10 runs only on" \
             "Python 3.11 (no working wheels for $version). Nothing was downloaded." >&2
        echo "$how" >&2
        exit 1 ;;
esac
if [ "$implementation" != "CPython" ]; then
    echo "PYTHON=$python is $implementation $version; MindSpore 2.10 needs CPython 3.11." >&2
    echo "$how" >&2
    exit 1
fi
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "PYTHON=$python is Python $version but cannot create a virtual environment (no venv/ensurepip)." >&2
    echo "Fix: on Debian/Ubuntu 'sudo apt install python3.11-venv'; or use pyenv, uv or conda (see above)." >&2
    exit 1
fi
