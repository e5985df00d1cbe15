"""Property-based fuzzing of everything a user types or hands over: experiment files, CSVs,
command lines. Whatever the input, perflab either accepts it or says why in one line
(a `PerflabError`; exit code 2 at the CLI): never another exception, never a traceback.

Deterministic (``derandomize=True``, no example database), so CI sees the same inputs every
run; the counts below add up to several thousand examples in well under a minute.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import csv
import io
import json
import math
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perflab.cli import build_parser, main
from perflab.csv_import import MetricColumn, read_runs_csv
from perflab.errors import PerflabError
from perflab.plan import make_plan
from perflab.spec import load_spec
from testdata import MGLRU_RUNS, ROUTER_MODEL_COLUMNS, ROUTER_PLATFORMS

REPO = Path(__file__).resolve().parents[2]
PLATFORMS = ROUTER_PLATFORMS

#: Examples per test (the sum is what the fuzzing covers).
EXAMPLES = {
    "spec_documents": 1500,
    "spec_text": 700,
    "spec_bytes": 300,
    "csv_text": 900,
    "csv_bytes": 300,
    "csv_cli": 150,
    "cli": 1000,
    "tool_files": 400,
}


#: PERFLAB_FUZZ_EXPLORE=N: random (not derandomized) inputs, N times as many — to look for new
#: failures on a developer's machine; CI runs the fixed, deterministic set.
EXPLORE = int(os.environ.get("PERFLAB_FUZZ_EXPLORE") or 0)


def fuzz_settings(name: str):
    return settings(
        max_examples=EXAMPLES[name] * max(EXPLORE, 1),
        derandomize=not EXPLORE,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


def assert_one_line(e: PerflabError) -> None:
    text = e.one_line()
    assert text and len(text.splitlines()) == 1 and "\n" not in text, repr(text)
    assert text.isprintable(), repr(text)


WORK = Path(
    tempfile.mkdtemp(prefix="perflab-fuzz-")
)  # hypothesis reruns a test body: no per-test tmp_path
atexit.register(shutil.rmtree, WORK, True)


# ============================================================================ experiment files

GOOD = {
    "name": "demo",
    "baseline": "a",
    "repetitions": 3,
    "timeout": "30s",
    "params": {"port": 11211, "label": "x"},
    "matrix": {"size": [1, 2], "keys": {"90%": 1600, "110%": 2000}},
    "variant": [
        {"name": "a", "setup": "true"},
        {"name": "b", "params": {"extra": 1}, "env": {"X": "1"}},
    ],
    "phase": [
        {"name": "prep", "measure": False, "command": "echo {port}"},
        {"name": "work", "command": "echo {size} {keys}", "parser": "hyperfine", "timeout": "10s"},
    ],
    "metric": [
        {"name": "mean_s", "better": "lower", "unit": "s"},
        {"name": "wall_time", "better": "lower", "harness": "wall_time"},
        {"name": "r", "better": "higher", "regex": "r=(?P<value>[0-9.]+)", "overhead": "true"},
    ],
}
KV = {
    "name": "kv",
    "baseline": "a",
    "repetitions": {"min": 2, "max": 4, "target_ci": "5%"},
    "matrix": {"clients": [1, 2]},
    "variant": [{"name": "a"}, {"name": "b"}],
    "phase": [
        {
            "name": "load",
            "kv": {
                "server": "127.0.0.1:1",
                "protocol": "memcache_text",
                "test_time": "1s",
                "ratio": "1:1",
                "clients": "{clients}",
                "threads": 1,
            },
        }
    ],
    "metric": [
        {"name": "ops_per_sec", "better": "higher"},
        {"name": "hit_ratio", "better": "higher"},
        {"name": "p99", "better": "lower", "field": "p99_latency_ms"},
    ],
}
PROBE = {
    "name": "probe",
    "baseline": "a",
    "warmup": 1,
    "variant": [{"name": "a"}, {"name": "b"}],
    "phase": [
        {"name": "cpu", "cores": 1, "probe": {"name": "cpu", "duration": 0.01}},
        {"name": "mm", "probe": {"name": "memmove", "case": "small_tlbmiss", "duration": 0.01}},
    ],
    "metric": [
        {"name": "cpu_iter_per_sec", "better": "higher", "phase": "cpu"},
        {"name": "memmove_mib_per_sec", "better": "higher", "phase": "mm"},
    ],
}
BASES = [GOOD, KV, PROBE]

#: Strings that mean something somewhere in a spec, and strings that break things.
WORDS = [
    "",
    " ",
    "a",
    "b",
    "c",
    "work",
    "prep",
    "load",
    "demo",
    "size",
    "keys",
    "port",
    "clients",
    "{size}",
    "{nope}",
    "{variant}",
    "{{x}}",
    "${HOME}",
    "10s",
    "0s",
    "-1s",
    "1e9h",
    "500ms",
    "1%",
    "0%",
    "100%",
    "true",
    "false",
    "nan",
    "inf",
    "higher",
    "lower",
    "hyperfine",
    "memtier",
    "memtier_json",
    "wall_time",
    "ops_per_sec",
    "ops_per_sce",
    "p99_latency_ms",
    "cpu",
    "memmove",
    "latency",
    "interleaved",
    "sequential",
    "continue",
    "abort",
    "stdout",
    "stderr",
    "a.b[0].c",
    "(unclosed",
    "x=(?P<value>1)",
    "a\nb",
    "tab\there",
    "nul\x00",
    "\u202e",
    "é",
    "🙂",
    "A=B",
    "x" * 5000,
    "y" * 70000,
    "1:0",
    "0:1",
    "G:G",
    "allkeys",
    "127.0.0.1:1",
    "memcache_binary",
    "redis",
    "P:P",
]
KEYS = [
    "name",
    "baseline",
    "repetitions",
    "warmup",
    "order",
    "seed",
    "timeout",
    "on_failure",
    "confidence",
    "workdir",
    "before_all",
    "after_each",
    "env",
    "params",
    "tools",
    "matrix",
    "variant",
    "phase",
    "metric",
    "description",
    "command",
    "measure",
    "shell",
    "parser",
    "cores",
    "kv",
    "probe",
    "field",
    "json",
    "regex",
    "harness",
    "scale",
    "overhead",
    "overhead_phase",
    "setup",
    "teardown",
    "min",
    "max",
    "target_ci",
    "metrics",
    "better",
    "unit",
    "stream",
    "max_failures",
    "kill_grace",
    "repetitons",
    "Size",
    "bad-key",
    "a b",
    "\n",
    "",
]

scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-3, max_value=40),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63), 2**63 - 1, 10**30, 100_000, 100_001, 4097]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(doc, prefix=()):
    """Every (path, container) place in a document a mutation can touch."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _get(doc, path):
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def spec_documents(draw):
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(0, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["set", "set", "delete", "add", "nest", "duplicate"]))
        if not path:
            op = "add"
        parent = _get(doc, path[:-1]) if path else None
        target = _get(doc, path)
        if op == "set":
            parent[path[-1]] = draw(values)
        elif op == "delete":
            del parent[path[-1]]
        elif op == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(KEYS))] = draw(values)
        elif op == "add" and isinstance(target, list):
            target.append(draw(values))
        elif op == "nest":
            depth = draw(st.sampled_from([2, 5, 31, 33, 200]))
            inner = target
            for _ in range(depth):
                inner = [inner] if draw(st.booleans()) else {"k": inner}
            parent[path[-1]] = inner
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(target))
    return doc


