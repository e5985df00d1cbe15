"""Reading an experiment file: TOML → validated `Spec` (experiment_file.py), or one `SpecError`
with file:line."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from perflab.errors import SpecError
from perflab.spec import limits
from perflab.spec.experiment_file import Spec
from perflab.spec.locate import Path as KeyPath
from perflab.spec.locate import find_line, key_lines
from perflab.spec.phase_kinds import schemas
from perflab.spec.schema import NAME_RE, PHASE_KINDS, ExperimentSpec, key_names, model_at


def load_spec(path: str | Path) -> Spec:
    """Read and validate an experiment file; any problem is one `SpecError` (one line)."""
    p = Path(path)
    try:
        if p.is_dir():
            raise SpecError(f"{p} is a folder, not an experiment file")
        data = limits.read_spec_bytes(p)
    except FileNotFoundError:
        raise SpecError(f"experiment file not found: {p}") from None
    except OSError as e:
        raise SpecError(f"cannot read experiment file {p}: {e.strerror or e}") from None
    except ValueError as e:  # e.g. a NUL character in the path
        raise SpecError(f"cannot read experiment file {str(p)!r}: {e}") from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark is no TOML
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise SpecError(
            f"not UTF-8 text (byte {e.start + 1}: {data[e.start : e.start + 1]!r}); an "
            "experiment file is TOML",
            location=f"{p}:{line}",
        ) from None
    return parse_spec(text, p)


def parse_spec(text: str, path: Path | None = None) -> Spec:
    label = str(path) if path else "<spec>"
    try:
        return _parse(text, path, label)
    except SpecError as e:
        raise _single_line(e) from None
    except (
        RecursionError
    ):  # a nesting the limits did not foresee: still one line, never a traceback
        raise SpecError(
            f"nested too deeply (at most {limits.MAX_DEPTH} levels)", location=label
        ) from None


def _parse(text: str, path: Path | None, label: str) -> Spec:
    limits.check_text_size(text, label)
    limits.check_nesting(text, label)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(_toml_message(e), location=f"{label}:{_toml_line(e)}") from None
    lines = key_lines(text)
    limits.check_depth(data, lines, label)
    try:
        model = ExperimentSpec.model_validate(data, context={PHASE_KINDS: schemas()})
    except ValidationError as e:
        raise _first_error(e, data, lines, label) from None
    from perflab.spec.template_rules import render_kernels

    model = render_kernels(model)  # {commit} in a variant's kernel: its params
    spec = Spec(model=model, text=text, path=path, lines=lines)
    from perflab.spec.validate import check_spec  # cross-field rules

    check_spec(spec)
    return spec


def _single_line(e: SpecError) -> SpecError:
    """The same error with control characters (a newline in a key or a file name) escaped."""

    def clean(s: str | None) -> str | None:
        return None if s is None else _escape_controls(s)

    return SpecError(_escape_controls(e.message), location=clean(e.location), hint=clean(e.hint))


#: Longest message (or hint) of an error: a line someone reads, not a dump.
_MAX_MESSAGE = 2000


def _escape_controls(s: str) -> str:
    if not s.isprintable():
        s = "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in s)
    return s if len(s) <= _MAX_MESSAGE else s[:_MAX_MESSAGE] + "…"


#: Longest value quoted back in an error message.
_MAX_SHOWN = 80


def _shown(value: Any) -> str:
    """``repr(value)``, cut to `_MAX_SHOWN` characters (a 50 MB description stays one short line)."""
    if isinstance(value, str) and len(value) > _MAX_SHOWN:
        return repr(value[:_MAX_SHOWN]) + f"… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"


def _toml_line(e: tomllib.TOMLDecodeError) -> int:
    msg = str(e)
    marker = "(at line "
    if marker in msg:
        return int(msg.split(marker, 1)[1].split(",", 1)[0])
    return 1


def _toml_message(e: tomllib.TOMLDecodeError) -> str:
    return "invalid TOML: " + str(e).split(" (at line", 1)[0]


def _first_error(
    e: ValidationError, data: dict[str, Any], lines: dict[KeyPath, int], label: str
) -> SpecError:
    errors = _union_errors(e.errors(), data)
    errors = sorted(errors, key=lambda err: find_line(lines, err["loc"]) or 0)
    err = errors[0]
    loc = err["loc"]
    line = find_line(lines, loc)
    where = f"{label}:{line}" if line else label
    more = (
        f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
        if len(errors) > 1
        else ""
    )
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = model_at(loc[:-1], schemas())
        hint = None
        if model is not None:
            close = difflib.get_close_matches(key, key_names(model), n=1, cutoff=0.6)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else "known keys: " + ", ".join(key_names(model))
            )
        return SpecError(
            f"unknown key {_shown(key)} in {_table_name(loc[:-1], data)}{more}",
            location=where,
            hint=hint,
        )
    if kind == "missing":
        return SpecError(
            f"missing required key '{loc[-1]}' in {_table_name(loc[:-1], data)}{more}",
            location=where,
        )
    value = err.get("input")
    got = f", got {_shown(value)}" if not isinstance(value, (dict, list)) else ""
    msg = err["msg"]
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        got = ""
    if kind == "string_pattern_mismatch":
        if (err.get("ctx") or {}).get("pattern") == NAME_RE:
            msg = "names may use letters, digits and _ . + % - (starting with a letter or digit)"
        else:
            msg = (
                "parameter names are identifiers: letters, digits and _ (not starting with a digit)"
            )
    return SpecError(f"{_dotted(loc)}: {msg}{got}{more}", location=where)


_TYPE_MISMATCH = {
    "int_type",
    "int_parsing",
    "model_type",
    "dict_type",
    "string_type",
    "float_type",
    "bool_type",
    "list_type",
}


def _document_path(err: Mapping[str, Any], data: Any) -> KeyPath:
    """The error's location as keys and indexes of the document: the parts of pydantic's
    location that are not in the data (a union member's name such as 'list[...]',
    'constrained-int' or a model class, '[key]' for a dict key) are dropped. A missing
    key is kept: it is the last part, absent by definition."""
    loc = tuple(err["loc"])
    out: list[str | int] = []
    cur = data
    for i, part in enumerate(loc):
        if _holds(cur, part):
            cur = cur[part]
        elif i == len(loc) - 1 and err["type"] == "missing":
            cur = None
        else:
            continue
        out.append(part)
    return tuple(out)


def _holds(value: Any, part: Any) -> bool:
    """Whether ``part`` is a key of the table ``value`` or an index of the array ``value``."""
    return (isinstance(value, dict) and isinstance(part, str) and part in value) or (
        isinstance(value, list)
        and isinstance(part, int)
        and not isinstance(part, bool)
        and 0 <= part < len(value)
    )


def _union_errors(errors: Sequence[Mapping[str, Any]], data: Any) -> list[dict[str, Any]]:
    """pydantic reports every member of a union: keep the member the value was meant for
    (the one that failed on something other than its type), with branch names dropped."""
    out: list[dict[str, Any]] = []
    for err in errors:
        loc = tuple(err["loc"])
        field = _document_path(err, data)
        out.append({**err, "loc": field, "_branched": len(field) != len(loc)})
    meant = {
        err["loc"][:1] for err in out if err["_branched"] and err["type"] not in _TYPE_MISMATCH
    }
    keep: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    for err in out:
        if not (err["_branched"] and err["type"] in _TYPE_MISMATCH):
            keep.append(err)
        elif err["loc"][:1] not in meant:
            mismatches.append(err)
    # a value of no member's type: the members that fit its shape got furthest into it, so keep
    # the deepest location per field, and one error per location naming every type it could be
    deepest: dict[KeyPath, int] = {}
    for err in mismatches:
        deepest[err["loc"][:1]] = max(deepest.get(err["loc"][:1], 0), len(err["loc"]))
    by_loc: dict[KeyPath, list[dict[str, Any]]] = {}
    for err in mismatches:
        if len(err["loc"]) == deepest[err["loc"][:1]]:
            by_loc.setdefault(err["loc"], []).append(err)
    for group in by_loc.values():
        kinds = list(dict.fromkeys(_EXPECTED.get(err["type"]) for err in group))
        known = [kind for kind in kinds if kind is not None]
        err = group[0]
        if len(kinds) > 1 and len(known) == len(kinds):
            err = {**err, "msg": "expected " + ", ".join(known[:-1]) + " or " + known[-1]}
        keep.append(err)
    return keep


_EXPECTED = {
    "bool_type": "true/false",
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "an array",
    "dict_type": "a table",
    "model_type": "a table",
}


def _dotted(loc: KeyPath) -> str:
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (("." if out else "") + str(part))
    return out or "top level"


def _table_name(loc: KeyPath, data: Any) -> str:
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
