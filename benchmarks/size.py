"""How large the book machinery is: lines of Python, modules, the largest module.

    .venv/bin/python benchmarks/size.py

Counts every line (``wc -l``) of every ``.py`` file under ``primer/book``,
the new book's scaffold included, as issue 21 counted it (6,579 when it was
filed); beside it the library the machinery shows (``primer`` without
``primer/book`` and ``primer/chapters``). Targets (issue 21): the machinery
at most 4,000 lines, no module over 400.
"""

from __future__ import annotations

from pathlib import Path

PRIMER = Path(__file__).resolve().parent.parent / "primer"
BOOK = PRIMER / "book"
TARGET, MODULE_TARGET = 4000, 400


def lines(path: Path) -> int:
    """Its lines, as ``wc -l`` counts them."""
    return path.read_bytes().count(b"\n")


def main() -> None:
    book = {path: lines(path) for path in sorted(BOOK.rglob("*.py"))}
    library = sum(
        lines(path) for path in PRIMER.rglob("*.py") if BOOK not in path.parents and "chapters" not in path.parts
    )
    total = sum(book.values())
    largest = max(book, key=book.__getitem__)
    over = [path for path, count in book.items() if count > MODULE_TARGET]
    print(f"machinery lines: {total} (target at most {TARGET}: {'met' if total <= TARGET else 'missed'})")
    print(f"machinery modules: {len(book)}")
    print(f"largest module: {largest.relative_to(PRIMER.parent)} {book[largest]} lines")
    print(f"modules over {MODULE_TARGET} lines: {len(over)} {' '.join(p.name for p in over)}".rstrip())
    print(f"library lines (primer without book and chapters): {library}")


if __name__ == "__main__":
    main()
