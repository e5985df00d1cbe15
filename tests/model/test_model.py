"""The performance model (the router performance-index experiment's): index on its published
data, fit on synthetic
platforms with known constants, prediction intervals by simulation, bad inputs."""

from __future__ import annotations

import csv
import json
import math
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from perflab.cli import main
from perflab.errors import InputError
from perflab.model import (
    Columns,
    Observation,
    bytes_per_second,
    fit,
    from_rows,
    index_table,
    predict,
)
from testdata import ROUTER_MODEL_COLUMNS, ROUTER_PLATFORMS, csv_rows

ROUTER_COLS = Columns(
    platform="platform",
    cpu="coremark_per_core",
    memmove="memmove_gbit_per_sec_as_used_in_seed",
    length="packet_len_bytes",
    rate="rate_pkts_per_sec",
    memmove_unit="Gbit/s",
)
ROUTER_ARGS = ["--platform", "platform", *ROUTER_MODEL_COLUMNS]

TRUE_M, TRUE_N, TRUE_I = 300.0, 2e-5, 30.0


def router_observations() -> list[Observation]:
    return from_rows(csv_rows(ROUTER_PLATFORMS), ROUTER_COLS, source=str(ROUTER_PLATFORMS))


def synth(
    rng: np.random.Generator, n: int, *, M=TRUE_M, N=TRUE_N, I=TRUE_I, sigma=0.05, prefix="p"
) -> list[Observation]:
    """Platforms drawn over a wide range of CPU scores, copy bandwidths and lengths; rates
    from the model with log-normal noise of sd ``sigma``."""
    out = []
    for i in range(n):
        cpu = math.exp(rng.uniform(math.log(2e3), math.log(5e4)))
        C = math.exp(rng.uniform(math.log(2e8), math.log(1e10)))
        L = float(rng.choice([64, 172, 512, 1500]))
        t = 1 / cpu + M * L / C + N
        out.append(Observation(f"{prefix}{i}", cpu, C, L, I / t * math.exp(rng.normal(0, sigma))))
    return out


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    rc = main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------- units


@pytest.mark.parametrize(
    "unit,expected",
    [
        ("MiB/s", 1048576.0),
        ("GB/s", 1e9),
        ("Gbit/s", 1.25e8),
        ("Gb/s", 1.25e8),
        ("kB/s", 1e3),
        ("GiB/s", 2.0**30),
        ("bit/s", 0.125),
        ("Gibit/s", 2.0**30 / 8),
    ],
)
def test_bandwidth_units(unit, expected):
    assert bytes_per_second(unit) == pytest.approx(expected)


@pytest.mark.parametrize("unit", ["MiB", "furlongs/s", "XB/s", "Mi/s"])
def test_bad_bandwidth_unit_is_one_clear_error(unit):
    with pytest.raises(InputError) as e:
        bytes_per_second(unit)
    assert unit in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------------------- index


def test_index_reproduces_the_published_worked_numbers():
    obs = router_observations()
    # The published figures: with M = 1, N = 0 → about 14.93, 21.46, 25.7 (the laptop row of
    # the CSV uses the platform list's 29861 / 639764, hence 21.45).
    i1 = [r.index for r in index_table(obs, 1.0, 0.0).rows]
    assert i1 == pytest.approx([14.93, 21.46, 25.7], abs=0.02)
    # With M = 400: "28, 33 and 32".
    i400 = [r.index for r in index_table(obs, 400.0, 0.0).rows]
    assert [round(x) for x in i400] == [28, 33, 32]
    # M = 400 makes I far more uniform than M = 1.
    assert index_table(obs, 400.0, 0.0).log_sd < index_table(obs, 1.0, 0.0).log_sd / 3


def test_index_shares_sum_to_one_and_n_adds_time():
    obs = router_observations()
    t = index_table(obs, 400.0, 5e-6)
    for r in t.rows:
        assert r.cpu_share + r.memmove_share + r.fixed_share == pytest.approx(1.0)
    t0 = index_table(obs, 400.0, 0.0)
    for a, b, o in zip(t.rows, t0.rows, obs):
        assert a.index - b.index == pytest.approx(o.rate * 5e-6)


