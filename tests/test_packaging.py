"""How perflab is built and shipped: the helper programs it stages to hosts (perflab-exec, the
measurement shim; perflab-load, the load engine) are statically linked, run where there is
no shared library at all, and are in the wheel the build backend makes
(build_backend/perflab_build.py), where an installed perflab finds them.

The programs under test are the ones scripts/setup built through that backend (the
editable install's python/perflab/_bin/); the wheel test builds a wheel from this tree
with pip, reusing the tree's cargo target folder (about a second when nothing changed)."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from perflab.hosts.process import installed_program

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ("perflab-exec", "perflab-load")
#: e_machine of the ELF header for this machine (the helpers are built for it).
ELF_MACHINES = {"x86_64": "X86-64", "aarch64": "AArch64", "riscv64": "RISC-V"}


def backend() -> ModuleType:
    """build_backend/perflab_build.py, loaded from its file (it is no installed module)."""
    spec = importlib.util.spec_from_file_location(
        "perflab_build", ROOT / "build_backend" / "perflab_build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def helper(name: str) -> Path:
    path = installed_program(name)
    assert path is not None, f"{name} is not in perflab/_bin (scripts/setup builds it)"
    return path


def readelf(*args: str) -> str:
    done = subprocess.run(["readelf", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def in_empty_root(root: Path, argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (paths inside ``root``) with ``root`` as its whole file system: no
    /lib, no dynamic loader, no libc or libgcc_s, no /proc, no /etc, an empty environment."""
    if os.geteuid() == 0:
        command = [shutil.which("chroot") or "/usr/sbin/chroot", str(root), *argv]
    else:  # a user namespace lets an ordinary user chroot
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        command = [unshare, "--map-root-user", f"--root={root}", *argv]
    return subprocess.run(command, env={}, capture_output=True, text=True, timeout=60, **kwargs)


def run_shim_with_load(shim: Path, load: Path, root: Path) -> tuple[str, list[int]]:
    """``perflab-exec`` running ``perflab-load --clock`` (answers one stdin line with this
    host's clock) inside the empty ``root``: the clock line and the shim's report."""
    shutil.copy2(shim, root / "perflab-exec")
    shutil.copy2(load, root / "perflab-load")
    report = root.parent / f"{root.name}.report"
    with open(report, "w") as fd:
        done = in_empty_root(
            root,
            ["/perflab-exec", str(fd.fileno()), "100", "/perflab-load", "--clock"],
            input="now?\n",
            pass_fds=(fd.fileno(),),
        )
    assert done.returncode == 0, (done.returncode, done.stderr)
    fields = report.read_text().split()
    return done.stdout, [int(x) for x in fields]


@pytest.mark.parametrize("name", HELPERS)
def test_helper_is_statically_linked_for_this_machine(name):
    path = helper(name)
    header = readelf("-h", str(path))
    assert ELF_MACHINES.get(platform.machine(), platform.machine()) in header
    # no shared library needed, no program interpreter (dynamic loader) asked for
    dynamic = readelf("-d", str(path))
    assert "(NEEDED)" not in dynamic, dynamic
    assert "INTERP" not in readelf("-l", "-W", str(path))
    assert backend().elf_interpreter(path) is None


def test_the_static_check_sees_a_dynamic_program():
    """The checks above would tell: a dynamically linked program (this Python) has NEEDED
    entries and an interpreter."""
    python = Path(os.path.realpath(sys.executable))
    assert "(NEEDED)" in readelf("-d", str(python))
    interpreter = backend().elf_interpreter(python)
    assert interpreter is not None and "ld-linux" in interpreter


def elf(*, wide: bool, big: bool, interpreter: bytes | None) -> bytes:
    """A minimal ELF executable header with one program header: PT_INTERP naming
    ``interpreter``, or PT_LOAD when None."""
    o = ">" if big else "<"
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big else 1, 1]) + bytes(9)
    word, ehsize, phentsize = ("Q", 64, 56) if wide else ("I", 52, 32)
    header = ident + struct.pack(
        f"{o}HHI{word}{word}{word}IHHHHHH", 2, 8, 1, 0, ehsize, 0, 0, ehsize, phentsize, 1, 0, 0, 0
    )
    at = ehsize + phentsize
    p_type, size = (3, len(interpreter) + 1) if interpreter is not None else (1, 0)
    if wide:
        phdr = struct.pack(f"{o}IIQQQQQQ", p_type, 4, at, 0, 0, size, size, 1)
    else:
        phdr = struct.pack(f"{o}IIIIIIII", p_type, at, 0, 0, size, size, 4, 1)
    return header + phdr + (interpreter + b"\0" if interpreter is not None else b"")


