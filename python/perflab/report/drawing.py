"""Plots drawn to image files, and the Markdown report written with its images beside it.

Plots are drawn in parallel worker processes (fork) when there are several and more than
one CPU: matplotlib draws one figure per process at a time, and a report has dozens.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError
from perflab.report.writable import write_atomically

if TYPE_CHECKING:
    from perflab.report.blocks import Plot
    from perflab.report.document import Report

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


def image_dir_for(path: Path) -> Path:
    """``report.md`` → ``report_files/`` beside it."""
    return path.with_name(path.stem + "_files")


def write_markdown_report(report: Report, path: Path, image_format: str) -> list[Path]:
    """A Markdown report: its plots drawn into ``NAME_files/`` beside it, then the text."""
    from perflab.report.markdown import render_report_markdown

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