def _key(k) -> str:
    k = str(k)
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def to_toml(value, top: bool = False) -> str:
    """A minimal TOML writer (inline tables and arrays), enough for fuzzed documents."""
    if top:
        return "".join(f"{_key(k)} = {to_toml(v)}\n" for k, v in value.items())
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(to_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {to_toml(v)}" for k, v in value.items()) + "}"


def check_spec_text(text: str, name: str = "spec.toml") -> None:
    path = WORK / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        spec = load_spec(path)
    except PerflabError as e:
        assert_one_line(e)
        return
    m = spec.model
    cells = 1
    for v in m.matrix.values():
        cells *= len(v)
    if cells * len(m.variant) * (m.warmup + m.initial_repetitions) <= 5000:
        assert make_plan(m)
        check_cli(["run", str(path), "--dry-run"])


@fuzz_settings("spec_documents")
@given(spec_documents())
def test_fuzz_spec_documents(doc):
    check_spec_text(to_toml(doc, top=True))


@st.composite
def mutated_text(draw):
    text = to_toml(draw(st.sampled_from(BASES)), top=True)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "lines"]))
        if op == "insert":
            text = (
                text[:i]
                + draw(
                    st.sampled_from(["[", "]", "{", "}", '"', "'", "=", "\n", ",", "#", "\\", "."])
                    | st.text(max_size=4)
                )
                + text[i:]
            )
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 20)) :]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(WORDS)) + text[i + 1 :]
        else:
            lines = text.splitlines(keepends=True)
            text = "".join(draw(st.permutations(lines)))
    return text


