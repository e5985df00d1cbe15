"""Bad input — a spec, an argument, a CSV, an output path — is one line on stderr
(``perflab: error: …``), exit code 2, no traceback, and nothing written: no store, no file.

Every case goes through the real CLI entry point (`perflab.cli.main`) with in-memory writers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cli_helpers import REPO, one_error, perflab, write_spec
from perflab.cli import build_parser
from perflab.spec import limits
from testdata import MGLRU_RUNS, mglru_import
from testdata import MINIMAL_SPEC as GOOD  # the one minimal valid spec
from unprivileged import perflab_unprivileged


def spec_error(tmp_path: Path, text: str) -> str:
    """Run (for real, not --dry-run) a bad spec: one line, with the spec's path replaced by SPEC;
    and no store created."""
    spec = write_spec(tmp_path, text)
    db = tmp_path / "p.db"
    dry = one_error(perflab("run", str(spec), "--dry-run"))  # were the check to pass, nothing runs
    r = perflab("run", str(spec), "--store", str(db))
    line = one_error(r)
    assert line == dry
    assert not db.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.toml"]
    return line.replace(str(spec), "SPEC")


def changed(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


# ----------------------------------------------------------------------------- nesting, size


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 3000 + "]" * 3000 + "\n",
        "a = " + "{ b = " * 3000 + "1" + " }" * 3000 + "\n",
        "a" + ".a" * 3000 + " = 1\n",
        "[" + ".".join(["a"] * 3000) + "]\nx = 1\n",
        'name = "x"\n\nmatrix = { size = ' + "[" * 40 + "]" * 40 + " }\n",
    ],
)
def test_deep_nesting_is_one_line_at_its_line(tmp_path, text):
    line = spec_error(tmp_path, text)
    want_line = text.count("\n", 0, text.index("[" if "[" in text else "a")) + 1
    assert line.startswith(f"perflab: error: SPEC:{want_line}: "), line
    assert f"nested more than {limits.MAX_DEPTH} deep" in line


def test_spec_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_bytes(b"[" * (3 << 20))  # 3 MiB, and no valid TOML either: size is checked first
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert one_error(r) == f"perflab: error: spec {spec} is 3 MiB; the limit is 1 MiB"
    assert not (tmp_path / "p.db").exists()


def test_a_50_mb_description_is_refused_in_one_short_line(tmp_path):
    text = changed('baseline = "a"', 'baseline = "a"\ndescription = "' + "x" * (50 << 20) + '"')
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert one_error(r) == f"perflab: error: spec {spec} is 50 MiB; the limit is 1 MiB"


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            'baseline = "a"',
            'baseline = "a"\ndescription = "' + "x" * 5000 + '"',
            "SPEC:3: description: String should have at most 4096 characters, got 'xxxx",
        ),
        (
            'command = "echo {size}"',
            'command = "' + "x" * (65 << 10) + '"',
            "SPEC:15: phase[1].command: the command is 65 KiB; the limit is 64 KiB",
        ),
        (
            "size = [1, 2]",
            "size = ["
            + ", ".join(map(str, range(200)))
            + "]\nn = ["
            + ", ".join(map(str, range(100)))
            + "]",
            "SPEC:5: the matrix has 200 × 100 = 20,000 cells; the limit is 10,000",
        ),
        (
            "repetitions = 3",
            "repetitions = 60000\nwarmup = 1000",
            (
                "SPEC:3: the plan has 2,440,000 runs: 20 cells × 2 variants × (1000 warm-up + 60,000 runs); the limit "
                "is 1,000,000"
            ),
        ),
    ],
)
def test_size_limits(tmp_path, old, new, expected):
    text = changed(old, new).replace(
        "size = [1, 2]", "size = [" + ", ".join(map(str, range(1, 21))) + "]"
    )
    assert expected in spec_error(tmp_path, text)


def test_long_values_are_cut_in_the_message(tmp_path):
    line = spec_error(
        tmp_path, changed('baseline = "a"', 'baseline = "a"\ndescription = "' + "y" * 9000 + '"')
    )
    assert len(line) < 300 and "(9,000 characters)" in line


# ----------------------------------------------------------------------------- strict types


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "repetitions = 3",
            "repetitions = true",
            "SPEC:3: repetitions: expected a whole number, not true",
        ),
        (
            "repetitions = 3",
            "repetitions = 3.0",
            "SPEC:3: repetitions: expected a whole number, got 3.0",
        ),
        (
            "repetitions = 3",
            'repetitions = "3"',
            "SPEC:3: repetitions: write numbers without quotes: 3, not '3'",
        ),
        (
            "repetitions = 3",
            "repetitions = 3\nwarmup = false",
            "SPEC:4: warmup: expected a whole number, not false",
        ),
        (
            "repetitions = 3",
            "repetitions = 3\nseed = -1",
            "SPEC:4: seed: Input should be greater than or equal to 0",
        ),
        (
            "repetitions = 3",
            'repetitions = 3\nconfidence = "0.9"',
            "SPEC:4: confidence: write numbers without quotes",
        ),
        (
            "repetitions = 3",
            "repetitions = 3\nconfidence = true",
            "SPEC:4: confidence: expected a number, not true",
        ),
        (
            "repetitions = 3",
            "repetitions = 3\ntimeout = true",
            "SPEC:4: timeout: bad duration True",
        ),
        (
            "repetitions = 3",
            "repetitions = 3\ntimeout = 1e300",
            "SPEC:4: timeout: duration 1e+300 is longer than the limit",
        ),
        (
            'command = "echo {size}"',
            'command = ""',
            "SPEC:15: phase[1].command: the command is empty",
        ),
        (
            'command = "echo {size}"',
            'command = "  \\n "',
            "SPEC:15: phase[1].command: the command is empty",
        ),
        (
            'command = "echo {size}"',
            'command = "echo {size}"\nshell = "no"',
            "SPEC:16: phase[1].shell: Input should be a valid boolean, got 'no'",
        ),
        (
            'command = "echo {size}"',
            'command = "echo {size}"\nmeasure = "yes"',
            "SPEC:16: phase[1].measure: Input should be a valid boolean, got 'yes'",
        ),
        (
            'command = "echo {size}"',
            'command = "echo {size}"\ncores = "2"',
            "SPEC:16: phase[1].cores: write numbers without quotes: 2, not '2'",
        ),
        (
            'command = "echo {size}"',
            'command = "echo \\u0000"',
            "SPEC:15: phase[1].command: contains a NUL character",
        ),
        ('name = "b"', 'name = "b"\nsetup = ""', "SPEC:12: variant[2].setup: the command is empty"),
        (
            'name = "b"',
            'name = "b"\nenv = { "A=B" = "1" }',
            "SPEC:12: variant[2].env.A=B: bad environment variable name 'A=B'",
        ),
        (
            'name = "b"',
            'name = "b"\nenv = { PATH = 1 }',
            "SPEC:12: variant[2].env.PATH: Input should be a valid string",
        ),
        (
            'better = "lower"',
            'better = "lower"\nscale = inf',
            "SPEC:20: metric[1].scale: Input should be a finite number",
        ),
        (
            "size = [1, 2]",
            "size = [[1], 2]",
            "SPEC:6: matrix.size[1]: expected true/false, a whole number, a number or a string",
        ),
    ],
)
def test_lax_values_are_errors(tmp_path, old, new, expected):
    line = spec_error(tmp_path, changed(old, new))
    assert line.startswith("perflab: error: " + expected), line


def test_a_newline_in_a_key_stays_one_line(tmp_path):
    line = spec_error(tmp_path, changed("repetitions = 3", 'repetitions = 3\n"a\\nb" = 1'))
    assert (
        line
        == r"perflab: error: SPEC:4: unknown key 'a\nb' in the top level (known keys: "
        + line.split("(known keys: ")[1]
    )


# ----------------------------------------------------------------------------- variant params


def test_variant_params_may_not_set_a_matrix_parameter(tmp_path):
    line = spec_error(
        tmp_path, changed('name = "b"', 'name = "b"\ndescription = "x"\nparams = { size = 3 }')
    )
    assert line == (
        "perflab: error: SPEC:13: variant 'b' sets 'size', a matrix parameter: its cells would be "
        "labelled with values that never ran (remove it, or make it a variant-only parameter)"
    )


def test_variant_only_parameters_and_constant_overrides_are_fine(tmp_path):
    text = changed("[matrix]", "[params]\nport = 1\n\n[matrix]")
    text = text.replace('name = "b"', 'name = "b"\nparams = { port = 2, extra = "x" }')
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code == 0, r.err


@pytest.mark.parametrize(
    "example", sorted((REPO / "examples").glob("*.toml")), ids=lambda p: p.name
)
def test_examples_still_load(example):
    from perflab.api.bisect_spec import GOOD, read_spec, step_spec
    from perflab.spec import load_spec

    if "bisect" in example.name:  # a bisect's file: valid as the steps made from it
        bisected = read_spec(example, None)
        ids = {v: f"{i:040x}" for i, v in enumerate(("good", "candidate", "bad"))}
        step = step_spec(bisected, 1, ids, {}, REPO, 0.02)
        assert step.model.baseline == GOOD and len(step.model.variant) == 3
        return
    spec = load_spec(example)  # valid (bad input would raise with file:line)
    if any(h.control is None for h in spec.model.hosts.values()):
        return  # --dry-run connects to its machines, which are yours to name
    r = perflab("run", str(example), "--dry-run")
    assert r.code == 0, r.err


# ----------------------------------------------------------------------------- metric names

KV = """\
name = "kv"
baseline = "a"
repetitions = 2

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "access"
[phase.kv]
server = "127.0.0.1:1"
protocol = "memcache_text"
test_time = "1s"
ratio = "1:0"

