import os

import torch
from hypothesis import HealthCheck, settings

# CI runs on 2 cores with a deadline-free budget: keep example counts modest and deterministic.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
torch.set_num_threads(1)
