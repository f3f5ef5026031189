"""One full Theorem 2 / Theorem 3 build with its checks, as a JSON-ready report.

Stages: compile the modified network (exhaustive P1-P4 check inside), check the value map
exactly over the extended grid, soften to softmax/ReLU, estimate the ``d_p`` decomposition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from expressivity.constructions.yun.compile import YunBuild, compile_modified
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import resolve_params
from expressivity.constructions.yun.soften import SoftenConfig, float64_limit, soften
from expressivity.targets import Target
from expressivity.constructions.yun.checks.dp import dp_decomposition
from expressivity.constructions.yun.size import DEFAULT_BUDGET
from expressivity.constructions.yun.checks.value import verify_value


@dataclass(frozen=True)
class BuildConfig:
    p: float = 2.0
    samples: int = 2000
    seed: int = 0
    budget: int = DEFAULT_BUDGET
    soften: SoftenConfig = field(default_factory=SoftenConfig)
    verify_value: bool = True


@dataclass
class BuildResult:
    build: YunBuild
    soft: object
    report: dict


def build_and_check(target: Target, params: YunParams, config: BuildConfig = BuildConfig(), progress=None) -> BuildResult:
    t0 = time.perf_counter()
    params = resolve_params(params)
    float64_limit(params)  # refuse before the (possibly long) exact build
    build = compile_modified(target, params, budget=config.budget, progress=progress)
    p = build.params
    value = verify_value(build) if config.verify_value else None
    margin = (p.t_l - p.delta / 2) - build.sigma * build.max_uA
    soft, srep = soften(p, build.network, build.network.metadata["stages"]["quantize"], margin, config.soften)
    dp = dp_decomposition(build, soft, p=config.p, samples=config.samples, seed=config.seed, lam=srep.lam)
    params_soft = soft.parameter_count()
    report = {
        "target": target.name, "n": p.n, "d": p.d, "delta": p.delta, "positional": p.positional,
        "theorem": 3 if p.positional else 2,
        "dp_error": dp.total.value, "dp_ci": list(dp.total.ci), "p": config.p, "samples": config.samples,
        "dp_decomposition": dp.as_dict(),
        "params": params_soft, "params_modified": build.network.parameter_count(),
        "lower_bound": build.size.lower_bound, "ratio_to_lower_bound": params_soft / build.size.lower_bound,
        "layers": build.network.metadata["stages"] | {"total": len(build.network.layers)},
        "lambda": srep.lam, "epsilon": srep.epsilon, "epsilon_post": srep.epsilon_post, "margins": srep.margins,
        "sigma": build.sigma, "contextual": build.lemmas.as_dict(),
        "value_check": None if value is None else value.as_dict(),
        "constants": {"c": p.c, "s": p.s, "t_l": p.t_l, "t_r": p.t_r, "out_value": p.out_value,
                      "M": build.network.metadata["M"]},
        "seed": config.seed, "seconds": round(time.perf_counter() - t0, 3),
    }
    return BuildResult(build, soft, report)


def save_outputs(result: BuildResult, directory: Path) -> list[Path]:
    from expressivity.export import save_network

    directory.mkdir(parents=True, exist_ok=True)
    paths = list(save_network(result.build.network, directory / "modified"))
    paths += list(save_network(result.soft, directory / "softened"))
    return paths