[[metric]]
name = "ops_per_sec"
better = "higher"
"""


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            'name = "ops_per_sec"',
            'name = "ops_per_sce"',
            "SPEC:19: kv phase 'access' reports no metric 'ops_per_sce' (did you mean 'ops_per_sec'?)",
        ),
        (
            'name = "ops_per_sec"',
            'name = "hit_ratio"',
            (
                "SPEC:19: kv phase 'access' reports no metric 'hit_ratio' (only a load that sends GETs reports it, "
                "and ratio N:0 sends none)"
            ),
        ),
        (
            'name = "ops_per_sec"',
            'name = "p99_uncorrected_latency_ms"',
            (
                "SPEC:19: kv phase 'access' reports no metric 'p99_uncorrected_latency_ms' (only an open-loop load "
                "reports it: give the kv table a rate (in every cell))"
            ),
        ),
        (
            'name = "ops_per_sec"',
            'name = "wall_time"',
            "SPEC:19: kv phase 'access' reports no metric 'wall_time'",
        ),
        (
            'better = "higher"',
            'better = "higher"\nfield = "p99_latncy_ms"',
            (
                "SPEC:21: metric 'ops_per_sec': kv phase 'access' reports no field 'p99_latncy_ms' "
                "(did you mean 'p99_latency_ms'?)"
            ),
        ),
    ],
)
def test_kv_metric_names_are_checked_at_load(tmp_path, old, new, expected):
    assert old in KV
    assert spec_error(tmp_path, KV.replace(old, new, 1)).startswith("perflab: error: " + expected)


def test_kv_metric_names_that_exist_in_this_mode_load(tmp_path):
    text = KV.replace('ratio = "1:0"', 'ratio = "1:1"\nrate = 1000').replace(
        'name = "ops_per_sec"', 'name = "p99_uncorrected_latency_ms"'
    )
    text += '\n[[metric]]\nname = "hit_ratio"\nbetter = "higher"\n'
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code == 0, r.err


@pytest.mark.parametrize(
    "parser, name, expected",
    [
        (
            "hyperfine",
            "mean_sx",
            (
                "SPEC:19: phase 'work' (parser 'hyperfine') reports no metric 'mean_sx' "
                "(did you mean 'mean_s'?)"
            ),
        ),
        (
            "hyperfine",
            "throughput",
            (
                "SPEC:19: phase 'work' (parser 'hyperfine') reports no metric 'throughput' "
                "(it reports failed_runs, max_s"
            ),
        ),
        (
            "memtier",
            "ops_per_sce",
            (
                "SPEC:19: phase 'work' (parser 'memtier') reports no metric 'ops_per_sce' "
                "(did you mean 'ops_per_sec'?)"
            ),
        ),
    ],
)
def test_parser_metric_names_are_checked_at_load(tmp_path, parser, name, expected):
    text = changed('command = "echo {size}"', f'command = "echo {{size}}"\nparser = "{parser}"')
    text = text.replace('name = "wall_time"', f'name = "{name}"')
    assert spec_error(tmp_path, text).startswith("perflab: error: " + expected)


@pytest.mark.parametrize(
    "parser, name",
    [
        ("hyperfine", "fast_mean_s"),
        ("hyperfine", "wall_time"),
        ("memtier", "gets_p9999_latency_ms"),
        ("memtier", "moved_per_sec"),
        ("memtier", "some_new_column"),
    ],
)
def test_parser_metric_names_that_may_exist_load(tmp_path, parser, name):
    text = changed('command = "echo {size}"', f'command = "echo {{size}}"\nparser = "{parser}"')
    r = perflab(
        "run",
        str(write_spec(tmp_path, text.replace('name = "wall_time"', f'name = "{name}"'))),
        "--dry-run",
    )
    assert r.code == 0, r.err


def test_probe_metric_names_are_checked_at_load(tmp_path):
    text = changed('command = "echo {size}"', 'probe = { name = "cpu", duration = 0.01 }')
    line = spec_error(tmp_path, text.replace('name = "wall_time"', 'name = "cpu_iter_per_sek"'))
    assert line == (
        "perflab: error: SPEC:18: probe phase 'work' reports no metric 'cpu_iter_per_sek' "
        "(did you mean 'cpu_iter_per_sec'?)"
    )


# ----------------------------------------------------------------------------- arguments


def _typed_options():
    """(command path, option) for every argument with a type= check, found in the real parser."""
    out = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + (name,))
            elif action.type is not None and action.option_strings:
                out.append((path, action.option_strings[-1]))

    walk(build_parser(), ())
    return out


TYPED = _typed_options()


def test_the_typed_options_are_found():
    assert (("compare",), "--threshold") in TYPED and (("compare",), "--fail-if-worse") in TYPED
    assert len(TYPED) > 20


@pytest.mark.parametrize("path, option", TYPED, ids=[" ".join(p) + " " + o for p, o in TYPED])
def test_every_typed_option_rejects_a_bad_value_in_one_line(tmp_path, path, option):
    if option == "--store":  # any path is a store: what it refuses is a URL of another kind
        r = perflab(*path, "--store", "http://127.0.0.1/x")
        line = one_error(r)
        assert "http://127.0.0.1/x" in line and "postgresql://" in line, line
        assert list(tmp_path.iterdir()) == []
        return
    r = (
        perflab(*path, option, "abc", "--store", str(tmp_path / "p.db"))
        if path[0] != "load"
        else perflab(*path, option, "abc")
    )
    line = one_error(r)
    assert "argument " in line and option in line and "'abc'" in line
    assert list(tmp_path.iterdir()) == []


def test_threshold_abc_is_one_line(tmp_path):
    r = perflab("compare", "1", "--threshold", "abc", "--store", str(tmp_path / "p.db"))
    assert one_error(r) == (
        "perflab: error: argument --threshold: not a percentage: 'abc' (e.g. 5 or 0.5%) "
        "(see perflab compare --help)"
    )


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], "the following arguments are required: COMMAND (see perflab --help)"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (
            ["compare"],
            "the following arguments are required: experiment (see perflab compare --help)",
        ),
        (
            ["compare", "1", "--fail-if-worse", "-3"],
            "argument --fail-if-worse: percentage must be a number ≥ 0",
        ),
        (
            ["compare", "1", "--threshold", "nan"],
            "argument --threshold: percentage must be a number ≥ 0",
        ),
        (["report", "1", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    ],
)
def test_usage_errors_are_one_line(tmp_path, argv, expected):
    assert expected in one_error(perflab(*argv))


# ----------------------------------------------------------------------------- output paths


@pytest.fixture
def mglru_store(tmp_path):
    db = tmp_path / "store" / "p.db"
    db.parent.mkdir()
    r = perflab(
        "import",
        str(MGLRU_RUNS),
        *mglru_import("ops_per_sec:higher"),
        "--store",
        str(db),
    )
    assert r.code == 0, r.err
    return db


def _unwritable(tmp_path: Path) -> list[tuple[str, str]]:
    """(path, what the message says) for a parent that is a file and a read-only folder."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return [
        (str(a_file / "report.html"), f"{a_file} is not a folder"),
        (str(a_file / "sub" / "report.html"), f"{a_file} is not a folder"),
        ("/sys/perflab-report.html", "/sys is not writable"),  # read-only even for root
        (
            "/sys/no/such/folder/r.html",
            "folder /sys/no/such/folder does not exist and cannot be created",
        ),
    ]


