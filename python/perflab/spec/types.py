"""Strict value types of the experiment file: no silent coercion, bounded sizes.

TOML already distinguishes true, 10, 10.0 and "10"; a spec that writes one where another
is meant is a mistake to report, not to guess at (``repetitions = true`` would be 1 run,
``measure = "yes"`` true, ``shell = "no"`` … true as well). Strings are bounded
(`perflab.spec.limits`), commands must say something, and nothing may hold a NUL
character (no command, file name or environment can carry one).
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from perflab.durations import parse_duration
from perflab.hosts.ssh import parse_destination
from perflab.spec.limits import KIB, MAX_COMMAND, MAX_SHORT, MAX_TEXT, size_text


def _whole_number(value: Any) -> Any:
    """Before int validation: refuse what lax parsing would turn into an int."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, not {str(value).lower()}")
    if isinstance(value, float):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, str) and _parses(int, value):
        raise ValueError(f"write numbers without quotes: {value.strip()}, not {value!r}")
    return value  # anything else: the int validator says what it is


def _real_number(value: Any) -> Any:
    """Before float validation: refuse true/false and quoted numbers."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not {str(value).lower()}")
    if isinstance(value, str) and _parses(float, value):
        raise ValueError(f"write numbers without quotes: {value.strip()}, not {value!r}")
    return value


def _parses(kind: type, text: str) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


#: A whole number (no true/false, no 3.0, no "3"); bound it where used, as a type alias mypy
#: reads: ``Annotated[WholeNumber, Field(ge=0, le=1000)]`` (nested Annotated flattens).
WholeNumber = Annotated[int, BeforeValidator(_whole_number)]
#: A number (no true/false, no "0.9"); bound it where used:
#: ``Annotated[RealNumber, Field(gt=0.5, lt=1.0, allow_inf_nan=False)]``.
RealNumber = Annotated[float, BeforeValidator(_real_number)]


def _no_nul(text: str) -> str:
    if "\0" in text:
        raise ValueError(
            "contains a NUL character (\\0), which no command, path or environment can carry"
        )
    return text


def _command(text: str) -> str:
    if not text.strip():
        raise ValueError("the command is empty (remove the key, or write the command)")
    return _command_text(text)


def _command_text(text: str) -> str:
    if len(text) > MAX_COMMAND:
        raise ValueError(
            f"the command is {size_text(len(text))}; the limit is {MAX_COMMAND // KIB} KiB "
            "(put a long script in a file and run that)"
        )
    return _no_nul(text)


def _env_name(name: str) -> str:
    if not name or "=" in name or len(name) > MAX_SHORT:
        raise ValueError(f"bad environment variable name {name[:80]!r} (no '=', not empty)")
    return _no_nul(name)


def _env_value(text: str) -> str:
    if len(text) > MAX_COMMAND:
        raise ValueError(
            f"the value is {size_text(len(text))}; the limit is {MAX_COMMAND // KIB} KiB"
        )
    return _no_nul(text)


#: Prose: descriptions.
Text = Annotated[StrictStr, Field(max_length=MAX_TEXT)]
#: A short string: unit, parser, tool, regex, JSON path, folder.
Short = Annotated[StrictStr, Field(max_length=MAX_SHORT), AfterValidator(_no_nul)]
#: A shell command: not empty, ≤ 64 KiB, no NUL.
Command = Annotated[StrictStr, AfterValidator(_command)]
#: The overhead command (its emptiness is reported with its own hint by validate.py).
OverheadCommand = Annotated[StrictStr, AfterValidator(_command_text)]
Env = dict[
    Annotated[StrictStr, AfterValidator(_env_name)],
    Annotated[StrictStr, AfterValidator(_env_value)],
]
#: A parameter's value (substituted into commands): a string as long as a command at most.
ParamText = Annotated[StrictStr, AfterValidator(_command_text)]
Scalar = StrictBool | StrictInt | StrictFloat | ParamText
#: A label of a matrix value (``{ "90%" = 1600000 }``): it names cells in every table.
Label = Annotated[StrictStr, Field(min_length=1, max_length=256), AfterValidator(_no_nul)]
Bool = StrictBool

_PARAM_REF = re.compile(r"^\{[A-Za-z_][A-Za-z0-9_]*\}$")
MAX_CORES = 4096


def _cores(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_CORES:
            raise ValueError(f"expected 1 … {MAX_CORES} cores, got {value}")
        return value
    if isinstance(value, str):
        if _PARAM_REF.match(value):
            return value
        if _parses(int, value):
            raise ValueError(f"write numbers without quotes: {value.strip()}, not {value!r}")
    shown = repr(value)[:80] if not isinstance(value, bool) else str(value).lower()
    raise ValueError(f'expected a number of cores, or "{{param}}" naming a parameter, got {shown}')


#: ``cores = 2``, or ``cores = "{param}"``.
Cores = Annotated[StrictInt | StrictStr, BeforeValidator(_cores)]


def _destination(text: str) -> str:
    parse_destination(text.replace("{slot}", "0"))  # a pool's device: its slot named later
    return text


#: An ssh destination (`[hosts.NAME] ssh = ...`).
Destination = Annotated[StrictStr, Field(max_length=256), AfterValidator(_destination)]


class Strict(BaseModel):
    """A table of the experiment file: unknown keys are errors, values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


#: A duration ("90s", "10m", 1.5); bound it where used.
Duration = Annotated[float, BeforeValidator(parse_duration)]
#: A duration that may be 0 ("0", 0, "0s"): "never wait" where that has a meaning.
DurationOrZero = Annotated[float, BeforeValidator(functools.partial(parse_duration, zero=True))]