@fuzz_settings("spec_text")
@given(mutated_text())
def test_fuzz_spec_text(text):
    check_spec_text(text)


@fuzz_settings("spec_bytes")
@given(st.binary(max_size=300) | st.builds(lambda b: b"\xef\xbb\xbf" + b, st.binary(max_size=50)))
def test_fuzz_spec_bytes(data):
    path = WORK / "bytes.toml"
    path.write_bytes(data)
    try:
        load_spec(path)
    except PerflabError as e:
        assert_one_line(e)


# ============================================================================ CSV import

CELLS = [
    "a",
    "b",
    "1",
    "2",
    "0",
    "-1",
    "1.5",
    "1e3",
    "1e999",
    "nan",
    "inf",
    "",
    " ",
    '"',
    '""',
    ",",
    "\n",
    "\r\n",
    "#",
    "\x00",
    "\ufeff",
    "é",
    "x" * 300,
    "9" * 70000,
]
COLUMNS = ["variant", "n", "t", "x", "", " t", "variant ", "t"]


@st.composite
def csv_texts(draw):
    header = draw(st.lists(st.sampled_from(COLUMNS) | st.text(max_size=4), max_size=5))
    if draw(st.booleans()):
        header = ["variant", "n", "t"] + header[:1]
    rows = draw(
        st.lists(
            st.lists(
                st.sampled_from(CELLS) | st.text(max_size=5) | st.floats().map(repr),
                min_size=0,
                max_size=5,
            ),
            max_size=6,
        )
    )
    out = io.StringIO()
    if draw(st.booleans()):
        w = csv.writer(out)
        w.writerow(header)
        w.writerows(rows)
        text = out.getvalue()
    else:  # hand-joined: quotes, commas and newlines break it in any way they like
        text = "\n".join(",".join(r) for r in [header, *rows])
    prefix = draw(
        st.sampled_from(
            [
                "",
                "\ufeff",
                "# source: the MGLRU memcached experiment, table 2\n",
                "#\n#\n",
                "\n",
                "\ufeff# c\n",
            ]
        )
    )
    return prefix + text


def check_csv(path: Path) -> None:
    try:
        read_runs_csv(
            path,
            variant_col="variant",
            param_cols=["n"],
            metrics=[MetricColumn("t", "lower")],
            baseline="a",
        )
    except PerflabError as e:
        assert_one_line(e)


@fuzz_settings("csv_text")
@given(csv_texts())
def test_fuzz_csv_text(text):
    path = WORK / "in.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_csv(path)


@fuzz_settings("csv_bytes")
@given(st.binary(max_size=300))
def test_fuzz_csv_bytes(data):
    path = WORK / "bytes.csv"
    path.write_bytes(data)
    check_csv(path)


@fuzz_settings("csv_cli")
@given(
    csv_texts(),
    st.sampled_from([[], ["--param", "n"], ["--param", "n", "--param", "n"]]),
    st.sampled_from(
        [
            ["--metric", "t:lower"],
            ["--metric", "t:higher:ms"],
            ["--metric", "t"],
            ["--metric", "variant:higher"],
            ["--metric", "n:lower", "--metric", "t:lower"],
        ]
    ),
)
def test_fuzz_csv_through_the_cli(text, params, metrics):
    path = WORK / "cli.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    db = WORK / "csv-cli.db"
    if db.exists():
        db.unlink()
    code, _err = check_cli(
        [
            "import",
            str(path),
            "--store",
            str(db),
            "--variant",
            "variant",
            *params,
            *metrics,
            "--baseline",
            "a",
        ]
    )
    assert (code == 0) == db.exists()  # a bad CSV creates no store