def test_cli_model_index_prints_the_published_table():
    rc, out, err = cli(
        "model", "index", str(ROUTER_PLATFORMS), *ROUTER_ARGS, "--M", "400", "--N", "0"
    )
    assert rc == 0, err
    for name, value in (("apu2", "28.05"), ("laptop", "32.78"), ("ci", "32.03")):
        line = next(ln for ln in out.splitlines() if f" {name} " in ln)
        assert line.rstrip(" │|").endswith(value), line
    assert "C (Gbit/s)" in out and "1/cpu (µs)" in out and "sd(ln I) = 8.4%" in out
    rc, out, _ = cli("model", "index", str(ROUTER_PLATFORMS), *ROUTER_ARGS, "--M", "1", "--json")
    doc = json.loads(out)
    assert [round(p["index"], 1) for p in doc["platforms"]] == [14.9, 21.5, 25.7]


def test_index_with_memmove_in_mib_per_sec_matches_gbit_conversion():
    # 248 MiB/s is 2.08 Gbit/s: the experiment rounded it to 1.9; with the exact unit the index
    # moves accordingly, which shows the unit is applied (not ignored).
    obs = from_rows(
        csv_rows(ROUTER_PLATFORMS),
        Columns(
            "platform",
            "coremark_per_core",
            "memmove_mib_per_sec",
            "packet_len_bytes",
            "rate_pkts_per_sec",
            "MiB/s",
        ),
    )
    apu2 = obs[0]
    assert apu2.memmove == pytest.approx(248 * 1048576)
    expected = 45377 * (1 / 3044 + 400 * 172 / (248 * 1048576))
    assert index_table(obs, 400, 0).rows[0].index == pytest.approx(expected)


# ----------------------------------------------------------------------------- fit


def test_fit_recovers_known_constants():
    rng = np.random.default_rng(42)
    obs = synth(rng, 12, sigma=0.02)
    res = fit(obs, bootstrap=300, seed=1)
    assert pytest.approx(TRUE_M, rel=0.2) == res.M
    assert pytest.approx(TRUE_N, rel=0.25) == res.N
    assert pytest.approx(TRUE_I, rel=0.05) == res.I
    for name, truth in (("M", TRUE_M), ("N", TRUE_N), ("I", TRUE_I)):
        lo, hi = res.t_intervals[name]
        assert lo <= truth <= hi, (name, lo, hi)
        blo, bhi = res.intervals[name]
        assert blo < bhi
    assert res.dof == 9 and res.sigma == pytest.approx(0.02, rel=0.6)
    assert res.log_sd < 0.05
    assert len(res.loo) == 12 and all(math.isfinite(x.error) for x in res.loo)
    assert res.loo_rms < 0.1


def test_fit_with_fixed_n_estimates_m_only():
    rng = np.random.default_rng(7)
    obs = synth(rng, 6, N=0.0, sigma=0.01)
    res = fit(obs, N=0.0, bootstrap=0)
    assert res.free == ("I", "M") and res.fixed == {"N": 0.0}
    assert pytest.approx(TRUE_M, rel=0.1) == res.M
    assert res.N == 0.0


def test_interval_coverage_by_simulation():
    """t intervals of M and prediction intervals cover the truth ≈ 95% of the time."""
    rng = np.random.default_rng(2024)
    K = 150
    cover_m = cover_pred = 0
    for _k in range(K):
        obs = synth(rng, 8)
        res = fit(obs, bootstrap=0, loo=False)
        lo, hi = res.t_intervals["M"]
        cover_m += lo <= TRUE_M <= hi
        new = synth(rng, 1, prefix="new")[0]
        p = predict(res, new)
        cover_pred += p.low <= new.rate <= p.high
    assert 0.88 <= cover_m / K <= 0.99, cover_m / K
    assert 0.88 <= cover_pred / K <= 0.995, cover_pred / K


def test_bootstrap_intervals_cover_reasonably():
    rng = np.random.default_rng(99)
    K = 60
    cover = 0
    for k in range(K):
        res = fit(synth(rng, 10), bootstrap=200, loo=False, seed=k)
        lo, hi = res.intervals["M"]
        cover += lo <= TRUE_M <= hi
    # Percentile bootstrap under-covers with few platforms (documented); it must not collapse.
    assert 0.75 <= cover / K <= 1.0, cover / K


