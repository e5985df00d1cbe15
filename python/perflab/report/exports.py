"""Writing comparison exports to files: the format from the extension, each file
replaced atomically, so an export rewritten after every run is never half-written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from perflab.analysis.compare import CompareResult
from perflab.errors import InputError
from perflab.report.writable import check_writable, write_atomically


def _renderer(path: Path) -> Callable[[CompareResult], str]:
    from perflab.report.csv_table import render_csv
    from perflab.report.json_export import render_json
    from perflab.report.markdown import render_markdown

    table = {
        ".json": render_json,
        ".csv": render_csv,
        ".md": render_markdown,
        ".markdown": render_markdown,
    }
    try:
        return table[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"export {path}: unknown format '{path.suffix}' (use .json, .csv or .md)"
        ) from None


class ExportManager:
    """The export files of one experiment; `write` renders and replaces all of them."""

    def __init__(self, paths: list[str | Path]):
        """Checks every path (format, then that it can be written) before anything runs."""
        self.targets = [(Path(p), _renderer(Path(p))) for p in paths]
        for path, _ in self.targets:
            check_writable(path, "export")

    def write(self, result: CompareResult) -> None:
        for path, render in self.targets:
            write_atomically(path, render(result), "export")


class ExportingObserver:
    """Passes events on, and rewrites the export files after every finished run."""

    def __init__(self, inner, exports, store, experiment_id: int):
        self.inner, self.exports, self.store, self.eid = inner, exports, store, experiment_id

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run_finished(self, run, outcome, index: int, total: int) -> None:
        self.inner.run_finished(run, outcome, index, total)
        self._write()

    def finished(self, summary) -> None:
        self._write()
        self.inner.finished(summary)

    def _write(self) -> None:
        from perflab.analysis.compare import compare_dataset
        from perflab.analysis.dataset import load_dataset

        self.exports.write(compare_dataset(load_dataset(self.store, self.eid)))
