"""The Ray backend: one Ray task per pack, results streamed back to the driver as they finish.

Ray is imported only here, and only when this backend is asked for (the ``[ray]`` extra).
Where Ray runs: an already initialised Ray in this process (tests), else the cluster at
``address`` or ``RAY_ADDRESS`` (``"auto"``: the cluster started on this machine by ``ray start
--head``), else a private local Ray with ``workers`` CPUs started for this sweep and stopped after.

Each task asks for ``threads`` CPUs (and one GPU with ``device="cuda"``) and trains its pack in
the sweep folder at the same path on its node: on one machine or a shared filesystem,
interrupted runs resume from their checkpoints; records always come back to the driver. On a
cluster the driver's ``expressivity`` package is shipped to the nodes (a Ray ``runtime_env``),
so they run the driver's code; they need its Python, torch and numpy.

A cluster address is tried with a plain TCP connection first (:func:`check_address`, a few
seconds), before any folder is made: Ray's own client retries an unreachable address for many
minutes. Ray's log lines stay off the terminal unless ``verbose``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Iterator

from expressivity.errors import ExpressivityError


def _import_ray():
    try:
        import ray
    except ModuleNotFoundError:
        raise ExpressivityError("the ray backend needs Ray: pip install 'expressivity[ray]'") from None
    return ray


CONNECT_TIMEOUT_S = 5.0  # a reachable head answers a TCP connection in milliseconds
# Joining a cluster takes a few seconds; something that accepts connections but is not a Ray head
# makes Ray's client wait and retry for many minutes. Start-up + check + join stays under 30 s.
JOIN_TIMEOUT_S = 8.0
START_HINT = "start one with 'ray start --head' and give --ray-address auto (or host:6379)"


def check_address(address: str | None, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Refuse, within ``timeout`` seconds, a Ray cluster address that nothing answers on.

    ``address`` (else ``RAY_ADDRESS``) is ``host:port``, ``ray://host:port`` or ``auto`` (the
    cluster started on this machine, found as Ray finds it); ``None`` means a private local Ray
    and needs no check. Returns the address to use; raises a one-line :class:`ExpressivityError`.
    """
    source = "--ray-address"
    if address is None:
        address = os.environ.get("RAY_ADDRESS") or None
        source = "RAY_ADDRESS"   # named as such in refusals: the user typed no --ray-address
    if address is None or address == "local":
        return address
    if not isinstance(address, str) or not address.strip():
        raise ExpressivityError(f"{source} {address!r} is empty; give host:port (e.g. 127.0.0.1:6379) or auto")
    target = address.strip()
    if target == "auto":
        target = _local_cluster_address()
        if target is None:
            raise ExpressivityError(f"{source} auto: no Ray cluster was started on this machine; {START_HINT}")
    host, sep, port = target.split("://", 1)[-1].rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        fix = "" if source == "--ray-address" else "; unset RAY_ADDRESS for a private local Ray"
        raise ExpressivityError(f"{source} {address!r} is not host:port with a port from 1 to 65535 "
                                f"(e.g. 127.0.0.1:6379), nor auto{fix}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__).lower()
        where = f"Ray at {address}" + (" (from RAY_ADDRESS)" if source == "RAY_ADDRESS" else "")
        raise ExpressivityError(f"cannot reach {where} ({reason} within {timeout:g} s); {START_HINT}") from None
    return address


def _local_cluster_address() -> str | None:
    """The address of the Ray cluster started on this machine (``ray start --head``), as Ray reads
    it, or ``None`` when there is none."""
    _import_ray()  # the install hint first, when Ray is missing
    try:
        from ray._private.services import canonicalize_bootstrap_address

        return canonicalize_bootstrap_address("auto")
    except Exception:  # Ray's private API: when it moves or finds nothing, say "no cluster"
        return None


def connect(address: str | None, workers: int | None, verbose: bool = False):
    """Initialise Ray unless it already is; returns ``(ray, started_here)``. Ray's log lines
    (its own and the tasks' output) reach the terminal only with ``verbose``."""
    ray = _import_ray()
    _route_driver_messages(verbose)
    if ray.is_initialized():
        return ray, False
    address = check_address(address)
    if address == "local":   # a private Ray, as with no address (not a cluster to join with a time limit)
        address = None
    kwargs = dict(include_dashboard=False, log_to_driver=verbose, configure_logging=True,
                  logging_level="info" if verbose else "error")
    try:
        with _ray_lines_hidden(not verbose):
            if address:
                # Ship this process's expressivity package to the cluster, so every node runs the code
                # the driver runs (nodes need Python, torch and numpy of the same versions).
                import expressivity

                package = str(Path(expressivity.__file__).resolve().parent)
                _within(JOIN_TIMEOUT_S, address, lambda: ray.init(address=address, runtime_env={"py_modules": [package]},
                                                                  **kwargs))
            else:
                ray.init(address="local", num_cpus=workers, **kwargs)
    except ExpressivityError:
        raise
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = ("; start one with 'ray start --head' and give --ray-address auto (or host:6379); a cluster with token "
                "auth (the default) needs RAY_AUTH_MODE=token here and the token in ~/.ray/auth_token") if address else ""
        raise ExpressivityError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {first}{hint}") from None
    except Exception as exc:  # ray.exceptions.AuthenticationError and kin
        if type(exc).__name__ == "AuthenticationError":
            raise ExpressivityError(f"Ray at {address} refused this client (token authentication): set "
                                    "RAY_AUTH_MODE=token and put the cluster's token in ~/.ray/auth_token "
                                    "(or RAY_AUTH_TOKEN)") from None
        raise
    except BaseException:
        # interrupted inside ray.init (Ctrl-C while a private Ray starts): its dashboard and runtime-env agents
        # outlived the command by a minute and more, since run_ray's shutdown was not reached yet (a fresh audit,
        # 2026-11-29); stop what was started here, then let the interruption through
        try:
            ray.shutdown()   # a no-op where nothing started; a cluster's client is only disconnected
        except Exception:   # a half-made Ray may not stop cleanly; the interruption is what to report
            pass
        raise
    return ray, True


_MESSAGES = {"verbose": False}


def _route_driver_messages(verbose: bool) -> None:
    """Keep Ray's driver messages off stdout: its error thread prints raylet lines ("A worker died or
    was killed ...") to ``sys.stdout`` even with ``log_to_driver=False``, which broke ``--json`` (the
    record of the pack says what happened). Without ``verbose`` they are dropped, with it sent to stderr."""
    _MESSAGES["verbose"] = verbose
    try:
        from ray._private import worker as ray_worker
    except ImportError:   # another Ray layout: nothing to route
        return
    original = getattr(ray_worker, "print_to_stdstream", None)
    if original is None or getattr(original, "_expressivity", False):
        return

    def routed(data, ignore_prefix):
        if _MESSAGES["verbose"]:
            original({**data, "is_err": True}, ignore_prefix)

    routed._expressivity = True
    ray_worker.print_to_stdstream = routed


def _within(seconds: float, address: str, join) -> None:
    """Run ``join()`` (``ray.init``), giving up after ``seconds``: Ray's client cannot be told to
    stop retrying, so it runs in a daemon thread that is left behind (the CLI exits right after)."""
    import threading

    outcome: dict = {}

    def target():
        try:
            join()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="ray-join", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _JoinAbandoned(f"Ray at {address} accepted a connection but did not answer as a Ray cluster within "
                                f"{seconds:g} s; check the address (the head's GCS port, 6379 by default)")
    if "error" in outcome:
        raise outcome["error"]


_ABANDONED_SCRATCH: list = []


class _JoinAbandoned(ExpressivityError):
    """Joining a cluster took too long; Ray's joining thread is still alive (and still writing), so
    the CLI exits without finalising the interpreter (``threads_left_behind``)."""

    threads_left_behind = True


class _ray_lines_hidden:
    """While active (``hide=True``), file descriptor 2 goes to a scratch file: Ray's C++ core writes
    its warnings (connection retries, slow starts) straight to it, past Python's logging; they are
    dropped (``--verbose`` keeps them on the terminal)."""

    def __init__(self, hide: bool):
        self.hide = hide

    def __enter__(self):
        if self.hide:
            import sys
            import tempfile

            sys.stderr.flush()
            self.scratch = tempfile.TemporaryFile()
            self.saved = os.dup(2)
            os.dup2(self.scratch.fileno(), 2)
        return self

    def __exit__(self, exc_type, exc, tb):
        import sys

        if not self.hide:
            return False
        if isinstance(exc, _JoinAbandoned) and _writes_to_fd2(sys.stderr):
            # The abandoned join keeps writing retries to descriptor 2 until the process exits:
            # leave 2 on the scratch file and give Python's stderr the terminal instead.
            sys.stderr.flush()
            _ABANDONED_SCRATCH.append(self.scratch)  # open while descriptor 2 points at it
            sys.stderr = os.fdopen(self.saved, "w", buffering=1, encoding=sys.stderr.encoding,
                                   errors=sys.stderr.errors)
            return False
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.scratch.close()
        return False


def _writes_to_fd2(stream) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a captured or replaced stderr (tests, notebooks)
        return False


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error (the remote exception), not Ray's header."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def run_ray(jobs: list[tuple[int, dict]], *, address: str | None = None, workers: int | None = None,
            threads: int = 1, device: str = "cpu", verbose: bool = False) -> Iterator[tuple[str, int, object]]:
    """Submit every job as a Ray task; yield ``("start", i, None)`` for each, then ``("done", i,
    records)`` or ``("crashed", i, reason)`` as tasks finish. Closing the generator cancels the rest."""
    ray, started = connect(address, workers, verbose)
    from expressivity.experiments.worker import execute_pack

    try:
        cluster_gpus = ray.cluster_resources().get("GPU", 0)
        if device == "cuda" and cluster_gpus < 1:   # every task would wait for a GPU forever
            raise ExpressivityError("--device cuda was asked for, but the Ray cluster has no GPU; use --device cpu "
                                    "or auto, or add a node with a GPU")
        gpus = 1 if device == "cuda" or (device == "auto" and cluster_gpus >= 1) else 0
        if device == "auto":
            device = "cuda" if gpus else "cpu"
        cpus = ray.cluster_resources().get("CPU", 0)
        if threads > cpus:
            raise ExpressivityError(f"each run asks for {threads} CPUs but the Ray cluster has {cpus:g}; "
                                    "lower --threads")
        task = ray.remote(num_cpus=threads, num_gpus=gpus, max_retries=0)(execute_pack)
        refs = {}
        for index, job in jobs:
            refs[task.remote({**job, "device": device, "threads": threads})] = index
            yield "start", index, None
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
                for ref in ready:
                    index = refs.pop(ref)
                    try:
                        records = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        yield "crashed", index, f"ray: the task failed ({_cause(exc)})"
                        continue
                    yield "done", index, records
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()
