#!/usr/bin/env python3
"""Print the text of every page of a PDF, pages separated by form feeds."""
import sys

from pypdf import PdfReader


def main(path: str) -> int:
    reader = PdfReader(path)
    for i, page in enumerate(reader.pages):
        if i:
            sys.stdout.write("\f")
        sys.stdout.write(page.extract_text() or "")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: extract_text.py FILE.pdf", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