def _files(tmp_path: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("case", range(4))
def test_unwritable_report_output_is_one_line_and_writes_nothing(
    tmp_path, mglru_store, monkeypatch, case
):
    monkeypatch.chdir(tmp_path)
    path, reason = _unwritable(tmp_path)[case]
    before = _files(tmp_path)
    for argv in (
        ["-o", path],
        ["-o", str(tmp_path / "r.html"), "--screenshot", path.replace(".html", ".png")],
    ):
        line = one_error(perflab("report", "1", "--store", str(mglru_store), *argv))
        assert (
            f"cannot write --{'output' if argv[0] == '-o' and len(argv) == 2 else 'screenshot'} "
            in line
        )
        assert reason in line, line
        assert _files(tmp_path) == before


def test_report_into_a_folder_is_refused(tmp_path, mglru_store):
    line = one_error(perflab("report", "1", "--store", str(mglru_store), "-o", str(tmp_path)))
    assert (
        line
        == f"perflab: error: cannot write --output {tmp_path}: it is a folder (name a file in it)"
    )


def test_read_only_folder(tmp_path, mglru_store):
    # in a child that file modes apply to (as root: without CAP_DAC_OVERRIDE)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        line = one_error(
            perflab_unprivileged(
                "report", "1", "--store", str(mglru_store), "-o", str(ro / "r.html"), cwd=tmp_path
            )
        )
        assert f"{ro} is not writable" in line and list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("case", range(4))
