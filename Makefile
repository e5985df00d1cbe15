# The two commands of the README. Both do all set-up first (scripts/setup).
.PHONY: quickstart test test-fast lint setup

# Tests run alone, before the others: the kernel builds (their compilers fault in pages by
# the million), the tests that count a phase's system-wide page faults (another
# worker's tests show in them) and the load generator's spin tests, which count its sleeps
# (a busy neighbour can keep the server off a CPU for longer than a spin).
ALONE = tests/hosts/test_kernel_builds.py tests/observe/test_monitors.py tests/observe/test_counters.py \
	tests/hosts/test_device_pool.py tests/workloads/test_load_spin.py

setup:
	@scripts/setup

# Main job: the quickstart experiment, ending with its verdict table and a report.
quickstart: setup
	@scripts/quickstart

# The whole test suite: Rust unit tests, the router's kernels built from source (alone: a
# kernel build's compilers fault in pages by the million, which the tests that count a
# phase's system-wide page faults would see), then pytest (real servers on loopback) in two
# processes (pytest-xdist), each test module whole in one of them: its servers and
# experiments are set up once (module fixtures), and no two tests of a module overlap.
test: setup lint
	cargo test --workspace --exclude perflab-py --release -q
	scripts/lab/build
	.venv/bin/python -m pytest -q $(ALONE)
	.venv/bin/python -m pytest -q -n 2 --dist loadscope $(ALONE:%=--ignore=%)

# The pure tests only (no servers, browser, whole experiments or long simulations): < 1 minute.
test-fast: setup
	.venv/bin/python -m pytest -q -m "not slow and not server and not browser"

# The linters CI enforces (part of `make test`): ruff (lint + format), mypy --strict over
# the package, cargo fmt and clippy, and the commit messages since the rule came in.
lint: setup
	scripts/check-commits
	.venv/bin/ruff check python tests benchmarks build_backend scripts/check-commits
	.venv/bin/ruff format --check python tests build_backend
	.venv/bin/mypy
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -q -- -D warnings
