"""perflab's PEP 517 build backend: maturin, after the helper programs perflab stages.

perflab runs every step through ``perflab-exec`` (crates/exec) and stages it, and the load
generator ``perflab-load`` (crates/load), to the hosts it drives. Both must be in the
package, at ``perflab/_bin/``, where ``perflab.hosts.process.installed_program`` looks. So
before maturin builds a wheel or an editable install, this backend builds them with cargo
for the machine it runs on and puts them in ``python/perflab/_bin/``; maturin's ``include``
(pyproject.toml) puts that folder's two programs in the wheel, and `build_wheel` checks
that they are there. Every other hook is maturin's own.

The helpers are linked statically where the target allows it (Linux, glibc or musl:
``-C target-feature=+crt-static``), so they run on any userland of that architecture: musl,
an old glibc, no libgcc_s, no dynamic loader at all. They are built with an explicit
``--target`` (the host's triple): cargo then applies RUSTFLAGS to the target's code only,
not to build scripts and proc-macros, and puts the artifacts in ``target/TRIPLE/release``,
apart from the PyO3 extension module maturin builds in ``target/release``. Host artifacts
(build scripts, proc-macros) stay shared between the two builds.

``python build_backend/perflab_build.py`` builds and installs the helpers alone (what a
change to crates/exec needs).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The project's root (this file is ROOT/build_backend/perflab_build.py).
ROOT = Path(__file__).resolve().parent.parent
#: Where the helpers go in the source tree: inside the package, as ``perflab/_bin/NAME``.
BIN_DIR = ROOT / "python" / "perflab" / "_bin"
#: Each helper program and the cargo package that builds it.
HELPERS = {"perflab-exec": "perflab-exec", "perflab-load": "perflab-load"}
#: Debug info is for the developer's machine; staged to a host over SSH it is dead weight
#: (1.4 instead of 3.3 MB for the shim). Symbols stay, for backtraces and perf.
STRIP = ["-C", "strip=debuginfo"]
STATIC = ["-C", "target-feature=+crt-static"]


class HelperBuildError(RuntimeError):
    """The helper programs could not be built, or came out wrong (e.g. not static)."""


def host_target() -> str:
    """The Rust target triple of this machine (rustc's ``host``)."""
    rustc = os.environ.get("RUSTC", "rustc")
    try:
        out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise HelperBuildError(f"cannot ask {rustc} for this machine's target: {e}") from e
    for line in out.splitlines():
        if line.startswith("host: "):
            return line.removeprefix("host: ").strip()
    raise HelperBuildError(f"`{rustc} -vV` names no host target")


def links_statically(target: str) -> bool:
    """Whether helpers built for ``target`` are linked statically (Linux, glibc or musl)."""
    return "-linux-" in target and target.rsplit("-", 1)[-1].startswith(("gnu", "musl"))


def cargo_env(target: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for cargo: the caller's, with the helpers' flags added to its own
    RUSTFLAGS (which cargo would otherwise let win over any other way of giving flags)."""
    env = dict(os.environ if base is None else base)
    add_rustflags(env, (STATIC if links_statically(target) else []) + STRIP)
    return env


def add_rustflags(env: dict[str, str], flags: list[str]) -> None:
    """``flags`` added after those ``env`` already gives cargo (its encoded form if set)."""
    if "CARGO_ENCODED_RUSTFLAGS" in env:
        old = [f for f in env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") if f]
        env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join(old + flags)
    else:
        env["RUSTFLAGS"] = " ".join([*env.get("RUSTFLAGS", "").split(), *flags])


def path_remaps(env: Mapping[str, str]) -> list[str]:
    """rustc writes source paths into what it builds (panic locations): this machine's
    cargo home (the crates' sources) and the checkout are mapped to fixed names, so that
    a build names no folder of the machine that made it. A path with a space is left
    as it is (RUSTFLAGS splits at spaces)."""
    cargo_home = Path(env.get("CARGO_HOME") or Path.home() / ".cargo").resolve()
    pairs = [(cargo_home, "/cargo"), (ROOT, "/perflab")]
    return [f"--remap-path-prefix={p}={to}" for p, to in pairs if " " not in str(p)]


def _hide_build_paths() -> None:
    """This build's cargo runs (the helpers' and maturin's) map the machine's paths away."""
    env = dict(os.environ)
    add_rustflags(env, path_remaps(env))
    os.environ.update(env)


def elf_interpreter(path: Path) -> str | None:
    """The program interpreter (dynamic loader) an ELF executable asks for, or None: a
    statically linked program has none (no ``PT_INTERP`` program header)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise HelperBuildError(f"{path} is not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        phoff, phentsize, phnum = struct.unpack_from(order + "Q14xHH", data, 0x20)
    else:
        phoff, phentsize, phnum = struct.unpack_from(order + "I10xHH", data, 0x1C)
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type = struct.unpack_from(order + "I", data, at)[0]
        if p_type == 3:  # PT_INTERP
            if wide:
                offset, filesz = struct.unpack_from(order + "Q16xQ", data, at + 8)
            else:
                offset, filesz = struct.unpack_from(order + "I8xI", data, at + 4)
            return data[offset : offset + filesz].rstrip(b"\0").decode()
    return None


def cargo_build(target: str) -> dict[str, Path]:
    """Build the helpers for ``target`` (release); name → the executable cargo wrote."""
    cargo = os.environ.get("CARGO", "cargo")
    command = [cargo, "build", "--release", "--target", target, "--bins"]
    for package in sorted(set(HELPERS.values())):
        command += ["-p", package]
    command += ["--message-format=json-render-diagnostics"]
    env = cargo_env(target)
    print(f"perflab_build: {' '.join(command)}", file=sys.stderr, flush=True)
    try:
        # stdout: cargo's JSON messages; stderr (progress, rendered diagnostics) passes through.
        done = subprocess.run(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=False
        )
    except OSError as e:
        raise HelperBuildError(f"cannot run {cargo} (is the Rust toolchain installed?): {e}") from e
    if done.returncode != 0:
        raise HelperBuildError(f"cargo failed to build {', '.join(HELPERS)} (see above)")
    built: dict[str, Path] = {}
    for line in done.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if (name := message["target"]["name"]) in HELPERS:
            built[name] = Path(message["executable"])
    missing = sorted(set(HELPERS) - set(built))
    if missing:
        raise HelperBuildError(f"cargo built no {', '.join(missing)}")
    return built


def install(built: Mapping[str, Path], bin_dir: Path, *, static: bool) -> dict[str, Path]:
    """Copy the built helpers into ``bin_dir`` (mode 0755), each replaced in one rename so
    that a perflab running the old one keeps it; one already identical is left as it is."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, source in sorted(built.items()):
        if static and (interp := elf_interpreter(source)) is not None:
            raise HelperBuildError(f"{source} is dynamically linked (interpreter {interp})")
        dest = bin_dir / name
        data = source.read_bytes()
        if not (dest.is_file() and dest.read_bytes() == data and os.access(dest, os.X_OK)):
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=bin_dir)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.chmod(tmp, 0o755)
                os.replace(tmp, dest)
            except BaseException:
                os.unlink(tmp)
                raise
        out[name] = dest
    return out


def build_helpers(bin_dir: Path = BIN_DIR) -> dict[str, Path]:
    """Build the helpers for this machine and install them into ``bin_dir``."""
    target = host_target()
    return install(cargo_build(target), bin_dir, static=links_statically(target))


def check_wheel(wheel: Path) -> None:
    """Fail unless ``wheel`` holds every helper as an executable ``perflab/_bin/NAME``."""
    with zipfile.ZipFile(wheel) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    for name in HELPERS:
        mode = modes.get(f"perflab/_bin/{name}")
        if mode is None or not mode & 0o111:
            state = "missing" if mode is None else f"mode {mode & 0o777:o}"
            raise HelperBuildError(f"{wheel.name}: perflab/_bin/{name} is {state}")


# PEP 517 / PEP 660 hooks: maturin's, the two that build a wheel first building the helpers.
# maturin is imported in each, not at the top: the helpers can be built without it
# (``python build_backend/perflab_build.py``).


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    import maturin

    _hide_build_paths()
    build_helpers()
    name: str = maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
    check_wheel(Path(wheel_directory) / name)
    return name


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    # The package is used from python/perflab itself, so the helpers go there, as for a wheel.
    import maturin

    _hide_build_paths()
    build_helpers()
    name: str = maturin.build_editable(wheel_directory, config_settings, metadata_directory)
    return name


def build_sdist(sdist_directory: str, config_settings: Mapping[str, Any] | None = None) -> str:
    import maturin

    name: str = maturin.build_sdist(sdist_directory, config_settings)
    return name


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    import maturin

    requires: list[str] = maturin.get_requires_for_build_wheel(config_settings)
    return requires


def get_requires_for_build_editable(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    import maturin

    requires: list[str] = maturin.get_requires_for_build_editable(config_settings)
    return requires


def get_requires_for_build_sdist(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    import maturin

    requires: list[str] = maturin.get_requires_for_build_sdist(config_settings)
    return requires


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    import maturin

    name: str = maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    return name


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    import maturin

    name: str = maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)
    return name


if __name__ == "__main__":
    try:
        for path in build_helpers().values():
            print(path)
    except HelperBuildError as e:
        sys.exit(f"perflab_build: error: {e}")