def test_unwritable_export_fails_before_the_store_is_created(tmp_path, case):
    path, reason = _unwritable(tmp_path)[case]
    spec = write_spec(tmp_path, GOOD)
    db = tmp_path / "p.db"
    line = one_error(
        perflab("run", str(spec), "--store", str(db), "--export", path.replace(".html", ".json"))
    )
    assert "cannot write --export " in line and reason in line
    assert not db.exists()


def test_a_missing_folder_that_can_be_created_is_fine(tmp_path, mglru_store):
    out = tmp_path / "new" / "dir" / "r.json"
    r = perflab("report", "1", "--store", str(mglru_store), "-o", str(out))
    assert r.code == 0, r.err
    assert out.exists() and not any(
        p.name.startswith(".perflab-write-check") for p in tmp_path.rglob("*")
    )


# ----------------------------------------------------------------------------- --scaling


def test_scaling_needs_four_values(mglru_store):
    line = one_error(
        perflab("compare", "1", "--store", str(mglru_store), "--scaling", "ram_utilization_pct")
    )
    assert line == (
        "perflab: error: a scaling fit over 'ram_utilization_pct' needs ≥ 4 distinct values of it; "
        "the matrix has 2"
    )


def _trend_csv(tmp_path: Path, sizes: list[int]) -> Path:
    """b's ratio to a grows with n: the geometric mean hides a trend."""
    rows = ["variant,n,t"]
    for i, n in enumerate(sizes):
        for rep in range(6):
            noise = 1 + 0.002 * ((rep * 7) % 5 - 2)
            rows.append(f"a,{n},{100 * noise:.4f}")
            rows.append(f"b,{n},{100 * (1 + 0.3 * i) * noise:.4f}")
    path = tmp_path / f"trend{len(sizes)}.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("sizes, suggested", [([10, 20, 30], False), ([10, 20, 30, 40], True)])