# ============================================================================ command lines


def check_cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    text = err.getvalue()
    assert isinstance(code, int) and code in (0, 1, 2), (argv, code, text)
    assert "Traceback" not in text, (argv, text)
    if code == 2:
        errors = [line for line in text.splitlines() if line.startswith("perflab: error: ")]
        assert len(errors) == 1, (argv, text)
    return code, text


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CLI = WORK / "cli"
CLI.mkdir()
STORE = CLI / "store.db"
A_FILE = CLI / "a-file"
A_FILE.write_text("x")
GOOD_SPEC = CLI / "good.toml"
GOOD_SPEC.write_text(to_toml(GOOD, top=True))
KV_SPEC = CLI / "kv.toml"
KV_SPEC.write_text(to_toml(KV, top=True))
BAD_SPEC = CLI / "bad.toml"
BAD_SPEC.write_text("a = " + "[" * 100 + "]" * 100 + "\n")
TREND = CLI / "trend.csv"
TREND.write_text(
    "variant,n,t\n"
    + "".join(
        f"{v},{n},{base * (1 + 0.1 * i) * (1 + 0.01 * r)}\n"
        for i, n in enumerate([10, 20, 40, 80])
        for v, base in (("a", 100), ("b", 100 + 30 * i))
        for r in range(3)
    )
)

FILES = [
    str(p) for p in (MGLRU_RUNS, PLATFORMS, GOOD_SPEC, KV_SPEC, BAD_SPEC, TREND, A_FILE, CLI)
] + [
    str(CLI / "missing.csv"),
    "-",
    "",
    "/sys/x",
    str(A_FILE / "x"),
    "/dev/null",
]
OUTPUTS = [
    str(CLI / "out" / n)
    for n in ("r.html", "r.md", "r.json", "r.csv", "e.json", "plot.svg", "r.txt")
] + ["-", "/sys/x.html", str(A_FILE / "r.html"), str(CLI), "", "/sys/no/dir/r.md"]
EXPERIMENTS = [
    "1",
    "2",
    "last",
    "0",
    "-1",
    "99",
    "nope",
    "",
    "mglru-memcached",
    "trend",
    "1.5",
    "1e3",
]
TEXT = [
    "abc",
    "",
    "-",
    "-1",
    "0",
    "1",
    "2",
    "4",
    "10M",
    "1e7",
    "1%",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "0.95",
    "welch",
    "bootstrap",
    "mannwhitney",
    "paired",
    "nope",
    "mean",
    "median",
    "p90",
    "p200",
    "auto",
    "ratio",
    "shift",
    "ram_utilization_pct",
    "n",
    "t",
    "ops_per_sec",
    "baseline",
    "mglru",
    "a",
    "b",
    "baseline=mglru",
    "a=b",
    "=",
    "x=",
    "1:10",
    "0:0",
    "allkeys",
    "P:P",
    "G:G",
    "Z:Z",
    "100-10",
    "1-2",
    "memcache_text",
    "redis",
    "5s",
    "1ms",
    "0s",
    "10h",
    "0,1",
    "1-3",
    "50,99",
    "é",
    "a\nb",
    "\x00",
    "x" * 3000,
]
INTS = ["-5", "-1", "0", "1", "2", "3", "10", "64", "abc", "1.5", "", "1e3"]
HUGE = ["2147483648", "9223372036854775808", "-9223372036854775809", "1" + "0" * 40]
#: Options whose values cost time or memory when large: small values only.
SMALL_ONLY = {
    "--resamples",
    "--bootstrap",
    "--clients",
    "--threads",
    "--pipeline",
    "--repeat",
    "--points-per-octave",
    "--requests",
    "--test-time",
    "--warmup",
    "--rate",
    "--connect-timeout",
    "--response-timeout",
    "--data-size",
    "--data-size-range",
}
#: Options left out: where the load goes (it must stay a closed local port), a real browser.
LEFT_OUT = {"--server", "--port", "--source-address", "--help", "--version", "--store"}
STORES = [str(STORE)] * 12 + [str(A_FILE), str(CLI), "/sys/x.db", str(CLI / "new.db"), "abc", ""]
EXAMPLE_SPECS = [str(p) for p in sorted((REPO / "examples").glob("*.toml"))]
POSITIONALS = {
    "experiment": ["1", "2", "last"] * 4 + EXPERIMENTS,
    "other": ["1", "2"] * 3 + EXPERIMENTS,
    "spec": [str(GOOD_SPEC), str(KV_SPEC)] * 3 + EXAMPLE_SPECS + FILES,
    "file": [str(MGLRU_RUNS), str(TREND)] * 3 + FILES,
    "csv": [str(PLATFORMS)] * 4 + FILES,
}
SCREENSHOTS = ["/sys/x.png", str(A_FILE / "x.png")]  # unwritable: refused before any browser starts


