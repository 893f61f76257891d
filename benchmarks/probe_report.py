"""What a probe says: each line printed as it comes and kept, then written to ``--out`` at the end."""

from __future__ import annotations

import pathlib


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)

    def write(self, path: str | None) -> None:
        """The lines into the file ``path`` (nothing where it is None)."""
        if path:
            pathlib.Path(path).write_text("\n".join(self.lines) + "\n")