def test_sweep_suggests_scaling_only_with_four_values(tmp_path, sizes, suggested):
    db = tmp_path / "p.db"
    r = perflab(
        "import",
        str(_trend_csv(tmp_path, sizes)),
        "--variant",
        "variant",
        "--param",
        "n",
        "--metric",
        "t:lower",
        "--baseline",
        "a",
        "--store",
        str(db),
    )
    assert r.code == 0, r.err
    # cells going one way by different amounts: a warning that explains (--verbose)
    out = perflab("compare", "1", "--store", str(db), "--verbose")
    text = out.out + out.err
    assert "hides a trend" in text
    assert ("--scaling n" in text) == suggested


# ----------------------------------------------------------------------------- CSV import

IMPORT = ["--variant", "variant", "--param", "n", "--metric", "t:lower", "--baseline", "a"]


def csv_error(tmp_path: Path, content: bytes | str) -> str:
    path = tmp_path / "in.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    db = tmp_path / "p.db"
    line = one_error(perflab("import", str(path), "--store", str(db), *IMPORT))
    assert not db.exists()
    return line.replace(str(path), "CSV")


@pytest.mark.parametrize(
    "content, expected",
    [
        ("", "CSV: empty file (no header row)"),
        ("# only a comment\n", "CSV: empty file (no header row)"),
        ("variant,n,t\n", "CSV: no data rows"),
        ('variant,n,t\na,1,"2\n', "CSV:2: malformed CSV: unexpected end of data"),
        ('variant,n,t\na,1,"2"x\n', "CSV:2: malformed CSV: ',' expected after '\"'"),
        (
            b"\x89PNG\r\n\x1a\n\xff\xfe garbage",
            "CSV:1: not UTF-8 text (byte b'\\x89'); save the CSV as UTF-8",
        ),
        ("variant,n,t\na,1,2\nb,1\x00,3\n", "CSV:3: a NUL byte: this is not a CSV text file"),
        (
            "variant,n,t\na,1," + "9" * 70000 + "\n",
            "CSV:2: malformed CSV: a field is longer than 65,536 characters",
        ),
        ("variant,t\na,1\nb,2\n", "CSV:1: no column 'n' (columns: variant, t)"),
        ("variant,n,t\na,1,2\nb,1,fast\n", "CSV:3: column 't' is not a number: 'fast'"),
        ("variant,n,t\na,1,2\nb,1,inf\n", "CSV:3: column 't' is not finite: 'inf'"),
        ("variant,n,t,t\na,1,2,3\nb,1,2,3\n", "CSV:1: column 't' appears twice in the header"),
        ("variant,n,t\na,1,2\nb,1\n", "CSV:3: 2 fields; the header has 3"),
        (
            "# where the figures come from\n# second comment\nvariant,n,t\na,1,2\nb,1,x\n",
            "CSV:5: column 't' is not a number: 'x'",
        ),
        ("variant,n,t\na,1,2\n,1,3\n", "CSV:3: empty variant in column 'variant'"),
    ],
)
def test_bad_csv_is_one_line_with_its_line(tmp_path, content, expected):
    assert csv_error(tmp_path, content).startswith("perflab: error: " + expected)


