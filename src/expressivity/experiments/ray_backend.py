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
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from expressivity.errors import ExpressivityError


def _import_ray():
    try:
        import ray
    except ModuleNotFoundError:
        raise ExpressivityError("the ray backend needs Ray: pip install 'expressivity[ray]'") from None
    return ray


def connect(address: str | None, workers: int | None):
    """Initialise Ray unless it already is; returns ``(ray, started_here)``."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray, False
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(include_dashboard=False, log_to_driver=True, configure_logging=True, logging_level="warning")
    try:
        if address:
            # Ship this process's expressivity package to the cluster, so every node runs the code
            # the driver runs (nodes need Python, torch and numpy of the same versions).
            import expressivity

            package = str(Path(expressivity.__file__).resolve().parent)
            ray.init(address=address, runtime_env={"py_modules": [package]}, **kwargs)
        else:
            ray.init(address="local", num_cpus=workers, **kwargs)
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
    return ray, True


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error (the remote exception), not Ray's header."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def run_ray(jobs: list[tuple[int, dict]], *, address: str | None = None, workers: int | None = None,
            threads: int = 1, device: str = "cpu") -> Iterator[tuple[str, int, object]]:
    """Submit every job as a Ray task; yield ``("start", i, None)`` for each, then ``("done", i,
    records)`` or ``("crashed", i, reason)`` as tasks finish. Closing the generator cancels the rest."""
    ray, started = connect(address, workers)
    from expressivity.experiments.worker import execute_pack

    try:
        gpus = 1 if device == "cuda" or (device == "auto" and ray.cluster_resources().get("GPU", 0) >= 1) else 0
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
