"""perflab: performance experiments on real systems, with honest statistics."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perflab")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+src"
