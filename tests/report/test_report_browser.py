"""The HTML report of a real small experiment, looked at in headless Chromium as a person
would: it loads with no failed request and no console error, the TLDR table shows the
values `perflab compare` computes, every plot is a non-empty image in the variants'
colours, and a screenshot is kept for CI at out/ci/report-screenshot.png.

The experiment: memcached (started by the spec itself on a free loopback port) with its
default segmented LRU vs ``-o no_lru_maintainer``, populated then read with a Gaussian
key pattern at two numeric key counts — the MGLRU memcached
experiment's procedure in seconds.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import REPO, perflab, write_spec
from matplotlib import image as mpimg
from perflab.report.browser import Browser, find_chromium
from perflab.report.palette import variant_colors

SCREENSHOT = REPO / "out" / "ci" / "report-screenshot.png"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SPEC = """\
name = "report-browser"
description = "memcached: one LRU vs segmented LRU, populate then Gaussian reads"
baseline = "one-lru"
repetitions = 5
warmup = 1
timeout = "60s"
tools = ["memcached"]
# stop this run's server and wait until it has exited (state Z or gone: its socket is
# released; waiting for it to be reaped can take seconds in a container)
after_each = "pid=$(cat {{run_dir}}/mc.pid); kill -9 $pid; while [ $(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null || echo Z) != Z ]; do sleep 0.01; done"

[params]
port = {port}
wait_ready = "for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; sleep 0.02; done; exit 1"

[matrix]
keys = [1000, 4000]

[[variant]]
name = "one-lru"
description = "memcached -o no_lru_maintainer"
setup = "memcached -l 127.0.0.1 -p {{port}} -t 1 -m 64 -d -P {{run_dir}}/mc.pid -U 0 -u $(id -un) -o no_lru_maintainer && bash -c {{wait_ready}}"
[[variant]]
name = "segmented"
description = "memcached default"
setup = "memcached -l 127.0.0.1 -p {{port}} -t 1 -m 64 -d -P {{run_dir}}/mc.pid -U 0 -u $(id -un) && bash -c {{wait_ready}}"

[[phase]]
name = "populate"
measure = false
[phase.kv]
server = "127.0.0.1:{{port}}"
protocol = "memcache_binary"
requests = "allkeys"
ratio = "1:0"
pipeline = 8
clients = 1
threads = 1
key_min = 1
key_max = "{{keys}}"
key_pattern = "P:P"
data_size = 200

[[phase]]
name = "access"
[phase.kv]
server = "127.0.0.1:{{port}}"
protocol = "memcache_binary"
test_time = "0.3s"
ratio = "0:1"
pipeline = 4
clients = 2
threads = 1
key_min = 1
key_max = "{{keys}}"
key_pattern = "G:G"
randomize = true
distinct_client_seed = true

[[metric]]
name = "ops_per_sec"
unit = "ops/s"
better = "higher"
[[metric]]
name = "p99_latency_ms"
unit = "ms"
better = "lower"
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """(store path, experiment id, work dir) of the experiment, run once for this module."""
    d = tmp_path_factory.mktemp("report-browser")
    spec = write_spec(d, SPEC.format(port=free_port()))
    db = d / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    return db, 1, d


@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    assert path, "chromium is not installed: run scripts/setup (Debian package chromium)"
    return path


def _rgb(hex_color: str) -> np.ndarray:
    return np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0


def _has_color(img: np.ndarray, hex_color: str, tol: float = 0.06, min_pixels: int = 20) -> bool:
    """Pixels of this colour, drawn opaque or at the plots' 75% opacity over white."""
    for alpha in (1.0, 0.75):
        want = alpha * _rgb(hex_color) + (1 - alpha)
        if int((np.abs(img[..., :3] - want).max(axis=-1) < tol).sum()) >= min_pixels:
            return True
    return False