def test_published_data_fit_states_what_it_cannot_identify():
    obs = router_observations()
    res = fit(obs, bootstrap=200)
    # 3 platforms for I, M, N: the unconstrained optimum has N < 0, so N sits at its bound.
    assert "N" in res.at_bound
    text = " ".join(res.statements)
    assert "lower bound 0" in text and "no bootstrap" in text
    assert all(math.isnan(x.error) for x in res.loo)  # 2 platforms cannot fit 3 parameters
    assert "leave-one-platform-out is impossible" in text
    res0 = fit(obs, N=0.0, bootstrap=200)
    # With N fixed at 0 the published data prefer M of a few hundred, as the experiment guessed
    # (400).
    assert 250 < res0.M < 1500
    lo, hi = res0.intervals["M"]
    assert lo < res0.M < hi


def test_unidentifiable_memmove_weight_is_stated():
    # Every platform has the same L/C: M·L/C is then a constant time per packet, which N
    # also is — the two cannot be told apart.
    rng = np.random.default_rng(3)
    obs = []
    for i in range(6):
        cpu = float(rng.uniform(2e3, 5e4))
        t = 1 / cpu + TRUE_M * 172 / 1e9
        obs.append(
            Observation(f"p{i}", cpu, 1e9, 172.0, TRUE_I / t * math.exp(rng.normal(0, 0.03)))
        )
    res = fit(obs, bootstrap=50)
    stated = [s for s in res.statements if "cannot identify" in s]
    assert stated and "M and N" in stated[0] and "--M/--N" in stated[0], res.statements
    assert all(math.isnan(v) for v in res.intervals["M"])
    # Fixing N makes M identifiable again (it is then the constant cost).
    res_n = fit(obs, N=0.0, bootstrap=50)
    assert not any("cannot identify" in s for s in res_n.statements)
    lo, hi = res_n.t_intervals["M"]
    assert lo <= TRUE_M <= hi


def test_exactly_determined_fit_says_so():
    rng = np.random.default_rng(5)
    obs = synth(rng, 2, N=0.0, sigma=0.0)
    res = fit(obs, N=0.0, bootstrap=100)
    assert res.dof == 0
    assert any("exactly determined" in s for s in res.statements)
    assert pytest.approx(TRUE_M, rel=1e-4) == res.M
    p = predict(res, synth(rng, 1)[0])
    assert math.isnan(p.low) and "no degrees of freedom" in p.note


def test_prediction_matches_model_and_bootstrap_method():
    rng = np.random.default_rng(11)
    res = fit(synth(rng, 10), bootstrap=400, seed=3)
    target = Observation("new", 10_000.0, 3e9, 172.0)
    expect = res.I / (1 / 10_000 + res.M * 172 / 3e9 + res.N)
    pt = predict(res, target)
    pb = predict(res, target, method="bootstrap", seed=1)
    assert pt.rate == pytest.approx(expect) and pb.rate == pytest.approx(expect)
    assert pt.low < pt.rate < pt.high and pb.low < pb.rate < pb.high
    # Both intervals describe the same uncertainty: same order of magnitude of width.
    wt, wb = math.log(pt.high / pt.low), math.log(pb.high / pb.low)
    assert 0.3 < wt / wb < 3


# ----------------------------------------------------------------------------- bad inputs


def test_fewer_platforms_than_parameters():
    obs = synth(np.random.default_rng(1), 2)
    with pytest.raises(InputError, match=r"fewer platforms \(2\) than parameters to estimate \(3"):
        fit(obs)


@pytest.mark.parametrize("rate", ["0", "-5", "abc", ""])
def test_zero_negative_or_missing_rates_are_rejected(tmp_path, rate):
    p = tmp_path / "bad.csv"
    p.write_text("platform,cpu,mem,len,rate\na,3000,248,172,45377\nb,29861,3928,172," + rate + "\n")
    rc, _out, err = cli(
        "model",
        "fit",
        str(p),
        "--cpu",
        "cpu",
        "--memmove",
        "mem",
        "--length",
        "len",
        "--rate",
        "rate",
    )
    assert rc == 2
    assert err.startswith("perflab: error: ") and err.count("\n") == 1
    assert f"{p}:3" in err and "'rate'" in err


