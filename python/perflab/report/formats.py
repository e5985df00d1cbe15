"""Output formats found by name, as hyperfine's exporters are: each format is one object
behind one interface, and the commands look it up here — `perflab compare --format NAME`
and `perflab run --export FILE.EXT` (a `ComparisonFormat`), `perflab report --format NAME`
and `-o FILE.EXT` (a `ReportFormat`), `perflab history --format NAME` and `-o FILE.EXT` (a
`HistoryFormat`). Adding a format is one class and one `register_*`
call; nothing else changes (tests/report/test_formats.py adds one from a test module).

A format's module (rich, the HTML writer, matplotlib…) is imported when it is first used,
not when this registry is: `perflab --help` stays fast.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from perflab.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from perflab.analysis.answer import Answer
    from perflab.analysis.scaling import ScalingResult
    from perflab.analysis.version_series import History
    from perflab.report.document import Report


@dataclass(frozen=True)
class View:
    """How a comparison is shown: the terminal's console, per-variant summaries or the
    table only, every warning in full, and how to see them all (the hint under them)."""

    console: Console | None = None
    summaries: bool = True
    verbose: bool = False
    more: str = ""


class ComparisonFormat(Protocol):
    """A comparison written as text (or bytes), or drawn on the view's console (None)."""

    #: File-name endings an export in this format takes (``.json``); () for none.
    suffixes: tuple[str, ...]

    def load(self) -> None:
        """Imports what it renders with (called while the data is read)."""
        ...

    def comparison(self, found: Answer, view: View) -> str | bytes | None:
        """The comparison of ``found`` (an answer with a table)."""
        ...

    def scaling(self, fits: ScalingResult, view: View) -> str | bytes | None: ...


def render_answer(fmt: ComparisonFormat, found: Answer, view: View) -> str | bytes | None:
    """``found`` in ``fmt``: its comparison, or its scaling fits when it holds only those."""
    if found.table is None:
        assert found.fits is not None, "an answer holds a comparison or scaling fits"
        return fmt.scaling(found.fits, view)
    return fmt.comparison(found, view)


class ReportFormat(Protocol):
    """A report written to a file (and its images), or as one text to a stream."""

    suffixes: tuple[str, ...]

    def write(self, report: Report, path: Path, image_format: str) -> list[Path]:
        """Writes ``path`` (and beside it what it needs); the files, the report last."""
        ...

    def text(self, report: Report) -> str | None:
        """The report as one text (to stdout), or None when it needs files beside it."""
        ...


class HistoryFormat(Protocol):
    """A history (`perflab history`) written as text (or bytes), or drawn on the view's
    console (None)."""

    suffixes: tuple[str, ...]

    def history(self, history: History, view: View) -> str | bytes | None: ...


class _Terminal:
    suffixes: tuple[str, ...] = ()

    def load(self) -> None:
        importlib.import_module("perflab.report.terminal")

    def comparison(self, found: Answer, view: View) -> None:
        from perflab.report.terminal import render_terminal

        assert view.console is not None
        render_terminal(
            found.comparison,
            view.console,
            summaries=view.summaries,
            verbose=view.verbose,
            more=view.more,
        )

    def scaling(self, fits: ScalingResult, view: View) -> None:
        from perflab.report.terminal import render_scaling_terminal

        assert view.console is not None
        render_scaling_terminal(fits, view.console)

    def history(self, history: History, view: View) -> None:
        from perflab.report.history_terminal import render_history_terminal

        assert view.console is not None
        render_history_terminal(history, view.console)


class _Markdown:
    suffixes: tuple[str, ...] = (".md", ".markdown")

    def load(self) -> None:
        importlib.import_module("perflab.report.markdown")

    def comparison(self, found: Answer, view: View) -> str:
        from perflab.report.markdown import render_compare_markdown

        return render_compare_markdown(found.comparison)

    def scaling(self, fits: ScalingResult, view: View) -> str:
        from perflab.report.markdown import render_scaling_markdown

        return render_scaling_markdown(fits)

    def write(self, report: Report, path: Path, image_format: str) -> list[Path]:
        from perflab.report.drawing import write_markdown_report

        return write_markdown_report(report, path, image_format)

    def text(self, report: Report) -> None:
        return None

    def history(self, history: History, view: View) -> str:
        from perflab.report.history_markdown import render_history_markdown

        return render_history_markdown(history)


class _Csv:
    suffixes: tuple[str, ...] = (".csv",)

    def load(self) -> None:
        importlib.import_module("perflab.report.csv_table")

    def comparison(self, found: Answer, view: View) -> str:
        from perflab.report.csv_table import render_csv

        return render_csv(found.comparison)

    def scaling(self, fits: ScalingResult, view: View) -> str:
        from perflab.report.csv_table import render_scaling_csv

        return render_scaling_csv(fits)