@pytest.mark.parametrize(
    ("wide", "big"), [(True, False), (False, True), (False, False), (True, True)]
)
def test_elf_interpreter_reads_any_word_size_and_byte_order(tmp_path, wide, big):
    """Helpers for devices (a big-endian 32-bit MIPS router) are checked the same way."""
    b = backend()
    path = tmp_path / "prog"
    path.write_bytes(elf(wide=wide, big=big, interpreter=b"/lib/ld-musl-mips-sf.so.1"))
    assert b.elf_interpreter(path) == "/lib/ld-musl-mips-sf.so.1"
    path.write_bytes(elf(wide=wide, big=big, interpreter=None))
    assert b.elf_interpreter(path) is None


def test_helpers_run_with_no_shared_library_at_all(tmp_path):
    """In a root holding nothing but the two programs (like a musl or busybox userland,
    without libgcc_s or glibc), the shim runs the load program and reports on it."""
    root = tmp_path / "root"
    root.mkdir()
    clock, report = run_shim_with_load(helper("perflab-exec"), helper("perflab-load"), root)
    assert abs(float(clock) - time.time()) < 60, clock
    # wall_ns user_us system_us maxrss_kib wait_status lingering
    assert len(report) == 6, report
    wall_ns, _, _, maxrss_kib, wait_status, lingering = report
    assert wall_ns > 0 and maxrss_kib > 0
    assert (wait_status, lingering) == (0, 0)
    assert sorted(p.name for p in root.iterdir()) == sorted(HELPERS)


def test_static_load_program_resolves_host_names_without_nss_libraries(tmp_path, memcached):
    """glibc linked statically keeps its `files` and `dns` host sources built in: in a root
    with no library, a name from /etc/hosts resolves (a source nsswitch.conf names that needs
    a library, here `mymachines`, is passed over), and the load runs against a real server."""
    from perflab.workloads.kv import as_config

    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hosts").write_text("127.0.0.1 kv-server\n")
    (root / "etc" / "nsswitch.conf").write_text("hosts: files mymachines dns\n")
    shutil.copy2(helper("perflab-load"), root / "perflab-load")
    table = {"server": f"kv-server:{memcached.port}", "protocol": "memcache_text"}
    table |= {"test_time": "0.3s", "clients": 1, "threads": 1, "ratio": "1:1"}
    config = json.dumps(as_config(table).to_engine())
    done = in_empty_root(root, ["/perflab-load", config])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["error"]) == ("complete", None), result["error"]
    assert result["connections"] == 1 and result["sets"]["requests"] > 0


def test_the_empty_root_has_no_dynamic_loader(tmp_path):
    """The same root cannot run a dynamically linked program: the test above is no
    accident of a library being found."""
    root = tmp_path / "root"
    root.mkdir()
    true = Path(shutil.which("true") or "/bin/true")
    assert backend().elf_interpreter(true) is not None
    shutil.copy2(true, root / "true")
    done = in_empty_root(root, ["/true"])
    assert done.returncode == 127, (done.returncode, done.stderr)
    assert "No such file or directory" in done.stderr


# The backend's own pieces.


def test_helpers_are_linked_statically_on_linux_targets():
    b = backend()
    assert b.links_statically("x86_64-unknown-linux-gnu")
    assert b.links_statically("aarch64-unknown-linux-musl")
    assert b.links_statically("armv7-unknown-linux-gnueabihf")
    assert not b.links_statically("x86_64-apple-darwin")
    assert not b.links_statically("x86_64-unknown-netbsd")


def test_cargo_env_adds_the_static_flags_to_the_callers_own():
    b = backend()
    env = b.cargo_env("x86_64-unknown-linux-gnu", {"RUSTFLAGS": "-C target-cpu=native"})
    assert env["RUSTFLAGS"].split() == [
        "-C",
        "target-cpu=native",
        "-C",
        "target-feature=+crt-static",
        "-C",
        "strip=debuginfo",
    ]
    encoded = b.cargo_env("x86_64-unknown-linux-gnu", {"CARGO_ENCODED_RUSTFLAGS": "-Dwarnings"})
    assert encoded["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") == [
        "-Dwarnings",
        "-C",
        "target-feature=+crt-static",
        "-C",
        "strip=debuginfo",
    ]
    assert "RUSTFLAGS" not in encoded
    assert "crt-static" not in b.cargo_env("aarch64-apple-darwin", {})["RUSTFLAGS"]


def test_the_build_maps_this_machines_paths_away():
    """rustc writes source paths into panic locations: the cargo home and the checkout
    are remapped for every build, so the extension module setup built here names neither
    (a user's copy of it says nothing of the machine that made it)."""
    b = backend()
    home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo").resolve()
    flags = b.path_remaps({"CARGO_HOME": str(home)})
    assert flags == [f"--remap-path-prefix={home}=/cargo", f"--remap-path-prefix={ROOT}=/perflab"]
    assert b.path_remaps({"CARGO_HOME": "/a b/cargo"}) == [f"--remap-path-prefix={ROOT}=/perflab"]
    import perflab._native

    data = Path(perflab._native.__file__).read_bytes()
    assert b"/cargo/registry/" in data  # the crates' sources, under their fixed name
    assert str(home).encode() + b"/" not in data and str(ROOT).encode() + b"/" not in data


