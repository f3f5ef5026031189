"""A small Theorem 2 and Theorem 3 build for ``expressivity demo`` (a few seconds on 2 CPUs)."""

from __future__ import annotations

from pathlib import Path

from expressivity.constructions.yun.build import BuildConfig, build_and_check
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.figures import contextual_values, dp_vs_delta
from expressivity.targets import get_target


def demo_section(out_dir: Path) -> dict:
    """Theorem 2 (smooth-rank, n=2, d=1, delta=1/2..1/8) and Theorem 3 (prefix-mean, n=2, d=1,
    delta=1/4): exact P1-P4 and value-map checks, softening, d_2 error; figures under ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = BuildConfig(samples=1000, seed=0)
    thm2 = [build_and_check(get_target("smooth-rank"), YunParams(2, 1, N), config) for N in (2, 4, 8)]
    thm3 = build_and_check(get_target("prefix-mean"), YunParams(2, 1, 4, positional=True), config)
    figs = [dp_vs_delta([r.report for r in thm2], out_dir / "yun_dp_vs_delta.png"),
            contextual_values(thm2[-1].build, out_dir / "yun_contextual_values.png")]

    def brief(r) -> dict:
        rep = r.report
        lemmas = rep.check("Lemma 4.2 P1-P4 on the extended grid")
        total = rep.error("d_p(f, g)")
        return {**{k: rep.constants[k] for k in ("target", "n", "d", "delta", "lambda", "epsilon")},
                "construction": rep.construction, "dp_error": total.value, "dp_ci": list(total.ci95),
                "params": rep.size.parameters, "ratio_to_lower_bound": rep.size.ratio,
                "layers": rep.size.extra["layers_by_stage"], "ok": rep.ok,
                "failed_checks": [c.property for c in rep.checks if not c.passed],
                "grid_points": lemmas.points, "arithmetic": lemmas.arithmetic}

    return {"theorem2": [brief(r) for r in thm2], "theorem3": brief(thm3), "figures": [str(f) for f in figs],
            "ok": all(r.report.ok for r in (*thm2, thm3))}
