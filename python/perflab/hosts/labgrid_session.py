"""A short connection to a labgrid coordinator, through labgrid's own Python client
(`labgrid.remote.client.ClientSession`: the gRPC coordinator of labgrid ≥ 24).

perflab talks to the coordinator only around an experiment — to acquire a place, to mark
it with this process, to release it, to look at it for ``--dry-run`` — each time over a
session of its own, closed when the errand is done: nothing of gRPC runs while the runs
are measured, and perflab's own threads and signal handling stay as they are. Every
session runs on one event loop, this process's for labgrid (`_event_loop`), run only
while an errand runs: gRPC's asyncio layer binds itself to the first loop it runs on, and
a second loop would meet callbacks for a closed one. An acquisition outlives the session that made it (the coordinator keeps
it until a release), which is why a perflab killed with SIGKILL leaves its place held.

Every call is bounded (`ERRAND_TIMEOUT_S`); any failure is a `CoordinatorError` whose
message is one line. labgrid is an optional dependency (``pip install 'perflab[lab]'``),
imported only when a spec names a place.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

# asyncio (80 ms to import) and labgrid come when a spec names a place, never before.

#: The coordinator's port when an address gives none (labgrid's default).
DEFAULT_PORT = 20408
#: Seconds one errand (connect, acquire, release, a look) may take before it is abandoned.
ERRAND_TIMEOUT_S = 30.0
#: Seconds a TCP connection to the coordinator may take (checked before gRPC starts: a
#: coordinator that is not there is then one clear line, not a gRPC log message).
CONNECT_TIMEOUT_S = 5.0

T = TypeVar("T")

#: The event loop every session of this process runs on (made at the first).
_LOOP: asyncio.AbstractEventLoop | None = None


def _event_loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        import asyncio

        _LOOP = asyncio.new_event_loop()
    return _LOOP


class CoordinatorError(Exception):
    """The coordinator cannot be reached or refused a request (one line). ``refused``:
    the coordinator's own words when it refused (a place already acquired, reserved for
    another), else None (it could not be reached, or did not answer)."""

    def __init__(self, message: str, refused: str | None = None) -> None:
        super().__init__(message)
        self.refused = refused


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of ``HOST[:PORT]`` (``[::1]:PORT`` for IPv6); ValueError if malformed."""
    text = address.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") <= 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = "", ""
    if not host or (port_text and not port_text.isdigit()):
        raise ValueError(
            f"bad labgrid coordinator address {address!r}: expected HOST:PORT ([::1]:PORT for IPv6)"
        )
    port = int(port_text) if port_text else DEFAULT_PORT
    if not 0 < port < 65536:
        raise ValueError(f"bad port {port} in labgrid coordinator address {address!r}")
    return host, port


@contextlib.contextmanager
def _labgrid_logs_quiet() -> Iterator[None]:
    """labgrid's client logs through the root logger (``ERROR:root:coordinator is
    unavailable…`` on stderr, before perflab's own one-line error says the same): while
    it runs, a root logger nobody configured gets a handler that drops the records (an
    application that configured logging keeps what it chose)."""
    root = logging.getLogger()
    quiet = logging.NullHandler() if not root.handlers else None
    if quiet is not None:
        root.addHandler(quiet)
    try:
        yield
    finally:
        if quiet is not None:
            root.removeHandler(quiet)


def _import_client() -> Any:
    """labgrid's client module (it replaces ``sys.excepthook`` on import: put back)."""
    hook = sys.excepthook
    try:
        from labgrid.remote import client
    except ImportError as e:
        raise CoordinatorError(
            f"labgrid places need the labgrid library ({e}): pip install 'perflab[lab]'"
        ) from None
    finally:
        sys.excepthook = hook
    return client