def test_html_report_in_headless_chromium(experiment, chromium):
    db, eid, d = experiment
    html = d / "report.html"
    r = perflab("report", str(eid), "--store", str(db), "-o", str(html))
    assert r.code == 0, r.err
    assert f"wrote {html}" in r.out
    expected = json.loads(perflab("compare", str(eid), "--store", str(db), "--json").out)
    tldr = {(c["cell"], c["metric"]): c for c in expected["comparisons"]}
    assert len(tldr) == 4

    with Browser(chromium, width=1280, height=900) as b:
        page = b.open(html)
        # Loaded as a person would see it: nothing failed, nothing complained, nothing fetched.
        assert page.failed_requests == []
        assert page.console_errors == []
        assert page.exceptions == [] and page.dialogs == []
        assert all(u.startswith(("file:", "data:")) for u in page.requests), page.requests
        assert b.evaluate("document.scripts.length") == 0

        # The TLDR table: one row per cell, one column per metric, the compare values.
        table = b.evaluate("""Array.from(document.querySelectorAll('table.tldr thead tr, table.tldr tbody tr'),
                                 tr => Array.from(tr.children, c => c.textContent))""")
        head, rows = table[0], table[1:]
        # under them, the geometric mean across the cells (tests/analysis/test_sweep_compare.py)
        assert (
            b.evaluate("document.querySelector('table.tldr tfoot td').textContent")
            == "all 2 cells (geometric mean)"
        )
        assert head == ["keys", "ops_per_sec (ops/s) ↑", "p99_latency_ms (ms) ↓"]
        assert [row[0] for row in rows] == ["1000", "4000"]
        for row in rows:
            for metric, text in zip(["ops_per_sec", "p99_latency_ms"], row[1:]):
                c = tldr[(f"keys={row[0]}", metric)]
                word = c["verdict"] if c["verdict"] in ("better", "worse") else ""
                assert text == c["tldr"] + word, (row, c)

        # Every plot: a decoded, non-empty image, and the sections the issue asks for.
        figs = b.evaluate("""Array.from(document.querySelectorAll('figure.plot'), f => {
            const i = f.querySelector('img'); const r = i.getBoundingClientRect();
            return {id: f.id, ok: i.complete && i.naturalWidth > 0 && i.naturalHeight > 0,
                    x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height,
                    section: f.closest('section').id};
        })""")
        sections = {f["section"] for f in figs}
        assert {"change", "distributions", "order", "latency", "scaling"} <= sections, sections
        assert (
            len(figs) == 2 + 2 + 2 + 1 + 2
        )  # per metric ×3 sections, one kv phase, keys is numeric
        colors = variant_colors(["one-lru", "segmented"])
        for f in figs:
            assert f["ok"] and f["w"] > 300 and f["h"] > 100, f
            png = b.screenshot(clip={"x": f["x"], "y": f["y"], "width": f["w"], "height": f["h"]})
            img = mpimg.imread(io.BytesIO(png), format="png")
            ink = (img[..., :3].min(axis=-1) < 0.8).mean()
            assert ink > 0.01, (f["id"], ink)
            if f["section"] in ("distributions", "order", "latency", "scaling"):
                for v, color in colors.items():  # the same colour for a variant in every plot
                    assert _has_color(img, color), (f["id"], v, color)

        # The sections below the plots.
        text = b.evaluate("document.body.innerText")
        for needle in (
            "Warnings",
            "Environment",
            "memcached",
            "The experiment as run",
            'name = "report-browser"',
            "How to reproduce",
            f"perflab compare {eid}",
        ):
            assert needle in text, needle
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        b.screenshot(SCREENSHOT, max_height=4000)
    shot = mpimg.imread(SCREENSHOT)
    assert shot.shape[1] == 1280 and shot.shape[0] > 1000


def test_markdown_report_with_images_beside_it(experiment):
    db, eid, d = experiment
    md = d / "post" / "report.md"
    r = perflab("report", str(eid), "--store", str(db), "-o", str(md))
    assert r.code == 0, r.err
    text = md.read_text()
    images = sorted((d / "post" / "report_files").iterdir())
    assert len(images) == 9
    for p in images:
        assert f"](report_files/{p.name})" in text
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = json.loads(perflab("compare", str(eid), "--store", str(db), "--json").out)
    for c in expected["comparisons"]:
        assert c["tldr"] in text
    order = [
        text.index(h)
        for h in (
            "## Verdict",
            "## TLDR",
            "## Relative change per metric",
            "## Distributions of runs",
            "## Runs in execution order",
            "## Latency percentile spectra",
            "## Metrics against the matrix parameters",
            "## Warnings",
            "## Environment",
            "## The experiment as run",
            "## How to reproduce",
        )
    ]
    assert order == sorted(order)
    # A second report under the same name replaces its images and leaves other files alone.
    (d / "post" / "report_files" / "notes.txt").write_text("mine")
    r = perflab("report", str(eid), "--store", str(db), "-o", str(md), "--images", "svg")
    assert r.code == 0, r.err
    names = sorted(p.name for p in (d / "post" / "report_files").iterdir())
    assert "notes.txt" in names and not any(n.endswith(".png") for n in names)
    assert sum(n.endswith(".svg") for n in names) == 9


