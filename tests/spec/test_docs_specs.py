"""The experiment-file blocks of the docs' running guide load as written: each ```toml
block of docs/running.md, completed where it is a fragment (a variant, a host table) with
the least an experiment needs around it, is valid — a key renamed in the code and not in
the page fails here (the page's exporter file is run by tests/hosts/test_labgrid.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from perflab.spec import parse_spec

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCKS = re.findall(r"```toml\n(.*?)```", (DOCS / "running.md").read_text(), re.DOTALL)


def _completed(block: str) -> str:
    """``block`` with what an experiment needs and it lacks; a host it names, given."""
    text = block
    if not re.search(r"^name = ", text, re.M) or "[[variant]]" in text.split("\n", 1)[0]:
        text = 'name = "docs"\n' + text
    hosts = set(re.findall(r'^on = "([^"]+)"', text, re.M))
    for host in sorted(hosts - set(re.findall(r"^\[hosts\.([^\].]+)\]", text, re.M))):
        text += f'\n[hosts.{host}]\nssh = "root@127.0.0.1:2222"\n'
    variants = re.findall(r'^\[\[variant\]\]\nname = "([^"]+)"', text, re.M)
    if not variants:
        text += '\n[[variant]]\nname = "a"\n'
        variants = ["a"]
    if len(variants) < 2:
        text += f'\n[[variant]]\nname = "{variants[0]}-2"\n'
    if not re.search(r"^baseline = ", text, re.M):
        text = f'baseline = "{variants[0]}"\n' + text
    if "[[phase]]" not in text:
        text += '\n[[phase]]\nname = "p"\ncommand = "true"\n'
    if "[[metric]]" not in text:
        text += '\n[[metric]]\nname = "wall_time"\nbetter = "lower"\n'
    return text.replace('name = "docs"\n', "", 1) if text.count('name = "docs"') > 1 else text


def test_the_guide_has_spec_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.split("\n", 1)[0][:40])
def test_a_spec_block_of_the_guide_is_valid(block, tmp_path):
    text = _completed(block)
    path = tmp_path / "docs.toml"
    path.write_text(text)
    try:
        if "{commit}" in text:  # a bisect's file: valid as the steps made from it
            from perflab.api.bisect_spec import read_spec

            read_spec(path, None)
        else:
            parse_spec(text, path)
    except Exception as e:  # the block as completed, for the one reading the failure
        pytest.fail(f"{e}\n--- the block, completed:\n{text}")
