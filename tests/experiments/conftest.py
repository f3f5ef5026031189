import os

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A real in-process local Ray (2 CPUs, no dashboard) for the whole session; never attaches to
    a cluster named by RAY_ADDRESS."""
    ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")
    saved = os.environ.pop("RAY_ADDRESS", None)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()
        if saved is not None:
            os.environ["RAY_ADDRESS"] = saved
