"""The experiment file of a bisect step, derived from the user's.

The user's file is an ordinary experiment whose variant builds and installs the code at
``{commit}`` (in its ``setup``, or in an unmeasured phase) and whose phases measure it;
``{repo}`` is the repository's folder. A step's file is the same document — phases,
metrics, matrix, services, hosts, hooks as written — with three variants made from the
user's baseline variant: ``good`` (the baseline), ``candidate`` and ``bad``, each with its
``params.commit`` (the full commit id) and ``params.repo``; its repetitions are adaptive,
tracking the bisected metric only (`StepDesign`). It is written as TOML text
(with tomli-w) and validated like any file, so the step is stored, shown and resumed as
an ordinary experiment named ``NAME-bisect-step-K``."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tomli_w import dumps

from perflab.errors import InputError, SpecError

if TYPE_CHECKING:
    from perflab.spec import Spec

#: The names bisect gives every variant (besides the user's parameters).
BISECT_PARAMS = ("commit", "repo")
#: The variants of a step, the baseline first.
GOOD, CANDIDATE, BAD = "good", "candidate", "bad"
#: A spec with fixed ``repetitions = N`` is bisected with adaptive ones from
#: ``min(N, MIN_BLOCKS)`` (at least 2) to ``max(3·N, MAX_BLOCKS)`` blocks.
MIN_BLOCKS = 5
MAX_BLOCKS = 30
#: The first step's precision target when the spec names none (``target_ci``): later
#: steps take theirs from the change between good and bad (`target_for`).
FIRST_TARGET = 0.02
#: The target is the change between the ends over this: a candidate equal to one end is
#: then ~6 standard errors from the other, and every verdict is clear (docs/running.md).
TARGET_DIVISOR = 3.0
#: The finest and coarsest precision targets a step runs to.
MIN_TARGET, _MAX_TARGET = 0.0005, 0.5
#: Longest experiment name (the schema's).
_MAX_NAME = 64


@dataclass(frozen=True)
class StepDesign:
    """How many blocks a step may run: ``min_blocks``..``max_blocks``, adding one block at
    a time until the tracked intervals' half-widths are ≤ the step's target."""

    min_blocks: int
    max_blocks: int
    first_target: float  # fraction: 0.02 = ±2%


@dataclass(frozen=True)
class BisectSpec:
    """The user's experiment file, read for bisecting: its document (``data``), where it
    is (relative paths and the working folder are the file's), the bisected ``metric``
    and its better direction, and the steps' design."""

    data: dict[str, Any]
    path: Path
    metric: str
    better: str
    design: StepDesign

    @property
    def name(self) -> str:
        return str(self.data["name"])


def read_spec(path: str | Path, metric: str | None) -> BisectSpec:
    """The user's file, checked: one line with file:line for a bad file (as `perflab run`
    says it), and InputError for what a bisect cannot use.

    The file need not run alone: bisect gives it ``{commit}``, ``{repo}`` and the variants
    to compare. So it is valid if it loads, or if the steps made from it do; when neither
    does, the file's own error is told (it points to a line), unless it is about what
    bisect gives."""
    from perflab.spec import load_spec
    from perflab.spec.template import placeholders

    p = Path(path)
    try:
        text, problem = load_spec(p).text, None
    except SpecError as e:
        try:
            text, problem = p.read_text(encoding="utf-8").removeprefix("\ufeff"), e
            tomllib.loads(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            raise e from None
    data = tomllib.loads(text)
    if problem is not None:
        _check_steps(data, p, problem)
    if "commit" not in placeholders(text):
        raise InputError(
            f"{p}: no command names {{commit}}: every step would measure the same code "
            "(build and install the commit in the variant's setup, e.g. "
            'setup = "make -C {repo} install COMMIT={commit}")'
        )
    for name in BISECT_PARAMS:
        if name in (data.get("matrix") or {}):
            raise InputError(f"{p}: '{name}' is a matrix parameter; bisect sets it per variant")
    metrics = {str(m["name"]): str(m["better"]) for m in data["metric"]}
    chosen = metric or next(iter(metrics))
    if chosen not in metrics:
        raise InputError(f"--metric {chosen}: not a metric of {p} (metrics: {', '.join(metrics)})")
    found = BisectSpec(data, p, chosen, metrics[chosen], design_of(data))
    _probe(found)
    return found


def _probe(spec: BisectSpec) -> None:
    """A step made from ``spec``, validated (the steps differ only in commits and target)."""
    commits = {v: f"{i:040x}" for i, v in enumerate((GOOD, CANDIDATE, BAD))}
    step_spec(spec, 1, commits, {}, Path("."), spec.design.first_target)


def _check_steps(data: dict[str, Any], path: Path, problem: SpecError) -> None:
    """For a file that does not load alone (``problem``): the steps made from it must. If
    they do not either, for the same reason, the file's own error is told (at its line)."""
    try:
        first = str(data["metric"][0]["name"])
        _probe(BisectSpec(data, path, first, "lower", design_of(data)))
    except SpecError as e:
        raise (problem if problem.message in e.message else e) from None
    except (KeyError, IndexError, TypeError, ValueError, InputError):
        raise problem from None


def design_of(data: dict[str, Any]) -> StepDesign:
    """The steps' bounds from the spec's repetitions: its own adaptive ones, or a range
    around its fixed count."""
    reps = data.get("repetitions", 10)
    if isinstance(reps, dict):
        from perflab.spec.schema import parse_percent

        target = parse_percent(reps["target_ci"])
        return StepDesign(int(reps["min"]), int(reps["max"]), target)
    n = int(reps)
    return StepDesign(max(2, min(n, MIN_BLOCKS)), max(3 * n, MAX_BLOCKS), FIRST_TARGET)


def target_for(change: float | None, previous: float) -> float:
    """A step's precision target: the latest relative change between good and bad over
    `TARGET_DIVISOR` (``previous`` while none is known)."""
    if change is None or change != change:
        return previous
    return min(_MAX_TARGET, max(MIN_TARGET, abs(change) / TARGET_DIVISOR))


def step_name(base: str, step: int, attempt: int = 1) -> str:
    suffix = f"-bisect-step-{step}" + (f"-try{attempt}" if attempt > 1 else "")
    return base[: _MAX_NAME - len(suffix)] + suffix


def step_spec(
    spec: BisectSpec,
    step: int,
    commits: dict[str, str],
    subjects: dict[str, str],
    repo: Path,
    target: float,
    attempt: int = 1,
) -> Spec:
    """Step ``step``'s experiment: the user's with variants good, candidate and bad at
    ``commits`` (variant → full commit id) and adaptive repetitions to ``target``."""
    from perflab.spec import parse_spec

    data = copy.deepcopy(spec.data)
    template = _template_variant(data, spec.path)
    data["name"] = step_name(spec.name, step, attempt)
    data["description"] = (
        f"perflab bisect step {step} of {spec.name}: candidate {commits[CANDIDATE][:12]} "
        f"between good {commits[GOOD][:12]} and bad {commits[BAD][:12]}"
    )
    data["baseline"] = GOOD
    data["variant"] = [
        {
            **template,
            **_booted_at(template, commit, repo),
            "name": name,
            "description": subjects.get(name, "")[:200],
            "params": {**template.get("params", {}), "commit": commit, "repo": str(repo)},
        }
        for name, commit in commits.items()
    ]
    d = spec.design
    data["repetitions"] = {
        "min": _whole_rounds(d.min_blocks, d.max_blocks, data),
        "max": d.max_blocks,
        "target_ci": _percent(target),
        "metrics": [spec.metric],
    }
    if data.get("max_failures") == 0:  # a broken build must end its step: the default, 3
        data["max_failures"] = 3
    try:
        return parse_spec(dumps(data), spec.path)
    except SpecError as e:
        raise SpecError(
            f"the bisect step made from it is not valid: {e.message}",
            location=str(spec.path),
            hint=e.hint,
        ) from None


def _whole_rounds(blocks: int, most: int, data: dict[str, Any]) -> int:
    """A step's first blocks on a pool of N devices (``pool = N``): rounded up to a multiple
    of N (at most ``most``), since N blocks take the time of one — 3 blocks on two routers
    take as long as 4, so the step gets the fourth for nothing."""
    size = max((int(h.get("pool") or 1) for h in (data.get("hosts") or {}).values()), default=1)
    return min(most, -(-blocks // size) * size)


#: A variant's keys that name what its host boots: ``{commit}`` and ``{repo}`` in them are
#: the step's (a kernel variant boots the kernel built from the candidate).
BOOT_KEYS = ("kernel", "cmdline")


def _booted_at(template: dict[str, Any], commit: str, repo: Path) -> dict[str, Any]:
    """The template's boot keys with ``{commit}`` and ``{repo}`` filled in."""
    return {
        k: template[k].replace("{commit}", commit).replace("{repo}", str(repo))
        for k in BOOT_KEYS
        if isinstance(template.get(k), str)
    }


def _template_variant(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The variant every step's three are made from: the baseline variant."""
    variants = data["variant"]
    found = next((v for v in variants if v.get("name") == data.get("baseline")), None)
    if found is None:
        raise InputError(f"{path}: no variant is the baseline ('{data.get('baseline')}')")
    return dict(found)


def _percent(fraction: float) -> str:
    """``target_ci`` text: 0.0267 → "2.67%"."""
    return f"{fraction * 100:.4f}".rstrip("0").rstrip(".") + "%"