def test_missing_column_names_the_columns_present(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("platform,cpu,rate\na,1,2\n")
    rc, _, err = cli("model", "index", str(p), "--cpu", "cpu", "--rate", "rate")
    assert rc == 2
    assert "no column 'memmove_mib_per_sec'" in err and "columns: platform, cpu, rate" in err


def test_duplicate_platform_and_bad_constants():
    obs = router_observations()
    with pytest.raises(InputError, match="appears twice"):
        index_table(obs + obs[:1], 1, 0)
    with pytest.raises(InputError, match="M and N must be finite"):
        index_table(obs, -1, 0)
    with pytest.raises(InputError, match="N must be finite"):
        fit(obs, N=-1e-6)


def test_cli_model_missing_file_and_bad_time(tmp_path):
    rc, _, err = cli("model", "index", str(tmp_path / "nope.csv"))
    assert rc == 2 and "cannot read" in err
    rc, _, err = cli("model", "index", str(ROUTER_PLATFORMS), *ROUTER_ARGS, "--N", "fast")
    assert rc == 2 and "is not a time" in err  # argparse's own usage error, on the injected stderr


# ----------------------------------------------------------------------------- CLI fit/predict/plot


def _write_synth_csv(path: Path, obs: list[Observation]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "platform",
                "cpu_iter_per_sec",
                "memmove_mib_per_sec",
                "packet_len_bytes",
                "rate_pkts_per_sec",
            ]
        )
        for o in obs:
            w.writerow(
                [o.platform, o.cpu, o.memmove / 1048576, o.length, "" if o.rate is None else o.rate]
            )