def test_csv_with_bom_and_leading_comments_imports(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text(
        "\ufeff# figures from a published table\nvariant,n,t\na,1,2\na,1,2.1\nb,1,3\nb,1,3.1\n",
        encoding="utf-8",
    )
    r = perflab("import", str(path), "--store", str(tmp_path / "p.db"), *IMPORT)
    assert r.code == 0, r.err
    assert r.out.strip() == "1"
    assert "4 runs" in r.err


def test_csv_missing_file_and_folder(tmp_path):
    for path, expected in (
        (tmp_path / "nope.csv", "CSV file not found"),
        (tmp_path, "is a folder, not a CSV"),
    ):
        line = one_error(perflab("import", str(path), "--store", str(tmp_path / "p.db"), *IMPORT))
        assert expected in line
    assert not (tmp_path / "p.db").exists()


def test_duplicate_metric_columns_are_refused(tmp_path):
    line = one_error(
        perflab(
            "import",
            str(MGLRU_RUNS),
            "--store",
            str(tmp_path / "p.db"),
            "--variant",
            "variant",
            "--metric",
            "ops_per_sec:higher",
            "--metric",
            "ops_per_sec:lower",
            "--baseline",
            "baseline",
        )
    )
    assert "--metric 'ops_per_sec': given twice" in line
    assert not (tmp_path / "p.db").exists()