def test_install_refuses_a_dynamically_linked_helper(tmp_path):
    """Were the static flags lost (a cargo configuration overriding them), the build fails
    instead of shipping a shim that needs this machine's libraries."""
    b = backend()
    with pytest.raises(b.HelperBuildError, match="dynamically linked"):
        b.install({"perflab-exec": Path(os.path.realpath(sys.executable))}, tmp_path, static=True)
    assert not (tmp_path / "perflab-exec").exists()


def test_install_copies_each_helper_executable_and_keeps_an_identical_one(tmp_path):
    b = backend()
    built = {name: helper(name) for name in HELPERS}
    out = b.install(built, tmp_path / "_bin", static=True)
    for name in HELPERS:
        assert out[name] == tmp_path / "_bin" / name
        assert out[name].read_bytes() == built[name].read_bytes()
        assert os.access(out[name], os.X_OK)
    inode = out["perflab-exec"].stat().st_ino
    b.install(built, tmp_path / "_bin", static=True)
    assert out["perflab-exec"].stat().st_ino == inode
    assert sorted(p.name for p in (tmp_path / "_bin").iterdir()) == sorted(HELPERS)


def test_a_wheel_without_its_helpers_is_refused(tmp_path):
    b = backend()
    wheel = tmp_path / "perflab-0-py3-none-any.whl"

    def write(entries: dict[str, int]) -> None:
        with zipfile.ZipFile(wheel, "w") as z:
            for name, mode in entries.items():
                info = zipfile.ZipInfo(name)
                info.external_attr = (0o100000 | mode) << 16
                z.writestr(info, b"\x7fELF")

    write({"perflab/_bin/perflab-exec": 0o755})
    with pytest.raises(b.HelperBuildError, match="perflab-load is missing"):
        b.check_wheel(wheel)
    write({"perflab/_bin/perflab-exec": 0o755, "perflab/_bin/perflab-load": 0o644})
    with pytest.raises(b.HelperBuildError, match="perflab-load is mode 644"):
        b.check_wheel(wheel)
    write({"perflab/_bin/perflab-exec": 0o755, "perflab/_bin/perflab-load": 0o755})
    b.check_wheel(wheel)


# Through pip, as a user builds and installs perflab.


def pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # maturin's PEP 517 hooks run the `maturin` program: this environment's (no isolation,
    # so no download; pyproject.toml's test extra installs it).
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_pip_wheel_carries_the_static_helpers_and_an_install_runs_them(tmp_path):
    pip(
        "wheel",
        str(ROOT),
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(tmp_path / "dist"),
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("perflab-*.whl")
    with zipfile.ZipFile(wheel) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    for name in HELPERS:
        assert modes[f"perflab/_bin/{name}"] & 0o111, oct(modes[f"perflab/_bin/{name}"])
    assert re.search(r"perflab/_native\.[\w.-]*so$", "\n".join(modes), re.M)

    # Installed as pip installs it, an installed perflab finds its own helpers ...
    site = tmp_path / "site"
    pip("install", "--no-deps", "--no-index", "--target", str(site), str(wheel), cwd=tmp_path)
    code = "from perflab.hosts.process import installed_program as p; print(p('perflab-exec')); print(p('perflab-load'))"
    found = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    paths = [Path(line) for line in found.stdout.split()]
    assert paths == [site / "perflab" / "_bin" / name for name in HELPERS]
    # ... statically linked, and they run with no shared library about.
    for path in paths:
        assert backend().elf_interpreter(path) is None
    root = tmp_path / "root"
    root.mkdir()
    _, report = run_shim_with_load(paths[0], paths[1], root)
    assert report[4] == 0


@pytest.mark.slow
def test_sdist_holds_what_builds_the_helpers(tmp_path):
    """A wheel built from the sdist (`python -m build`, pip from an index) needs the backend
    and the shim's crate, which is no dependency of the extension module's crate."""
    # maturin's hooks read pyproject.toml from the working folder and run `maturin`.
    code = "import perflab_build, sys; print(perflab_build.build_sdist(sys.argv[1]))"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "build_backend"),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    name = done.stdout.split()[-1]
    with tarfile.open(tmp_path / name) as t:
        members = {m.split("/", 1)[1] for m in t.getnames() if "/" in m}
    for needed in (
        "pyproject.toml",
        "Cargo.toml",
        "Cargo.lock",
        "build_backend/perflab_build.py",
        "crates/exec/Cargo.toml",
        "crates/exec/src/main.rs",
        "crates/load/src/bin/perflab-load.rs",
    ):
        assert needed in members, needed
    assert not any("/_bin/" in m or m.endswith(".so") for m in members)