def test_report_json_holds_what_the_report_shows(experiment):
    db, eid, _d = experiment
    r = perflab("report", str(eid), "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["schema"] == "perflab.report/1"
    assert doc["comparison"]["schema"] == "perflab.compare/1"
    assert len(doc["runs"]) == 2 * 2 * 6  # cells × variants × (5 runs + 1 warm-up)
    assert sum(1 for x in doc["runs"] if x["warmup"]) == 4
    assert [x["position"] for x in doc["runs"]] == list(range(1, 25))
    spectra = doc["latency_spectra"]
    assert {(s["cell"], s["variant"]) for s in spectra} == {
        (c, v) for c in ("keys=1000", "keys=4000") for v in ("one-lru", "segmented")
    }
    for s in spectra:
        assert (
            s["phase"] == "access" and s["runs"] == 5
        )  # measured runs only; populate is not a result
        assert s["merged_ms"] == sorted(s["merged_ms"]) and s["merged_ms"][0] > 0
        assert len(s["per_run_ms"]) == 5
        assert s["percentiles"][0] == 0 and 99 < s["percentiles"][-1] < 100
    # The p99 from the merged histograms lies within the per-run p99 metrics' range
    # (pooled requests: it cannot be outside every run's own percentile).
    for s in spectra:
        p99 = [
            x["values"]["p99_latency_ms"]
            for x in doc["runs"]
            if x["cell"] == s["cell"] and x["variant"] == s["variant"] and not x["warmup"]
        ]
        i = s["nines"].index(2.0)
        assert min(p99) * 0.999 <= s["merged_ms"][i] <= max(p99) * 1.001
    assert doc["numeric_params"] == {"keys": {"1000": 1000.0, "4000": 4000.0}}
    assert doc["colors"] == variant_colors(["one-lru", "segmented"])
    assert doc["environment"]["columns"][0]["host"]
    keys = [s["id"] for s in doc["sections"]]
    assert keys == [
        "verdict",
        "tldr",
        "change",
        "distributions",
        "order",
        "latency",
        "scaling",
        "warnings",
        "environment",
        "output",
        "spec",
        "reproduce",
    ]
    assert any("perflab run" in x["command"] for x in doc["reproduce"])


def test_screenshot_option_checks_the_page(experiment, chromium):
    db, eid, d = experiment
    shot = d / "top.png"
    r = perflab(
        "report", str(eid), "--store", str(db), "-o", str(d / "r.html"), "--screenshot", str(shot)
    )
    assert r.code == 0, r.err
    img = mpimg.imread(shot)
    assert img.shape[1] == 1280 and 500 < img.shape[0] <= 2400
    assert shutil.which(chromium) or Path(chromium).is_file()
    # one section of it: the environment table, not the page's top
    part = d / "environment.png"
    args = ["--screenshot", str(part), "--screenshot-section", "environment"]
    r = perflab("report", str(eid), "--store", str(db), "-o", str(d / "r.html"), *args)
    assert r.code == 0, r.err
    section = mpimg.imread(part)
    assert section.shape[1] == 1280 and 0 < section.shape[0] <= 2400
    assert section.shape[0] != img.shape[0] or (section != img).any()
    r = perflab(
        "report",
        str(eid),
        "--store",
        str(db),
        "-o",
        str(d / "r.html"),
        "--screenshot",
        str(d / "x.png"),
        "--screenshot-section",
        "nope",
    )
    assert r.code != 0 and "the report has no section 'nope' (it has: " in r.err, r.err
    assert "environment" in r.err and "Traceback" not in r.err