def _commands():
    """command path → (positional actions, optional actions) from the real parser."""
    out = {}

    def walk(parser, path):
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if subs:
            for name, sub in subs[0].choices.items():
                walk(sub, path + (name,))
            return
        positionals = [a for a in parser._actions if not a.option_strings]
        optionals = [
            a
            for a in parser._actions
            if a.option_strings and not (set(a.option_strings) & LEFT_OUT)
        ]
        out[path] = (positionals, optionals)

    walk(build_parser(), ())
    return out


COMMANDS = {
    path: acts for path, acts in _commands().items() if path[0] != "probe"
}  # probes run for real


def _value_for(draw, action) -> str | None:
    option = action.option_strings[-1] if action.option_strings else action.dest
    if action.nargs == 0:
        return None
    if option == "--screenshot":
        return draw(st.sampled_from(SCREENSHOTS))
    if option in ("--output", "--export", "--plot"):
        return draw(st.sampled_from(OUTPUTS))
    if option in ("--target", "--from-store", "--target-store", "--resume") or action.dest in (
        "file",
        "csv",
        "spec",
    ):
        return draw(st.sampled_from(FILES + EXPERIMENTS[:3] + [f"{STORE};name=x", str(STORE)]))
    if action.dest == "experiment":
        return draw(st.sampled_from(["1", "2", "last"]) | st.sampled_from(EXPERIMENTS))
    if action.dest == "other":
        return draw(st.sampled_from(["1", "2"]) | st.sampled_from(EXPERIMENTS))
    if action.choices:
        return draw(st.sampled_from(list(action.choices) + ["nope"]))
    if option in SMALL_ONLY:
        return draw(st.sampled_from(INTS + ["0.01s", "10ms", "abc", "1:0"]))
    if action.type is int:
        return draw(st.sampled_from(INTS + HUGE))
    return draw(st.sampled_from(TEXT + INTS + HUGE) | st.floats().map(repr) | st.text(max_size=6))


@st.composite
def command_lines(draw):
    path = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, optionals = COMMANDS[path]
    argv = list(path)
    for action in positionals:
        if action.nargs == "?" and draw(st.integers(0, 3)) < (3 if action.dest == "other" else 1):
            continue  # a second experiment in a quarter of the commands; other optionals mostly given
        pool = POSITIONALS.get(action.dest)
        argv.append(draw(st.sampled_from(pool)) if pool else _value_for(draw, action))
    for action in draw(st.lists(st.sampled_from(optionals), max_size=3)) if optionals else []:
        option = draw(st.sampled_from(action.option_strings))
        value = _value_for(draw, action)
        if value is None:
            argv.append(option)
        elif value.startswith("-") and option.startswith("--"):
            argv.append(f"{option}={value}")  # a value that looks like an option
        else:
            argv += [option, value]
    if path[0] == "run":
        argv.append("--dry-run")  # plans are printed, nothing is executed
    if path[0] == "load":
        argv += ["-s", f"127.0.0.1:{_closed_port()}", "--connect-timeout", "1s"]
    if path[0] == "model" and draw(
        st.booleans()
    ):  # the published platforms' columns (README), so that models get fitted
        argv += ROUTER_MODEL_COLUMNS
    if path[0] == "model" and path[-1] in ("fit", "predict"):
        argv += ["--bootstrap", "20"] if "--bootstrap" not in argv else []
    if path[0] == "import" and draw(st.integers(0, 3)):
        argv += [
            "--variant",
            "variant",
            "--metric",
            draw(st.sampled_from(["ops_per_sec:higher", "t:lower"])),
            "--baseline",
            draw(st.sampled_from(["baseline", "a"])),
        ]
    if path[0] in ("ls", "show", "compare", "report", "import", "run"):
        argv += ["--store", draw(st.sampled_from(STORES))]
    return argv


