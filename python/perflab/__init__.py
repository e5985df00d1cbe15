"""perflab: performance experiments on real systems, with honest statistics."""


def __getattr__(name: str) -> str:
    """``__version__`` on first use (PEP 562): importlib.metadata costs ~25 ms at start-up."""
    if name != "__version__":
        raise AttributeError(f"module 'perflab' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("perflab")
    except PackageNotFoundError:  # running from a source tree without an install
        value = "0.0.0+src"
    globals()["__version__"] = value
    return value