class _Json:
    suffixes: tuple[str, ...] = (".json",)

    def load(self) -> None:
        importlib.import_module("perflab.report.json_doc")

    def comparison(self, found: Answer, view: View) -> str | bytes:
        from perflab.report.json_doc import render_compare_json_bytes, with_movers

        if found.movers:  # functions whose share of the profiles' samples changed
            return with_movers(found.comparison, found.movers)
        return render_compare_json_bytes(found.comparison)

    def scaling(self, fits: ScalingResult, view: View) -> str:
        from perflab.report.json_doc import render_scaling_json

        return render_scaling_json(fits)

    def write(self, report: Report, path: Path, image_format: str) -> list[Path]:
        from perflab.report.writable import write_atomically

        write_atomically(path, self.text(report).encode())
        return [path]

    def text(self, report: Report) -> str:
        from perflab.report.json_doc import render_report_json

        return render_report_json(report)

    def history(self, history: History, view: View) -> str:
        from perflab.report.history_json import render_history_json

        return render_history_json(history)


class _Html:
    suffixes: tuple[str, ...] = (".html", ".htm")

    def write(self, report: Report, path: Path, image_format: str) -> list[Path]:
        from perflab.report.writable import write_atomically

        write_atomically(path, self.text(report).encode())
        return [path]

    def text(self, report: Report) -> str:
        from perflab.report.drawing import render_plots
        from perflab.report.html import render_html

        return render_html(report, images=render_plots(report.plots(), "svg"))

    def history(self, history: History, view: View) -> str:
        from perflab.report.history_html import render_history_html

        return render_history_html(history)


class _HasEndings(Protocol):
    suffixes: tuple[str, ...]


F = TypeVar("F", bound=_HasEndings)


class Registry(Generic[F]):
    """Formats of one kind by name (in the order a command lists them), and the name a
    file's ending asks for. ``kind``: how messages call it ("report ", or "" for a
    comparison)."""

    def __init__(self, kind: str, formats: dict[str, F]) -> None:
        self.kind, self.formats = kind, formats

    def register(self, name: str, fmt: F) -> None:
        """Adds (or replaces) the format ``name``."""
        self.formats[name] = fmt

    def unregister(self, name: str) -> None:
        self.formats.pop(name, None)

    def names(self) -> list[str]:
        return list(self.formats)

    def get(self, name: str) -> F:
        try:
            return self.formats[name]
        except KeyError:
            known = ", ".join(self.formats)
            raise InputError(f"unknown {self.kind}format {name!r}: use {known}") from None

    def name_of(self, path: Path) -> str | None:
        """The format whose endings ``path`` has (None: no format writes such files)."""
        suffix = path.suffix.lower()
        return next((n for n, f in self.formats.items() if suffix and suffix in f.suffixes), None)

    def endings(self) -> str:
        """Each format's first ending, for a message: ``.html, .md or .json``."""
        return _or([s for f in self.formats.values() for s in f.suffixes[:1]])

    def name_of_file(self, path: Path) -> str:
        """`name_of`, or a one-line error asking for a known ending."""
        name = self.name_of(path)
        if name is None:
            raise InputError(
                f"cannot tell the {self.kind}format from '{path.name}': name it "
                f"{self.endings()} (or give --format)"
            )
        return name


COMPARISON: Registry[ComparisonFormat] = Registry(
    "", {"terminal": _Terminal(), "markdown": _Markdown(), "csv": _Csv(), "json": _Json()}
)
REPORT: Registry[ReportFormat] = Registry(
    "report ", {"html": _Html(), "markdown": _Markdown(), "json": _Json()}
)
HISTORY: Registry[HistoryFormat] = Registry(
    "history ", {"terminal": _Terminal(), "markdown": _Markdown(), "json": _Json(), "html": _Html()}
)

# The commands' names for the registries' calls.
register_comparison_format = COMPARISON.register
register_report_format = REPORT.register
register_history_format = HISTORY.register
comparison_names, report_names, history_names = COMPARISON.names, REPORT.names, HISTORY.names
comparison_format, report_format, history_format = COMPARISON.get, REPORT.get, HISTORY.get
report_format_of, history_format_of = REPORT.name_of_file, HISTORY.name_of_file


def export_format(path: Path) -> ComparisonFormat:
    """The comparison format of an export file, from its ending."""
    name = COMPARISON.name_of(path)
    if name is None:
        raise InputError(
            f"export {path}: unknown format '{path.suffix}' (use {COMPARISON.endings()})"
        )
    return COMPARISON.get(name)


def _or(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else "".join(items)
