#!/usr/bin/env python3
"""Measure this machine as one platform of the router performance-index experiment's model.

1. builds the packet-forwarding workload (router.c) with gcc;
2. for 1..N cores, picks N cores the experiment's way (same type, no SMT siblings, spread
   over L2 caches) and runs the workload --repeat times on them;
3. runs the cpu and memmove probes on the first picked core;
4. writes OUT/results.json (everything) and OUT/platform.csv (one row, the published
   CSV's columns), plus OUT/combined.csv with the experiment's platforms when --seed-csv
   is given.

    .venv/bin/python examples/router/run.py --out /tmp/router --seed-csv tests/data/router-platforms.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from perflab.platform import pick_cores, read_topology
from perflab.workloads.probes import run_probe

HERE = Path(__file__).resolve().parent
COLUMNS = ["platform", "router_cores", "coremark_per_core", "memmove_mib_per_sec",
           "memmove_gbit_per_sec_as_used_in_seed", "packet_len_bytes", "line_rate_pkts_per_sec", "rate_pkts_per_sec"]


def build(out: Path) -> Path:
    gcc = shutil.which("gcc")
    if not gcc:
        sys.exit("run.py: gcc not found (scripts/setup installs it)")
    exe = out / "router"
    subprocess.run([gcc, "-O2", "-pthread", "-o", str(exe), str(HERE / "router.c")], check=True)
    return exe


def run_router(exe: Path, cpus: tuple[int, ...], duration: float) -> dict:
    proc = subprocess.run([str(exe), "--cores", ",".join(map(str, cpus)), "--duration", str(duration)],
                          capture_output=True, text=True, timeout=duration * 4 + 60)
    if proc.returncode != 0:
        sys.exit(f"run.py: router failed on cpus {cpus}: {proc.stderr.strip()}")
    doc = json.loads(proc.stdout)
    if not doc.get("validated"):
        sys.exit(f"run.py: router did not validate its forwarding on cpus {cpus}")
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="router-results", help="output directory")
    ap.add_argument("--name", default="this-machine", help="platform name in the CSV")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per workload run")
    ap.add_argument("--max-cores", type=int, default=3, help="largest core count (the experiment used 3)")
    ap.add_argument("--seed-csv", help="the router performance-index experiment's platforms, to write combined.csv")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    exe = build(out)
    topo = read_topology()
    cores_available = len({c.siblings for c in topo.usable()})
    counts = list(range(1, min(args.max_cores, cores_available) + 1))
    runs: dict[int, dict] = {}
    for n in counts:
        choice = pick_cores(n, topo)
        samples = [run_router(exe, choice.cpus, args.duration) for _ in range(args.repeat)]
        rates = [s["pkts_per_sec"] for s in samples]
        runs[n] = {"cpus": list(choice.cpus), "notes": list(choice.notes), "rates": rates,
                   "median": statistics.median(rates), "min": min(rates), "max": max(rates)}
        print(f"{n} core(s) on cpus {choice.cpus}: median {runs[n]['median']:,.0f} pkts/s "
              f"(min {min(rates):,.0f}, max {max(rates):,.0f}, {len(rates)} runs)", flush=True)
    top = counts[-1]
    core = runs[top]["cpus"][0]
    cpu = run_probe("cpu", core=core, repeat=args.repeat)
    mem = run_probe("memmove", core=core, repeat=args.repeat, cases=["small_tlbmiss"], duration=1.0)
    cpu_score = cpu.metrics()["cpu_iter_per_sec"]
    mib = mem.metrics()["memmove_mib_per_sec"]
    for w in cpu.warnings + mem.warnings:
        print(f"warning: {w.message}", file=sys.stderr)
    print(f"cpu probe on cpu {core}: {cpu_score:,.0f} iterations/s; memmove small_tlbmiss: {mib:,.0f} MiB/s")
    row = {"platform": args.name, "router_cores": top, "coremark_per_core": f"{cpu_score:.0f}",
           "memmove_mib_per_sec": f"{mib:.0f}", "memmove_gbit_per_sec_as_used_in_seed": f"{mib * 2**20 * 8 / 1e9:.2f}",
           "packet_len_bytes": 172, "line_rate_pkts_per_sec": "", "rate_pkts_per_sec": f"{runs[top]['median']:.0f}"}
    with open(out / "platform.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerow(row)
    if args.seed_csv:
        with open(args.seed_csv, newline="") as f:
            seed_rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        with open(out / "combined.csv", "w", newline="") as f:
            w = csv.DictWriter(f, COLUMNS)
            w.writeheader()
            w.writerows(seed_rows + [row])
    (out / "results.json").write_text(json.dumps(
        {"router": runs, "probe_cpu": cpu.to_json(), "probe_memmove": mem.to_json(), "platform_row": row},
        indent=2))
    print(f"wrote {out / 'platform.csv'}" + (f" and {out / 'combined.csv'}" if args.seed_csv else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
