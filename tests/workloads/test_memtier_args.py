"""memtier_benchmark command lines, pasted as they are, parse into the configuration they
mean: bare seconds for --test-time, --opt=value and --opt value, short options with and
without a space. The first two are the MGLRU memcached experiment's own (its populate
and measure steps), with its shell variables filled in."""

from __future__ import annotations

import argparse
import shlex

import pytest
from perflab.cli import load as load_cli
from perflab.errors import InputError

MGLRU_POPULATE = (
    "-s 127.0.0.1 -p 11211 -P memcache_binary -n allkeys -c 1 --ratio 1:0 --pipeline 8 "
    "--key-minimum=1 --key-maximum=1600000 --key-pattern=P:P -d 1000"
)
MGLRU_MEASURE = (
    "-s 127.0.0.1 -p 11211 -P memcache_binary --test-time 1200 -c 1 --ratio 0:1 "
    "--pipeline 8 --key-minimum=1 --key-maximum=1600000 --key-pattern=G:G --randomize "
    "--distinct-client-seed"
)


def parse(line: str):
    parser = argparse.ArgumentParser(prog="perflab")
    load_cli.register(parser.add_subparsers())
    return load_cli.config_from_args(parser.parse_args(["load", *shlex.split(line)]))


def test_the_mglru_populate_line():
    c = parse(MGLRU_POPULATE)
    assert (c.server, c.port, c.protocol) == ("127.0.0.1", 11211, "memcache_binary")
    assert c.requests == "allkeys" and c.clients == 1 and c.pipeline == 8
    assert c.ratio == "1:0" and c.key_pattern == "P:P"
    assert (c.key_min, c.key_max) == (1, 1_600_000) and c.data_size == 1000


def test_the_mglru_measure_line():
    c = parse(MGLRU_MEASURE)
    assert c.test_time == 1200.0 and c.requests is None
    assert c.ratio == "0:1" and c.key_pattern == "G:G"
    assert c.randomize and c.distinct_client_seed and c.clients == 1


@pytest.mark.parametrize(
    "line",
    [
        "--test-time 5",
        "--test-time=5",
        "--test-time 5s",
        "--test-time=5.0",
    ],
)
def test_test_time_in_every_form(line):
    assert parse(line).test_time == 5.0


def test_equals_and_attached_short_values_mean_the_same():
    spaced = parse("-s 127.0.0.1 -p 11211 -c 4 -t 2 -d 64 --ratio 1:10 --pipeline 4")
    joined = parse("-s127.0.0.1 -p11211 -c4 -t2 -d64 --ratio=1:10 --pipeline=4")
    assert spaced == joined
    assert (joined.clients, joined.threads, joined.data_size, joined.pipeline) == (4, 2, 64, 4)


def test_a_bad_value_is_one_line_naming_the_flag():
    with pytest.raises(InputError, match=r"^--test-time: bad duration 'soon'"):
        parse("--test-time soon")