def test_cli_fit_json_and_plot(tmp_path):
    rng = np.random.default_rng(8)
    data = tmp_path / "platforms.csv"
    _write_synth_csv(data, synth(rng, 8, sigma=0.02))
    svg = tmp_path / "fit.svg"
    rc, out, err = cli(
        "model", "fit", str(data), "--bootstrap", "200", "--plot", str(svg), "--json"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["M"] == pytest.approx(TRUE_M, rel=0.3)
    assert doc["N_seconds"] == pytest.approx(TRUE_N, rel=0.4)
    assert len(doc["leave_one_out"]) == 8
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    rc, out, err = cli("model", "fit", str(data), "--bootstrap", "100")
    assert rc == 0 and "t interval" in out and "leave-one-platform-out" in out


def test_cli_predict_target_csv_and_flags(tmp_path):
    rng = np.random.default_rng(12)
    data, target = tmp_path / "platforms.csv", tmp_path / "target.csv"
    _write_synth_csv(data, synth(rng, 8, sigma=0.02))
    new = synth(rng, 2, sigma=0.0, prefix="new")
    _write_synth_csv(target, [Observation(o.platform, o.cpu, o.memmove, o.length) for o in new])
    png = tmp_path / "pred.png"
    rc, out, err = cli(
        "model", "predict", str(data), "--target", str(target), "--json", "--plot", str(png)
    )
    assert rc == 0, err
    preds = json.loads(out)["predictions"]
    for p, o in zip(preds, new):
        assert p["low"] < p["rate"] < p["high"]
        assert p["rate"] == pytest.approx(o.rate, rel=0.15)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rc, out, err = cli(
        "model",
        "predict",
        str(data),
        "--target-cpu",
        str(new[0].cpu),
        "--target-memmove",
        str(new[0].memmove / 1048576),
        "--target-length",
        "172",
        "--target-name",
        "box",
    )
    assert rc == 0, err and "box" in out
    rc, _, err = cli("model", "predict", str(data))
    assert rc == 2 and "nothing to predict" in err


def test_plot_rejects_unknown_format(tmp_path):
    rc, _, err = cli(
        "model",
        "fit",
        str(ROUTER_PLATFORMS),
        *ROUTER_ARGS,
        "--N",
        "0",
        "--plot",
        str(tmp_path / "x.gif"),
    )
    assert rc == 2 and ".svg, .png or .pdf" in err


# ----------------------------------------------------------------------------- inputs from stores


def _store_platform(path: Path, o: Observation, rng: np.random.Generator) -> None:
    """A machine's store: a cpu probe, a memmove probe and a benchmark experiment."""
    from perflab.platform.stored import record_probe
    from perflab.store import Database, MetricDef, NewRun
    from perflab.workloads.probes import ProbeResult

    host = {"hostname": o.platform, "cpu_model": "synthetic"}
    with Database(path) as st:
        cpu = [o.cpu * math.exp(rng.normal(0, 0.002)) for _ in range(5)]
        record_probe(
            st,
            ProbeResult(
                "cpu",
                None,
                5,
                {},
                {"cpu_iter_per_sec": cpu},
                {"cpu_iter_per_sec": "iterations/s"},
                host=host,
            ),
        )
        mib = [o.memmove / 2**20 * math.exp(rng.normal(0, 0.002)) for _ in range(5)]
        record_probe(
            st,
            ProbeResult(
                "memmove",
                None,
                5,
                {},
                {"memmove_mib_per_sec": mib},
                {"memmove_mib_per_sec": "MiB/s"},
                host=host,
            ),
        )
        if o.rate is not None:
            runs = [
                NewRun(
                    order_index=i,
                    block=i,
                    cell_key="-",
                    cell={},
                    variant="router",
                    repetition=i + 1,
                    status="ok",
                    metrics={"pkts_per_sec": o.rate * math.exp(rng.normal(0, 0.002))},
                )
                for i in range(5)
            ]
            st.create_experiment(
                name="router",
                description="",
                source="import",
                baseline="router",
                metrics=[MetricDef("pkts_per_sec", "pkts/s", "higher")],
                settings={
                    "params": [],
                    "cells": [{"key": "-", "labels": {}}],
                    "variants": [{"name": "router", "description": ""}],
                },
                runs=runs,
                status="complete",
            )


def test_fit_and_predict_from_stores(tmp_path):
    rng = np.random.default_rng(21)
    platforms = synth(rng, 6, N=0.0, sigma=0.01)
    for o in platforms:
        o = Observation(
            o.platform,
            o.cpu,
            o.memmove,
            172.0,
            TRUE_I / (1 / o.cpu + TRUE_M * 172 / o.memmove) * math.exp(rng.normal(0, 0.01)),
        )
        _store_platform(tmp_path / f"{o.platform}.db", o, rng)
    args = [a for o in platforms for a in ("--from-store", str(tmp_path / f"{o.platform}.db"))]
    rc, out, err = cli(
        "model",
        "fit",
        *args,
        "--length-bytes",
        "172",
        "--rate",
        "pkts_per_sec",
        "--N",
        "0",
        "--bootstrap",
        "100",
        "--json",
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert [p["platform"] for p in doc["platforms"]] == [
        o.platform for o in platforms
    ]  # names = hosts
    assert doc["M"] == pytest.approx(TRUE_M, rel=0.15) and doc["I"] == pytest.approx(
        TRUE_I, rel=0.05
    )
    new = synth(rng, 1, prefix="new", N=0.0)[0]
    _store_platform(
        tmp_path / "new.db", Observation(new.platform, new.cpu, new.memmove, 172.0), rng
    )
    rc, out, err = cli(
        "model",
        "predict",
        *args,
        "--length-bytes",
        "172",
        "--rate",
        "pkts_per_sec",
        "--N",
        "0",
        "--target-store",
        f"{tmp_path / 'new.db'}=candidate",
        "--json",
    )
    assert rc == 0, err
    pred = json.loads(out)["predictions"][0]
    assert pred["platform"] == "candidate"
    expect = TRUE_I / (1 / new.cpu + TRUE_M * 172 / new.memmove)
    assert pred["low"] < expect < pred["high"]
    rc, _, err = cli("model", "fit", *args, "--length-bytes", "172", "--rate", "ops_per_sec")
    assert rc == 2 and "has metric 'ops_per_sec'" in err and "pkts_per_sec" in err


def test_probe_recorded_in_store_reads_back(tmp_path):
    from perflab.platform.stored import observation_from_store

    db = tmp_path / "me.db"
    for probe, extra in (
        ("cpu", ["--duration", "0.05"]),
        ("memmove", ["--case", "small_tlbmiss", "--duration", "0.02"]),
    ):
        rc, _, err = cli("probe", probe, "--repeat", "2", "--store", str(db), *extra)
        assert rc == 0 and "stored as experiment" in err, err
    o = observation_from_store(
        db,
        cpu="cpu_iter_per_sec",
        memmove="memmove_mib_per_sec",
        memmove_unit="MiB/s",
        rate=None,
        length_bytes=172,
    )
    assert o.cpu > 0 and o.memmove > 0 and o.rate is None and o.platform


def test_one_store_several_configurations(tmp_path):
    """Like examples/router/router.toml: probes and workload in one experiment, one variant
    per memory configuration; each variant/cell is a platform of its own."""
    from perflab.store import Database, MetricDef, NewRun

    db = tmp_path / "vm.db"
    truth = {"4k": (60_000.0, 8_000.0), "huge": (60_000.0, 15_000.0)}
    runs, i = [], 0
    for cell in ("cores=1", "cores=2"):
        for variant, (cpu, mib) in truth.items():
            rate = 10.0 / (1 / cpu + 300 * 172 / (mib * 2**20)) * (2 if cell == "cores=2" else 1)
            for rep in range(3):
                runs.append(
                    NewRun(
                        order_index=i,
                        block=rep,
                        cell_key=cell,
                        cell={"cores": cell[-1]},
                        variant=variant,
                        repetition=rep + 1,
                        status="ok",
                        metrics={
                            "cpu_iter_per_sec": cpu,
                            "memmove_mib_per_sec": mib,
                            "pkts_per_sec": rate,
                        },
                    )
                )
                i += 1
    with Database(db) as st:
        st.create_experiment(
            name="router-index",
            description="",
            source="import",
            baseline="4k",
            metrics=[
                MetricDef("cpu_iter_per_sec", "iterations/s", "higher"),
                MetricDef("memmove_mib_per_sec", "MiB/s", "higher"),
                MetricDef("pkts_per_sec", "packets/s", "higher"),
            ],
            settings={
                "params": ["cores"],
                "cells": [
                    {"key": "cores=1", "labels": {"cores": "1"}},
                    {"key": "cores=2", "labels": {"cores": "2"}},
                ],
                "variants": [{"name": "4k"}, {"name": "huge"}],
            },
            runs=runs,
            status="complete",
        )
    rc, out, err = cli(
        "model",
        "index",
        "--from-store",
        f"{db};name=vm-4k;variant=4k;cell=cores=1",
        "--from-store",
        f"{db};name=vm-huge;variant=huge;cell=cores=1",
        "--length-bytes",
        "172",
        "--rate",
        "pkts_per_sec",
        "--M",
        "300",
        "--json",
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert [p["platform"] for p in doc["platforms"]] == ["vm-4k", "vm-huge"]
    assert [p["index"] for p in doc["platforms"]] == pytest.approx([10.0, 10.0])
    rc, _, err = cli(
        "model", "index", "--from-store", str(db), "--length-bytes", "172", "--rate", "pkts_per_sec"
    )
    assert rc == 2 and "several samples" in err and "--variant/--cell" in err
    rc, _, err = cli("model", "index", "--from-store", f"{db};colour=red", "--length-bytes", "172")
    assert rc == 2 and "store option 'colour=red'" in err


def test_rates_following_memmove_alone_are_called_out():
    """Rates proportional to C (CPU scores unrelated): the fit wants M → ∞ and must say so
    rather than print a huge M as if it were measured."""
    rng = np.random.default_rng(4)
    obs = []
    for i in range(6):
        C = float(np.exp(rng.uniform(np.log(2e8), np.log(1e10))))
        obs.append(Observation(f"p{i}", float(rng.uniform(2e3, 5e4)), C, 172.0, C / 172.0 / 50.0))
    res = fit(obs, N=0.0, bootstrap=50)
    assert "M" in res.unidentified
    assert any("M grows without limit" in s and "one scale" in s for s in res.statements), (
        res.statements
    )
    assert all(math.isnan(v) for v in res.t_intervals["M"] + res.intervals["M"])
    p = predict(res, Observation("x", 1e4, 1e9, 172.0))
    assert math.isnan(p.low) and "cannot identify M" in p.note

    # With noise the optimum is finite but the data barely constrain M: said as well.
    rng = np.random.default_rng(4)
    noisy = []
    for i in range(6):
        C = float(np.exp(rng.uniform(np.log(2e8), np.log(1e10))))
        noisy.append(
            Observation(
                f"p{i}",
                float(rng.uniform(2e3, 5e4)),
                C,
                172.0,
                C / 172.0 / 50.0 * math.exp(rng.normal(0, 0.01)),
            )
        )
    res = fit(noisy, N=0.0, bootstrap=0)
    assert any(s.startswith("M is poorly determined") for s in res.statements), res.statements
