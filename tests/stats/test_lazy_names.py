"""`perflab.stats` imports a module when one of its names is first used: every name it
lists is there, and is the object its module defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import perflab.stats as stats
import pytest


@pytest.mark.parametrize("name", stats.__all__)
def test_every_listed_name_is_its_modules_object(name):
    value = getattr(stats, name)
    module = importlib.import_module(stats._WHERE[name])
    assert value is (module if module.__name__.endswith("." + name) else getattr(module, name))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'welch_batchx'"):
        _ = stats.welch_batchx  # type: ignore[attr-defined]


def test_the_default_method_imports_none_of_the_others():
    code = (
        "import sys\nfrom perflab.stats import get_method, correct, classify\n"
        "m = get_method('auto')\nprint(m.compare([1.0, 2, 3, 4, 5], [2.0, 3, 4, 5, 6]).method)\n"
        "print(sorted(n for n in ('bootstrap', 'histogram', 'paired', 'scaling', 'overhead',"
        " 'adaptive') if 'perflab.stats.' + n in sys.modules))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["welch", "[]"]