class CoordinatorSession:
    """One connection to the coordinator at ``address`` (``HOST[:PORT]``); `close()` it.

    ``who``: this client as the coordinator names holders, ``HOST/USER`` (labgrid's
    ``LG_HOSTNAME`` and ``LG_USERNAME``, else this machine's name and the login name)."""

    def __init__(self, address: str) -> None:
        host, port = split_address(address)
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as e:
            raise CoordinatorError(
                f"labgrid coordinator {self.address} does not answer: {e.strerror or e}"
            ) from None
        self._client = _import_client()
        self._loop = _event_loop()
        self._session: Any = None
        self._session = self._run(self._start())
        self.who = f"{self._session.gethostname()}/{self._session.getuser()}"

    async def _start(self) -> Any:
        import asyncio

        session = self._client.ClientSession(self.address, asyncio.get_running_loop())
        await session.start()
        return session

    def _run(self, step: Awaitable[T], timeout: float = ERRAND_TIMEOUT_S) -> T:
        """Runs ``step`` on this session's loop; CoordinatorError when it fails."""
        import asyncio

        import grpc

        try:
            with _labgrid_logs_quiet():
                return self._loop.run_until_complete(asyncio.wait_for(step, timeout))
        except TimeoutError:
            raise CoordinatorError(
                f"labgrid coordinator {self.address} did not answer within {timeout:g} s"
            ) from None
        except grpc.aio.AioRpcError as e:
            refused = e.code() in (
                grpc.StatusCode.FAILED_PRECONDITION,
                grpc.StatusCode.PERMISSION_DENIED,
                grpc.StatusCode.INVALID_ARGUMENT,
            )
            details = str(e.details())
            raise CoordinatorError(
                f"labgrid coordinator {self.address}: {details}", details if refused else None
            ) from None
        except self._client.Error as e:
            text = " ".join(str(a) for a in e.args) or type(e).__name__
            raise CoordinatorError(f"labgrid coordinator {self.address}: {text}") from None

    def place(self, name: str) -> Any:
        """The place ``name`` as the coordinator last said (CoordinatorError if none)."""
        self._check_alive()
        place = self._session.places.get(name)
        if place is None:
            known = ", ".join(sorted(self._session.places)) or "none"
            raise CoordinatorError(
                f"no labgrid place '{name}' on the coordinator {self.address} (places: {known})"
            )
        return place

    def place_names(self) -> list[str]:
        """Every place the coordinator has, sorted."""
        self._check_alive()
        return sorted(self._session.places)

    def resources(self, place: Any) -> list[tuple[str, str, Any]]:
        """(``exporter/group/cls/name``, name in the place, labgrid's ``ResourceEntry``) of
        every resource the place holds (acquired) or would hold (not acquired)."""
        out = []
        paths = list(place.acquired_resources) if place.acquired else None
        for exporter, groups in sorted(self._session.resources.items()):
            for group, entries in sorted(groups.items()):
                for name, entry in sorted(entries.items()):
                    if "cls" not in entry.data:
                        continue  # deleted
                    path = (exporter, group, entry.cls, name)
                    match = place.getmatch(path)
                    if match is None or (paths is not None and list(path) not in map(list, paths)):
                        continue
                    out.append(("/".join(path), match.rename or name, entry))
        return out

    def acquire(self, name: str) -> str | None:
        """Asks for the place; None when it is now held here, else why not (held by
        someone, reserved for someone, its resources held by another place)."""
        pb2 = self._client.labgrid_coordinator_pb2
        request = pb2.AcquirePlaceRequest(placename=name)
        try:
            self._run(self._call("AcquirePlace", request))
        except CoordinatorError as e:
            if e.refused is None:
                raise
            return e.refused
        return None

    def allow(self, name: str, entry: str) -> None:
        """Adds ``entry`` to the place's ``allowed`` list (cleared by any release)."""
        pb2 = self._client.labgrid_coordinator_pb2
        self._run(self._call("AllowPlace", pb2.AllowPlaceRequest(placename=name, user=entry)))

    def release(self, name: str, holder: str) -> None:
        """Releases the place if ``holder`` (``HOST/USER``) holds it (never another's)."""
        pb2 = self._client.labgrid_coordinator_pb2
        request = pb2.ReleasePlaceRequest(placename=name, fromuser=holder)
        self._run(self._call("ReleasePlace", request))

    async def _call(self, method: str, request: Any) -> None:
        await getattr(self._session.stub, method)(request)
        await self._session.sync_with_coordinator()

    def sync(self) -> None:
        """Waits until every update the coordinator sent so far has arrived."""
        self._check_alive()
        self._run(self._session.sync_with_coordinator())

    def wait(self, seconds: float) -> None:
        """Lets the coordinator's updates arrive for ``seconds``."""
        import asyncio

        self._check_alive()
        self._run(asyncio.sleep(seconds), timeout=seconds + ERRAND_TIMEOUT_S)

    def _check_alive(self) -> None:
        if self._session.stopping.is_set():
            raise CoordinatorError(f"lost the labgrid coordinator {self.address}")

    def close(self) -> None:
        """Ends the session and its channel (the loop stays, for the next session)."""
        with contextlib.suppress(CoordinatorError):
            self._run(self._end(), timeout=5.0)

    async def _end(self) -> None:
        await self._session.stop()
        await self._session.close()
