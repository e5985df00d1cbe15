"""`perflab load`: memtier's flags and table shape, --json, exit codes, error messages."""

from __future__ import annotations

import json
import re
from io import StringIO

from perflab.cli import main
from perflab.workloads.kv import KvResult, merge_histograms


def load(*argv: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    code = main(["load", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_memtier_table_shape(memcached):
    host, port = memcached.address.split(":")
    code, out, err = load(
        "-s",
        host,
        "-p",
        port,
        "-P",
        "memcache_binary",
        "-t",
        "2",
        "-c",
        "2",
        "--pipeline",
        "4",
        "-n",
        "500",
        "--ratio",
        "1:4",
        "--key-minimum=1",
        "--key-maximum=2000",
        "--key-pattern",
        "R:R",
        "-d",
        "100",
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "ALL STATS" and set(lines[1]) == {"="}
    assert re.split(r"\s{2,}", lines[2].strip()) == [
        "Type",
        "Ops/sec",
        "Hits/sec",
        "Misses/sec",
        "Avg. Latency",
        "p50 Latency",
        "p99 Latency",
        "p99.9 Latency",
        "KB/sec",
    ]
    rows = {line.split()[0]: line.split()[1:] for line in lines[4:7]}
    assert list(rows) == ["Sets", "Gets", "Totals"]
    assert rows["Sets"][1] == rows["Sets"][2] == "---"  # sets have no hits/misses
    sets_ops, gets_ops, total_ops = (float(rows[k][0]) for k in ("Sets", "Gets", "Totals"))
    assert abs(sets_ops + gets_ops - total_ops) < 0.05 and abs(gets_ops - 4 * sets_ops) < 0.05
    assert "2,000 requests" in out and "pipeline 4" in out
    assert "memcache_binary → " + memcached.address in err


def test_print_percentiles_adds_columns_and_json_has_everything(memcached):
    code, out, _ = load(
        "-s",
        memcached.address,
        "-P",
        "memcache_text",
        "-t",
        "1",
        "-c",
        "2",
        "-n",
        "300",
        "--print-percentiles",
        "50,90,99.99",
    )
    assert code == 0
    assert re.search(r"p50 Latency\s+p90 Latency\s+p99\.99 Latency\s+KB/sec", out)
    code, out, err = load(
        "-s", memcached.address, "-P", "memcache_text", "-t", "1", "-c", "2", "-n", "300", "--json"
    )
    assert code == 0
    doc = json.loads(out)  # nothing but JSON on stdout, for machines; warnings go to stderr
    assert all(line.startswith("perflab: warning: ") for line in err.splitlines())
    assert "only 600 requests were measured" in err
    r = KvResult(doc)
    assert doc["format"] == "perflab-kv-result" and doc["version"] == 1
    assert r.metrics()["requests"] == 600
    assert merge_histograms([doc]).count == 600


def test_bad_flags_exit_2_naming_the_flag(capsys):
    for argv, words in [
        (["--key-pattern", "X:G"], "--key-pattern: unknown key pattern"),
        (["--ratio", "2"], "--ratio: ratio must be"),
        (["-n", "allkeys", "--ratio", "1:1"], "--ratio: requests = allkeys"),
        (["--key-minimum", "9", "--key-maximum", "3"], "--key-minimum: key_min (9) is greater"),
        (["-d", "10", "--data-size-range", "1-5"], "--data-size or --data-size-range"),
        (["--print-percentiles", "50,x"], "--print-percentiles"),
        (["--spin", "sometimes"], '--spin: must be "auto", "off" or a duration'),
        (["-s", "no-such-host.invalid", "-n", "1"], "--server: cannot resolve"),
    ]:
        code, _out, err = load(*argv)
        assert code == 2, (argv, err)
        assert err.strip().splitlines()[-1].startswith("perflab: error: ") and words in err, (
            argv,
            err,
        )
    code, _, err = load("-P", "udp")  # argparse's own usage error, on the injected stderr
    assert code == 2 and "invalid choice: 'udp'" in err


def test_failed_run_exits_1_with_the_reason():
    from servers import free_port

    code, out, err = load(
        "-s", f"127.0.0.1:{free_port()}", "-P", "memcache_text", "-t", "1", "-c", "1"
    )
    assert code == 1
    assert "perflab: error: the run failed: cannot connect to" in err
    assert "0 requests" in out and "connection failures: 1" in out
