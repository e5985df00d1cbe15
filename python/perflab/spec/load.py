"""Reading an experiment file: TOML → validated `Spec`, or one `SpecError` with file:line."""

from __future__ import annotations

import difflib
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from perflab.errors import SpecError
from perflab.spec.locate import find_line, key_lines
from perflab.spec.schema import ExperimentSpec, key_names, model_at


@dataclass(frozen=True)
class Spec:
    """A validated experiment file plus what is needed to point back into it."""

    model: ExperimentSpec
    text: str
    path: Path | None = None
    lines: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "<spec>"

    @property
    def workdir(self) -> Path:
        base = self.path.parent.resolve() if self.path else Path.cwd()
        return (base / self.model.workdir).resolve() if self.model.workdir else base

    def where(self, loc: tuple) -> str:
        line = find_line(self.lines, loc)
        return f"{self.label}:{line}" if line else self.label

    def error(self, loc: tuple, message: str, hint: str | None = None) -> SpecError:
        return SpecError(message, location=self.where(loc), hint=hint)


def load_spec(path: str | Path) -> Spec:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"experiment file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"cannot read experiment file {p}: {e}") from None
    return parse_spec(text, p)


def parse_spec(text: str, path: Path | None = None) -> Spec:
    label = str(path) if path else "<spec>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(_toml_message(e), location=f"{label}:{_toml_line(e)}") from None
    lines = key_lines(text)
    try:
        model = ExperimentSpec.model_validate(data)
    except ValidationError as e:
        raise _first_error(e, data, lines, label) from None
    spec = Spec(model=model, text=text, path=path, lines=lines)
    from perflab.spec.validate import check_spec  # cross-field rules

    check_spec(spec)
    return spec


def _toml_line(e: tomllib.TOMLDecodeError) -> int:
    msg = str(e)
    marker = "(at line "
    if marker in msg:
        return int(msg.split(marker, 1)[1].split(",", 1)[0])
    return 1


def _toml_message(e: tomllib.TOMLDecodeError) -> str:
    return "invalid TOML: " + str(e).split(" (at line", 1)[0]


def _first_error(e: ValidationError, data: dict, lines: dict, label: str) -> SpecError:
    errors = _union_errors(e.errors())
    errors = sorted(errors, key=lambda err: find_line(lines, err["loc"]) or 0)
    err = errors[0]
    loc = err["loc"]
    line = find_line(lines, loc)
    where = f"{label}:{line}" if line else label
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = model_at(loc[:-1])
        hint = None
        if model is not None:
            close = difflib.get_close_matches(key, key_names(model), n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else "known keys: " + ", ".join(key_names(model))
        return SpecError(f"unknown key '{key}' in {_table_name(loc[:-1], data)}{more}",
                         location=where, hint=hint)
    if kind == "missing":
        return SpecError(f"missing required key '{loc[-1]}' in {_table_name(loc[:-1], data)}{more}",
                         location=where)
    value = err.get("input")
    got = f", got {value!r}" if not isinstance(value, (dict, list)) else ""
    msg = err["msg"]
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        got = ""
    if kind == "string_pattern_mismatch":
        msg = "names may use letters, digits and _ . + % - (starting with a letter or digit)"
    return SpecError(f"{_dotted(loc)}: {msg}{got}{more}", location=where)


_TYPE_MISMATCH = {"int_type", "int_parsing", "model_type", "dict_type", "string_type", "float_type",
                  "bool_type", "list_type"}


def _is_branch(part) -> bool:
    """A union member's name in an error location ('list[...]', 'constrained-int', a model class)."""
    return isinstance(part, str) and ("[" in part or part[:1].isupper()
                                      or part.startswith(("constrained-", "function-")))


def _union_errors(errors: list[dict]) -> list[dict]:
    """pydantic reports every member of a union: keep the member the value was meant for
    (the one that failed on something other than its type), with branch names dropped."""
    out = []
    for err in errors:
        loc = tuple(err["loc"])
        field = tuple(p for p in loc if not _is_branch(p))
        out.append({**err, "loc": field, "_branched": len(field) != len(loc)})
    meant = {err["loc"][:1] for err in out if err["_branched"] and err["type"] not in _TYPE_MISMATCH}
    keep, seen = [], set()
    for err in out:
        if err["_branched"] and err["type"] in _TYPE_MISMATCH:
            # a value of no member's type: one error per field, not one per member
            if any(err["loc"][:len(m)] == m for m in meant) or err["loc"] in seen:
                continue
            seen.add(err["loc"])
        keep.append(err)
    return keep


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (("." if out else "") + str(part))
    return out or "top level"


def _table_name(loc: tuple, data: Any) -> str:
    if not loc:
        return "the top level"
    if len(loc) >= 2 and isinstance(loc[1], int) and loc[0] in ("variant", "phase", "metric"):
        try:
            name = data[loc[0]][loc[1]].get("name")
        except (KeyError, IndexError, TypeError, AttributeError):
            name = None
        base = f"[[{loc[0]}]] #{loc[1] + 1}" + (f" '{name}'" if name else "")
        rest = loc[2:]
        return base + (f" {_dotted(rest)}" if rest else "")
    return f"[{_dotted(loc)}]"
