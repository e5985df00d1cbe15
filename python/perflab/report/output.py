"""The one place that writes output files, each chosen by its file name and written
through `writable.write_atomically` (a temporary name, then renamed), so a reader never
sees half a file and an interrupted write leaves the previous one intact:

- comparison exports (`write_exports`, ``perflab run --export FILE``): JSON, CSV or
  Markdown, rewritten after every run by `ExportingObserver`;
- reports (`write_report`, ``perflab report -o FILE``): HTML, Markdown (+ its image
  directory) or JSON.

Plots are drawn in parallel worker processes (fork) when there are several and more than
one CPU: matplotlib draws one figure per process at a time, and a report has dozens.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.errors import InputError
from perflab.report.writable import check_writable, write_atomically

if TYPE_CHECKING:  # loaded when a report is written: `perflab run --export` needs neither
    from perflab.analysis.compare import CompareResult
    from perflab.report.blocks import Plot
    from perflab.report.document import Report
    from perflab.store import RunRow, Store

# ----- comparison exports ---------------------------------------------------------------------


def export_renderer(path: Path) -> Callable[[CompareResult], str]:
    """The renderer of an export file, from its extension; InputError for another one."""
    from perflab.report.csv_table import render_csv
    from perflab.report.json_doc import render_compare_json
    from perflab.report.markdown import render_compare_markdown

    table = {
        ".json": render_compare_json,
        ".csv": render_csv,
        ".md": render_compare_markdown,
        ".markdown": render_compare_markdown,
    }
    try:
        return table[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"export {path}: unknown format '{path.suffix}' (use .json, .csv or .md)"
        ) from None


def write_exports(result: CompareResult, paths: Iterable[str | Path]) -> None:
    """Render ``result`` in each path's format and replace each file whole."""
    for p in paths:
        path = Path(p)
        write_atomically(path, export_renderer(path)(result), "export")


class ExportManager:
    """The export files of one experiment; `write` renders and replaces all of them."""

    def __init__(self, paths: list[str | Path]):
        """Checks every path (format, then that it can be written) before anything runs."""
        self.paths = [Path(p) for p in paths]
        for path in self.paths:
            export_renderer(path)
        for path in self.paths:
            check_writable(path, "export")

    def write(self, result: CompareResult) -> None:
        write_exports(result, self.paths)


class _Observer(Protocol):
    """What `ExportingObserver` calls of the observer it wraps (a `perflab.run.runner.Observer`,
    which report/ does not import: the outcome and summary are the runner's types)."""

    def run_finished(self, run: RunRow, outcome: Any, index: int, total: int) -> None: ...
    def finished(self, summary: Any) -> None: ...


class ExportingObserver:
    """Passes events on, and rewrites the export files after every finished run."""

    def __init__(self, inner: _Observer, exports: ExportManager, store: Store, experiment_id: int):
        self.inner, self.exports, self.store, self.eid = inner, exports, store, experiment_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run_finished(self, run: RunRow, outcome: object, index: int, total: int) -> None:
        self.inner.run_finished(run, outcome, index, total)
        self._write()

    def finished(self, summary: object) -> None:
        self._write()
        self.inner.finished(summary)

    def _write(self) -> None:
        from perflab.analysis.compare import compare_dataset
        from perflab.analysis.dataset import load_dataset

        self.exports.write(compare_dataset(load_dataset(self.store, self.eid)))


# ----- reports --------------------------------------------------------------------------------

FORMATS = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
}

#: Names of the plot files this writer puts in a Markdown report's image directory.
_IMAGE_NAME = re.compile(r"^\d{2,}-[a-z0-9-]+\.(png|svg)$")

_JOBS: list[Plot] = []


def _render_one(args: tuple[int, str]) -> bytes:
    from perflab.report import plots

    i, fmt = args
    return plots.render(_JOBS[i].make, fmt)


def render_plots(items: list[Plot], fmt: str, workers: int | None = None) -> dict[str, bytes]:
    """plot key → image bytes. ``workers``: processes (default: CPUs, at most 4;
    ``PERFLAB_PLOT_WORKERS=1`` draws in this process)."""
    global _JOBS
    from perflab.report import plots

    if workers is None:
        workers = int(os.environ.get("PERFLAB_PLOT_WORKERS") or min(os.cpu_count() or 1, 4))
    if workers > 1 and len(items) >= 4 and "fork" in multiprocessing.get_all_start_methods():
        _JOBS = items
        try:
            with multiprocessing.get_context("fork").Pool(min(workers, len(items))) as pool:
                images = pool.map(_render_one, [(i, fmt) for i in range(len(items))], chunksize=1)
            return {p.key: img for p, img in zip(items, images)}
        finally:
            _JOBS = []
    return {p.key: plots.render(p.make, fmt) for p in items}


def format_of(path: Path, fmt: str | None = None) -> str:
    if fmt:
        return fmt
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"cannot tell the report format from '{path.name}': name it .html, .md or .json "
            "(or give --format)"
        ) from None


def image_dir_for(path: Path) -> Path:
    """``report.md`` → ``report_files/`` beside it."""
    return path.with_name(path.stem + "_files")


def write_report(
    report: Report, path: str | Path, *, fmt: str | None = None, image_format: str = "png"
) -> list[Path]:
    """Write ``report`` to ``path`` (format from its suffix unless ``fmt``); returns the
    files written (a Markdown report's images first, the report itself last)."""
    from perflab.report.html import render_html
    from perflab.report.json_doc import render_report_json
    from perflab.report.markdown import render_report_markdown

    path = Path(path)
    kind = format_of(path, fmt)
    if path.is_dir():
        raise InputError(
            f"{path} is a directory: name the report file, e.g. {path / 'report.html'}"
        )
    check_writable(path, "report")  # before drawing any plot
    if kind == "markdown":
        check_writable(image_dir_for(path) / "00-plot.png", "report image")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "json":
            write_atomically(path, render_report_json(report).encode())
            return [path]
        if kind == "html":
            images = render_plots(report.plots(), "svg")
            write_atomically(path, render_html(report, images=images).encode())
            return [path]
        if kind != "markdown":
            raise InputError(f"unknown report format {kind!r}: use html, markdown or json")
        if image_format not in ("png", "svg"):
            raise InputError(f"image format {image_format!r}: use png or svg")
        out_dir = image_dir_for(path)
        out_dir.mkdir(exist_ok=True)
        for old in out_dir.iterdir():  # plots of an earlier report under this name (only ours)
            if old.is_file() and _IMAGE_NAME.match(old.name):
                old.unlink()
        written = []
        for key, data in render_plots(report.plots(), image_format).items():
            p = out_dir / f"{key}.{image_format}"
            write_atomically(p, data)
            written.append(p)
        for graph in report.flame_graphs():  # interactive SVGs: open them in a browser
            p = out_dir / f"{graph.key}.svg"
            write_atomically(p, graph.svg.encode())
            written.append(p)
        write_atomically(path, render_report_markdown(report, out_dir.name, image_format).encode())
        return written + [path]
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from None
