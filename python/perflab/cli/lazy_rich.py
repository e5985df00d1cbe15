"""rich's Table and Text for the command modules, imported on first use.

Building the parser imports every command module; with these, that imports no rich at
all (rich.table alone costs ~30 ms), so `perflab --help` starts fast.
"""

from __future__ import annotations

from typing import Any


def Table(*args: Any, **kwargs: Any) -> Any:
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


def Text(*args: Any, **kwargs: Any) -> Any:
    from rich.text import Text as RichText

    return RichText(*args, **kwargs)
