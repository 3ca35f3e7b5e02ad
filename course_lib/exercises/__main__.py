"""``python -m course_lib.exercises hide "text"`` (encode a "why" explanation), ``reveal ENCODED`` (decode one, e.g. a
catalog entry's msgid to translate it), ``list`` (every exercise), ``progress [NN]`` (your own progress, read from your
progress file)."""
import sys

from course_lib.exercises.engine import hide, print_catalogue, print_summary, reveal

USAGE = ('usage: python -m course_lib.exercises hide "explanation" | reveal ENCODED | list | progress [lesson, '
         'e.g. 03]')


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "hide":
        encoded = hide(" ".join(argv[1:]))
        print("why=N_(" + "\n       ".join(f'"{encoded[i:i + 96]}"' for i in range(0, len(encoded), 96)) + "),")
    elif len(argv) >= 2 and argv[0] == "reveal":
        print(reveal("".join(argv[1:])))
    elif argv == ["list"]:
        print_catalogue()
    elif argv[:1] == ["progress"] and len(argv) <= 2:
        print_summary(argv[1] if len(argv) == 2 else None)
    else:
        raise SystemExit(USAGE)


if __name__ == "__main__":
    main(sys.argv[1:])
