"""Which hosts a run boots or checks (`perflab.plan.hosts_needed`): one rule, from which
the dry run counts boots (`boots`) and by which the runner boots
(`perflab.execution.variant_kernel.ensure_kernel`)."""

from __future__ import annotations

from perflab.plan import HostNeed, boots, hosts_needed, make_plan
from perflab.spec import load_spec

SPEC = """\
name = "needs"
baseline = "k1"
repetitions = 2
order = "sequential"
[hosts.router]
ssh = "root@127.0.0.1:2222"
[hosts.router.control]
boot = "start-vm {kernel}"
[hosts.dut]
ssh = "root@127.0.0.1:2223"
reset = "each-run"
[hosts.box]
ssh = "root@127.0.0.1:2224"
[[variant]]
name = "k1"
on = "router"
kernel = "6.1-one"
[[variant]]
name = "k2"
on = "router"
kernel = "6.1-two"
cmdline = "quiet"
[[variant]]
name = "plain"
on = "box"
[[phase]]
name = "p"
on = "box"
command = "true"
[[metric]]
name = "wall_time"
better = "lower"
"""


def _spec(tmp_path, text=SPEC):
    path = tmp_path / "needs.toml"
    path.write_text(text)
    return load_spec(path).model


def test_a_run_needs_its_kernels_host_every_device_booted_here_and_every_reset_host(tmp_path):
    spec = _spec(tmp_path)
    k1, k2, plain = spec.variant
    assert hosts_needed(spec, k1) == [
        HostNeed("router", "6.1-one", None, each_run=False, booted_here=True),
        HostNeed("dut", None, None, each_run=True, booted_here=False),
    ]
    assert hosts_needed(spec, k2)[0] == HostNeed("router", "6.1-two", "quiet", False, True)
    # a variant on another host still needs the device up (any kernel) and dut reset
    assert [(n.host, n.kernel) for n in hosts_needed(spec, plain)] == [
        ("router", None),
        ("dut", None),
    ]
    # the runner's own view of which hosts it boots from here (a labgrid place's power),
    # in the spec's order of hosts
    assert [n.host for n in hosts_needed(spec, plain, lambda name: name == "box")] == [
        "dut",
        "box",
    ]


def test_the_dry_runs_boots_follow_the_same_rule(tmp_path):
    spec = _spec(tmp_path)
    plan = make_plan(spec)  # sequential: k1 k1, k2 k2, plain plain
    assert [r.variant for r in plan] == ["k1", "k1", "k2", "k2", "plain", "plain"]
    # router: k1's first run (its first boot), the switch to k2; plain needs no kernel.
    # dut: before every run.
    assert boots(spec, plan) == {"router": 2, "dut": 6}
    # without the control, the router is an SSH host: it may run k1 already, so the
    # first run still counts (a kernel change from whatever it runs), and no more
    plain_router = SPEC.replace('[hosts.router.control]\nboot = "start-vm {kernel}"\n', "")
    spec = _spec(tmp_path, plain_router)
    assert boots(spec, make_plan(spec)) == {"router": 2, "dut": 6}
