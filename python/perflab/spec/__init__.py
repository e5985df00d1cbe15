"""The experiment file: schema, loading with file:line errors, validation, templating."""

from perflab.spec.load import Spec, load_spec, parse_spec

__all__ = ["Spec", "load_spec", "parse_spec"]