def _prepare_store():
    if STORE.exists():
        return
    for csv_path, variant, params, metric, baseline in (
        (
            MGLRU_RUNS,
            "variant",
            ["--param", "ram_utilization_pct"],
            "ops_per_sec:higher",
            "baseline",
        ),
        (TREND, "variant", ["--param", "n"], "t:lower", "a"),
    ):
        code, err = check_cli(
            [
                "import",
                str(csv_path),
                "--store",
                str(STORE),
                "--variant",
                variant,
                *params,
                "--metric",
                metric,
                "--baseline",
                baseline,
                "--name",
                csv_path.stem,
            ]
        )
        assert code == 0, err


@fuzz_settings("cli")
@given(command_lines())
def test_fuzz_command_lines(argv):
    _prepare_store()
    with contextlib.chdir(CLI):  # a report with no -o lands here, not in the repository
        check_cli(argv)


# ============================================================================ tool result files

TOOL_DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
#: Each JSON format and a real-shaped file of it.
TOOL_JSON = {
    "gbench": TOOL_DATA / "gbench" / "bench.json",
    "hyperfine": TOOL_DATA / "hyperfine" / "commands.json",
    "pytest-benchmark": next((TOOL_DATA / "pytest-benchmark").glob("*.json")),
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)  # fmt: skip


def _paths(doc: object, at: tuple = ()) -> list[tuple]:
    """Every place in a JSON document, as a path of keys and indexes."""
    out = [at]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*at, i))
    return out


@st.composite
def tool_files(draw):
    """A format and its file: a real-shaped one with a few places replaced by anything
    (wrong types, NaN, huge numbers, empty arrays), removed, or the text cut short."""
    fmt = draw(st.sampled_from(sorted(TOOL_JSON)))
    doc = json.loads(TOOL_JSON[fmt].read_text())
    for _ in range(draw(st.integers(1, 4))):
        places = _paths(doc)[1:]
        if not places:
            break
        path = draw(st.sampled_from(places))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    text = json.dumps(doc)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return fmt, text


@fuzz_settings("tool_files")
@given(
    tool_files(),
    st.sampled_from([[], ["--variant-from", "benchmark"], ["--variant-from", "command"]]),
)
def test_fuzz_tool_files(found, options):
    """`perflab import --format F FILE` on mutated real-shaped files of each JSON format:
    stored (exit 0) or refused in one line (exit 2), never a traceback; a refused file
    creates no store."""
    fmt, text = found
    folder = Path(tempfile.mkdtemp(dir=CLI))
    try:
        path, db = folder / "result.json", folder / "store.db"
        path.write_text(text)
        code, _err = check_cli(["import", "--format", fmt, str(path), *options, "--store", str(db)])
        assert (code == 0) == db.exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ============================================================================ what fuzzing found


def test_found_model_predict_then_fit_in_one_process():
    """`perflab model predict` (the README's command) ended in a TypeError: predict.py imports the
    submodule perflab.model.fit, which replaced the package's lazily loaded `fit` function
    (the module is now model/fitting.py: no module is named like a function of its package)."""
    target = ["--target-cpu", "20000", "--target-memmove", "40", "--target-length", "172"]
    code, err = check_cli(
        ["model", "predict", str(PLATFORMS), *ROUTER_MODEL_COLUMNS, "--N", "0", *target]
    )
    assert code == 0, err
    code, err = check_cli(
        ["model", "fit", str(PLATFORMS), *ROUTER_MODEL_COLUMNS, "--N", "0", "--bootstrap", "20"]
    )
    assert code == 0, err


def test_found_binary_file_given_as_a_csv_is_one_line():
    """A results store handed to `perflab model fit` as its CSV: UnicodeDecodeError, a traceback."""
    _prepare_store()
    code, err = check_cli(["model", "fit", str(STORE), *ROUTER_MODEL_COLUMNS])
    assert code == 2 and "not UTF-8 text" in err
