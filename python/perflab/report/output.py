"""The one place that writes output files, each chosen by its file name and written
through `writable.write_atomically` (a temporary name, then renamed), so a reader never
sees half a file and an interrupted write leaves the previous one intact:

- comparison exports (`write_exports`, ``perflab run --export FILE``): JSON, CSV or
  Markdown, rewritten after every run (`perflab.api.running`);
- reports (`write_report`, ``perflab report -o FILE``): HTML, Markdown (+ its image
  directory, `drawing`) or JSON.

Each format is found by name or file ending in `formats`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError
from perflab.report.writable import check_writable, write_atomically

if TYPE_CHECKING:  # loaded when a report is written: `perflab run --export` needs neither
    from perflab.analysis.answer import Answer
    from perflab.report.document import Report

# ----- comparison exports ---------------------------------------------------------------------


def write_exports(found: Answer, paths: Iterable[str | Path]) -> None:
    """Render the answer ``found`` in each path's format and replace each file whole."""
    from perflab.report.formats import View, export_format

    for p in paths:
        path = Path(p)
        text = export_format(path).comparison(found, View())
        assert text is not None, "an export format writes text"
        write_atomically(path, text, "export")


class ExportManager:
    """The export files of one experiment; `write` renders and replaces all of them."""

    def __init__(self, paths: list[str | Path]):
        """Checks every path (format, then that it can be written) before anything runs."""
        from perflab.report.formats import export_format

        self.paths = [Path(p) for p in paths]
        for path in self.paths:
            export_format(path)
        for path in self.paths:
            check_writable(path, "export")

    def write(self, found: Answer) -> None:
        write_exports(found, self.paths)


# ----- reports --------------------------------------------------------------------------------


def format_of(path: Path, fmt: str | None = None) -> str:
    from perflab.report.formats import report_format_of

    return fmt or report_format_of(path)


def write_report(
    report: Report, path: str | Path, *, fmt: str | None = None, image_format: str = "png"
) -> list[Path]:
    """Write ``report`` to ``path`` (format from its suffix unless ``fmt``); returns the
    files written (a Markdown report's images first, the report itself last)."""
    from perflab.report.formats import report_format

    path = Path(path)
    kind = format_of(path, fmt)
    writer = report_format(kind)
    if path.is_dir():
        raise InputError(
            f"{path} is a directory: name the report file, e.g. {path / 'report.html'}"
        )
    check_writable(path, "report")  # before drawing any plot
    if kind == "markdown":
        from perflab.report.drawing import image_dir_for

        check_writable(image_dir_for(path) / "00-plot.png", "report image")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return writer.write(report, path, image_format)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None
