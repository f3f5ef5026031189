"""The papers' language-model experiments, in small, on the CPython standard library
(:mod:`expressivity.tasks.corpus`), byte by byte:

* ``yun-hybrids`` (Yun et al. 2020 §5, Figure 1 and Table 1): an ``L``-layer masked model whose
  first ``k`` attention layers are separable convolutions, ``k = 0..L`` (``k = L``: convolution
  only), and a bilinear-projection-only model;
* ``wang-e-depth`` (Wang & E 2024, Table 2): causal models that trade heads for layers at matched
  parameter counts (fixed head width, so heads cost parameters);
* ``wang-e-dp`` (Wang & E 2024, Table 7): causal models with and without the dot product (the same
  stack, DP-free heads keep only the T5 position bias).

**Equal training compute.** The configurations a claim compares train with the same training
FLOPs: a reference model (all attention; the deepest model of a parameter budget; the model with
the dot product) trains ``Scale.steps`` steps, and every other model ``steps x reference FLOPs per
token / its FLOPs per token`` steps of the same batch (:func:`flops_per_token`, the usual
forward-pass count; training is about three times it). So a cheaper model sees more bytes; the
tables report steps, training bytes, training FLOPs, parameter counts and FLOPs per token.

The learning rate is selected per configuration and seed on the validation files (``min
val_loss``, the engine's selection); the verdicts use the test files, in bits per byte (mean over
seeds with its 95% Student-t interval), and the tables give both. Each table row also counts the
seeds whose selected learning rate is the smallest or largest of the grid (``lr_at_grid_edge``);
any such row adds a warning line to the claim's notes, since the grid may then not bracket the
optimum. The corpus facts (Python version, file-list and content hashes, bytes) go into every run
configuration (so every run record) and into each claim's ``verdict.json``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from expressivity.experiments.claims import Claim, ClaimContext, ClaimResult, register


def compare(a, b):  # temporary
    return 'reproduced' if a[2] < b[1] else 'refuted' if b[2] < a[1] else 'not reproduced'


SELECT = {"train.lr": "min val_loss"}


@dataclass(frozen=True)
class Scale:
    """The size of one claim's runs. Every configuration trains ``steps x batch_size x length``
    tokens; held-out losses are measured on ``eval_size`` windows of the validation and test files
    (the same windows for every run). ``include`` slices the corpus (``""``: all of it)."""

    steps: int
    batch_size: int
    length: int
    d_model: int
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    eval_size: int = 512
    include: str = ""

    @property
    def tokens(self) -> int:
        return self.steps * self.batch_size * self.length

    def train(self, steps: int | None = None) -> dict:
        steps = self.steps if steps is None else steps
        return {"steps": steps, "batch_size": self.batch_size, "eval_every": steps, "eval_size": self.eval_size,
                "log_every": max(1, steps // 20), "checkpoint_every": steps}

    def steps_for(self, config, reference) -> int:
        """Steps giving ``config`` the training FLOPs of ``reference`` trained :attr:`steps` steps."""
        return max(1, round(self.steps * flops_per_token(reference.model, self.length)
                            / flops_per_token(config.model, self.length)))

    def task_args(self) -> dict:
        return {"length": self.length, "include": self.include}


# quick runs are short, so their learning rates are high; one grid for all three claims, wide enough to
# bracket each claim's selections (the tables count the seeds whose choice fell on an edge); quick uses
# three seeds, full five
QUICK_LRS, FULL_LRS = (3e-3, 1e-2, 3e-2, 1e-1), (1e-3, 3e-3, 1e-2)
QUICK_SEEDS, FULL_SEEDS = (0, 1, 2), (0, 1, 2, 3, 4)


# The two sizes every claim uses; ``steps`` is set per claim (the reference model's steps).
QUICK = {"batch_size": 16, "length": 64, "d_model": 64, "lrs": QUICK_LRS, "seeds": QUICK_SEEDS, "eval_size": 256}
FULL = {"batch_size": 64, "length": 128, "d_model": 128, "lrs": FULL_LRS, "seeds": FULL_SEEDS, "eval_size": 1024}


def describe(scale: Scale) -> str:
    """One line: the size of a claim's runs (the criteria quote it, so they name what runs)."""
    return (f"d = {scale.d_model}, {scale.length}-byte windows, the reference model trained {scale.steps} steps of "
            f"{scale.batch_size} windows ({scale.tokens / 1e6:.3g}M bytes), learning rates "
            f"{', '.join(f'{lr:g}' for lr in scale.lrs)}, {len(scale.seeds)} seeds, {scale.eval_size} held-out windows")


def _grid(base, scale: Scale, reference=None) -> list:
    """``base`` at every learning rate and seed, trained for the compute of ``reference`` (default: itself)."""
    steps = scale.steps_for(base, reference or base)
    base = base.with_changes(train=scale.train(steps))
    return [base.with_changes(seed=s, train={"lr": lr}) for lr in scale.lrs for s in scale.seeds]


# ---- sizes: parameters and FLOPs --------------------------------------------------------------------


def non_embedding_params(cfg) -> int:
    """Parameters outside the token embedding, the absolute position table and the readout."""
    import torch

    from expressivity.nn.model import Model

    with torch.device("meta"):
        model = Model(cfg)
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith(("embed.", "ape.", "readout.")))


def flops_per_token(cfg, n: int) -> int:
    """Forward multiply-adds x 2 per token for sequences of ``n`` tokens (training: about 3x).

    Per layer: attention ``2 d (3 H m) + 2 H m d`` for the projections and ``4 H m c`` for scores and
    values; DP-free ``2 d H m + 2 H m d + 2 H m c``; bilinear ``2 c d + 2 d^2``; separable convolution
    ``2 k d + 2 d^2``; feed-forward ``4 d w``; then the readout ``2 d d_out``. ``c`` is the keys a
    query sees on average: ``(n + 1) / 2`` causal, ``n`` bidirectional. Position biases, norms,
    activations and the softmax are left out (lower order).
    """
    d, hm, w = cfg.d_model, cfg.heads * cfg.head_dim, cfg.ffn_width
    c = (n + 1) / 2 if cfg.causal else n
    per = {"attention": 2 * d * 3 * hm + 2 * hm * d + 4 * hm * c, "dpfree": 4 * d * hm + 2 * hm * c,
           "bilinear": 2 * c * d + 2 * d * d, "sepconv": 2 * cfg.conv_kernel * d + 2 * d * d, "none": 0}
    total = sum(per[m] for m in cfg.layer_mixers()) + cfg.layers * 4 * d * w + 2 * d * cfg.d_out
    return int(round(total))


# ---- results ---------------------------------------------------------------------------------------


@dataclass
class Summary:
    """One configuration over its seeds (after learning-rate selection)."""

    test: tuple[float, float, float]  # mean bits per byte on the test files, 95% interval
    val: float
    accuracy: float
    seeds: int
    failed: int
    lrs: list
    config: object  # a RunConfig of the group (seed 0's)


def _interval(values: list[float]) -> tuple[float, float, float]:
    from expressivity.verify.stats import t_interval

    if len(values) < 2:  # no interval from one seed: never decisive
        v = values[0] if values else math.nan
        return (v, -math.inf, math.inf)
    return t_interval(values)


def summaries(folder, label) -> dict[str, Summary]:
    """``{label(config dict): Summary}`` of a sweep folder, learning rates selected on validation."""
    from expressivity.experiments.store import read_records
    from expressivity.experiments.table import select_runs
    from expressivity.training import RunConfig

    chosen = select_runs(read_records(folder), {"train.lr": ("min", "val_loss")})
    groups: dict[str, list] = {}
    for record, _, ok in chosen:
        groups.setdefault(label(record["config"]), []).append((record, ok))
    out = {}
    for key, members in groups.items():
        rows, failed, lrs = [], 0, []
        for record, ok in members:
            row = (record.get("lengths") or {}).get(str(record["config"]["task"]["args"]["length"]))
            if ok == 0 or record.get("status") == "failed" or not row or row.get("test_loss") is None:
                failed += 1
                continue
            rows.append(row)
            lrs.append(record["config"]["train"]["lr"])
        config = RunConfig.from_dict(members[0][0]["config"])
        out[key] = Summary(_interval([r["test_loss"] for r in rows]),
                           statistics.fmean(r["val_loss"] for r in rows) if rows else math.nan,
                           statistics.fmean(r["test_metric"] for r in rows) if rows else math.nan,
                           len(rows), failed, sorted(lrs), config)
    return out


def _row(label: str, s: Summary, scale: Scale, **extra) -> dict:
    cfg, steps = s.config.model, s.config.train.steps
    fpt = flops_per_token(cfg, scale.length)
    tokens = steps * scale.batch_size * scale.length
    return {"config": label, **extra, "params": _params(cfg), "non_embedding_params": non_embedding_params(cfg),
            "fwd_flops_per_token": fpt, "steps": steps, "train_bytes": tokens, "train_flops": 3 * fpt * tokens,
            "test_bits_per_byte": s.test[0],
            "ci_low": s.test[1], "ci_high": s.test[2], "val_bits_per_byte": s.val, "test_accuracy": s.accuracy,
            "seeds": s.seeds, "failed": s.failed, "selected_lrs": " ".join(f"{lr:g}" for lr in s.lrs),
            "lr_grid": " ".join(f"{lr:g}" for lr in scale.lrs), "lr_at_grid_edge": at_grid_edge(s.lrs, scale.lrs)}


def at_grid_edge(lrs, grid) -> int:
    """How many of the selected learning rates ``lrs`` are the smallest or largest of ``grid``."""
    lo, hi = min(grid), max(grid)
    return sum(1 for lr in lrs if math.isclose(lr, lo, rel_tol=1e-9) or math.isclose(lr, hi, rel_tol=1e-9))


def edge_warnings(rows: list[dict]) -> list[str]:
    """One warning per table row whose selection fell on an edge of the learning-rate grid for some seed."""
    return [f"{r['config']}: selected learning rate at the grid edge for {r['lr_at_grid_edge']} of {r['seeds']} "
            "seeds: the grid may not bracket the optimum" for r in rows if r.get("lr_at_grid_edge")]


def _notes(notes: str, rows: list[dict]) -> str:
    """``notes`` with the grid-edge warnings of ``rows`` appended, one a line."""
    return "\n".join([notes, *(f"warning: {w}" for w in edge_warnings(rows))])


def _params(cfg) -> int:
    from expressivity.training.budget import parameter_count

    return parameter_count(cfg)


def _corpus_facts(scale: Scale) -> dict:
    from expressivity.tasks.corpus import load_corpus

    return load_corpus("", scale.include).facts()


def _fmt(s: Summary) -> str:
    return f"{s.test[0]:.3f} [{s.test[1]:.3f}, {s.test[2]:.3f}]"


def _errorbar_figure(path, series: dict, xlabel: str, title: str, xticks=None, hlines: dict | None = None):
    """``series``: label -> ``(x, [Summary])``; points with 95% error bars, bits per byte on the y axis."""
    from expressivity.figures import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (xs, sums) in series.items():
        y = [s.test[0] for s in sums]
        err = [[max(0.0, s.test[0] - s.test[1]) if math.isfinite(s.test[1]) else 0.0 for s in sums],
               [max(0.0, s.test[2] - s.test[0]) if math.isfinite(s.test[2]) else 0.0 for s in sums]]
        ax.errorbar(xs, y, yerr=err, marker="o", capsize=3, label=label)
    for label, s in (hlines or {}).items():
        line = ax.axhline(s.test[0], ls="--", lw=0.9, label=label, color="gray")
        if math.isfinite(s.test[1]) and math.isfinite(s.test[2]):
            ax.axhspan(s.test[1], s.test[2], color=line.get_color(), alpha=0.15)
    if xticks is not None:
        ax.set_xticks(xticks)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test bits per byte (mean, 95% CI)")
    from expressivity.figures import finish

    return finish(fig, ax, path, title)


def _combine(parts: dict[str, str]) -> str:
    """All parts reproduced -> reproduced; any refuted -> refuted; else not reproduced."""
    values = set(parts.values())
    if values == {"reproduced"}:
        return "reproduced"
    return "refuted" if "refuted" in values else "not reproduced"


# ---- (a) Yun et al. §5: hybrids of separable convolutions and attention ----------------------------

YUN_SCALES = {True: (Scale(steps=240, **QUICK), 3), False: (Scale(steps=4000, **FULL), 6)}
CONV_KERNEL = 7


def yun_configs(scale: Scale, layers: int) -> list:
    """Masked models: the first ``k`` of ``layers`` attention layers as separable convolutions, ``k =
    0..layers``, and a bilinear-only stack; 4 heads, ``ffn_width = 4 d``, kernel 7; each trained with
    the FLOPs of the all-attention model."""
    from expressivity.training import RunConfig

    stacks = [("sepconv",) * k + ("attention",) * (layers - k) for k in range(layers + 1)] + [("bilinear",) * layers]
    bases = [RunConfig.for_task("lm-masked", scale.task_args(), model={
        "mixer": mixers, "layers": layers, "heads": 4, "d_model": scale.d_model, "ffn_width": 4 * scale.d_model,
        "conv_kernel": CONV_KERNEL}, train=scale.train()) for mixers in stacks]
    return [c for base in bases for c in _grid(base, scale, reference=bases[0])]  # the compute of all attention


def yun_label(config: dict) -> str:
    mixers = config["model"]["mixer"]
    mixers = [mixers] * config["model"]["layers"] if isinstance(mixers, str) else list(mixers)
    if all(m == "bilinear" for m in mixers):
        return "bilinear"
    return f"k={sum(1 for m in mixers if m == 'sepconv')}"


def yun_verdict(k: dict[int, tuple], bilinear: tuple) -> tuple[str, dict, int]:
    """``(verdict, parts, best hybrid k)`` from ``k -> (mean, low, high)`` (k = 0..L) and the bilinear
    stack's interval, as :data:`YUN_CRITERION` says."""
    L = max(k)
    best = min((j for j in (1, 2) if j <= L), key=lambda j: k[j][0])
    parts = {
        "hybrid_improves": compare(k[best], k[0]),
        "more_hurts": _combine({str(j): compare(k[best], k[j]) for j in range(3, L + 1)}) if L >= 3 else "not reproduced",
        "conv_only_weaker": compare(k[0], k[L]),
        "bilinear_only_weaker": compare(k[0], bilinear),
    }
    reversed_claim = all(compare(k[0], k[j]) == "reproduced" for j in (1, 2) if j <= L)
    verdict = "reproduced" if set(parts.values()) == {"reproduced"} else "refuted" if reversed_claim else "not reproduced"
    return verdict, parts, best


def yun_hybrids(ctx: ClaimContext, scale: Scale | None = None, layers: int | None = None) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    default_scale, default_layers = YUN_SCALES[ctx.quick]
    scale, L = scale or default_scale, layers or default_layers
    folder, _ = ctx.run_sweep(Sweep(tuple(yun_configs(scale, L)), SELECT, "yun-hybrids"))
    s = summaries(folder, yun_label)
    k = {j: s[f"k={j}"] for j in range(L + 1)}
    verdict, parts, best = yun_verdict({j: v.test for j, v in k.items()}, s["bilinear"].test)
    rows = [_row(f"k={j}" + (" (conv only)" if j == L else " (all attention)" if j == 0 else ""), k[j], scale,
                 conv_layers=j) for j in range(L + 1)]
    rows.append(_row("bilinear only", s["bilinear"], scale, conv_layers=None))
    fig = _errorbar_figure(ctx.out / "figure.png", {"first k layers separable conv": (list(range(L + 1)), [k[j] for j in range(L + 1)])},
                           "k (attention layers replaced by separable convolutions, from the input)",
                           f"lm-masked, {L} layers, d={scale.d_model}, the training FLOPs of all attention "
                           f"\n(Yun et al. Fig. 1 in small)", xticks=list(range(L + 1)),
                           hlines={"bilinear only": s["bilinear"]})
    reason = (f"test bits/byte, all attention {_fmt(k[0])}; k=1 {_fmt(k[1])}; k=2 {_fmt(k[2])}; conv only (k={L}) "
              f"{_fmt(k[L])}; bilinear only {_fmt(s['bilinear'])}. Parts: a hybrid (k={best}) beats all attention: "
              f"{parts['hybrid_improves']}; more convolutions hurt (k>=3 above k={best}): {parts['more_hurts']}; "
              f"conv-only weaker than attention: {parts['conv_only_weaker']}; bilinear-only weaker: "
              f"{parts['bilinear_only_weaker']}")
    numbers = {"parts": parts, "best_hybrid_k": best, "test_bits_per_byte": {key: list(v.test) for key, v in s.items()},
               "corpus": _corpus_facts(scale), "scale": {**scale.__dict__, "layers": L, "tokens": scale.tokens}}
    numbers["lr_at_grid_edge"] = {r["config"]: [r["lr_at_grid_edge"], r["seeds"]] for r in rows}
    return ClaimResult(verdict, reason, rows, fig, numbers, _notes(_YUN_NOTES, rows))


_YUN_NOTES = ("masked-LM test loss stands in for the paper's fine-tuned SQuAD/MNLI scores; per-channel filters "
              "(kernel 7) rather than Wu et al.'s filter reuse; every model has the all-attention model's training "
              "FLOPs, so the cheaper convolution and bilinear stacks train more steps (see steps, train_bytes)")

YUN_CRITERION = (
    "Masked byte-level LM (BERT-style 15% masking) on the CPython standard library: an L-layer pre-LN model, 4 "
    "heads, FFN width 4d, T5 position bias in attention layers, with the first k layers' attention replaced by a "
    "depth-wise separable convolution (kernel 7), k = 0..L, plus a bilinear-projection-only stack. Every model "
    "trains with the training FLOPs of the all-attention model. Learning rate selected per configuration and seed "
    "on the validation files; test-file bits per byte, mean over seeds with 95% t intervals. "
    f"Quick: L = {YUN_SCALES[True][1]}, {describe(YUN_SCALES[True][0])}. "
    f"Full: L = {YUN_SCALES[False][1]}, {describe(YUN_SCALES[False][0])}. "
    "Reproduced if all four hold with disjoint intervals: (1) the better of k = 1 and k = 2 is below k = 0 (all "
    "attention); (2) every k >= 3 is above that better hybrid; (3) convolution only (k = L) is above k = 0; "
    "(4) bilinear only is above k = 0. Refuted if k = 0 is below both k = 1 and k = 2 with disjoint intervals (the "
    "hybrid improvement reversed); otherwise not reproduced.")

register(Claim(
    "yun-hybrids", "Replacing the first one or two attention layers by convolutions helps; more hurts (Figure 1)",
    "Yun et al. 2020, §5 and Figure 1 (Table 1 for bilinear/convolution only); spec yun_2020.md §8",
    YUN_CRITERION, yun_hybrids, "under 10 CPU-minutes (measured: see the README)",
    f"L = {YUN_SCALES[False][1]}, {describe(YUN_SCALES[False][0])}; sized for a GPU"))


# ---- (b) Wang & E Table 2: depth versus heads at matched parameters ---------------------------------

DEPTH_SCALES = {True: (Scale(steps=200, **QUICK), (2, 4)), False: (Scale(steps=4000, **FULL), (2, 4, 8))}
BASE_HEADS = 2


def head_width(scale: Scale) -> int:
    """Heads of a fixed width ``d / 4`` (so a head costs parameters)."""
    return max(1, scale.d_model // 4)


def _depth_model(scale: Scale, layers: int, heads: int) -> dict:
    return {"layers": layers, "heads": heads, "d_model": scale.d_model, "d_head": head_width(scale),
            "ffn_width": 2 * scale.d_model}


def depth_config(scale: Scale, layers: int, heads: int):
    """The causal model of ``layers`` layers and ``heads`` heads of width ``d / 4`` (seed 0, no learning rate set)."""
    from expressivity.training import RunConfig

    return RunConfig.for_task("lm-causal", scale.task_args(), model=_depth_model(scale, layers, heads),
                              train=scale.train())


def matched_heads(scale: Scale, layers: int, target: int) -> int:
    """The head count at ``layers`` whose non-embedding parameters come closest to ``target``."""
    best, h = None, 1
    while True:
        p = non_embedding_params(depth_config(scale, layers, h).model)
        if best is None or abs(p - target) < abs(best[1] - target):
            best = (h, p)
        if p > target or h >= 4096:
            return best[0]
        h += 1


def depth_pairs(scale: Scale, budgets: tuple[int, ...]) -> dict[int, list[tuple[int, int]]]:
    """``{budget: [(layers, heads), ...]}``: budget ``B`` is ``B`` layers of ``BASE_HEADS`` heads; the
    shallower entries halve the layers (down to 1) and take the heads that match its non-embedding
    parameters."""
    out = {}
    for B in budgets:
        target = non_embedding_params(depth_config(scale, B, BASE_HEADS).model)
        pairs, layers = [], B
        while layers >= 1:
            pairs.append((layers, BASE_HEADS if layers == B else matched_heads(scale, layers, target)))
            layers //= 2
        out[B] = pairs
    return out


def depth_configs(scale: Scale, budgets: tuple[int, ...]) -> list:
    """Every pair of every budget, trained with the FLOPs of its budget's deepest model."""
    seen, out = set(), []
    for pairs in depth_pairs(scale, budgets).values():
        reference = depth_config(scale, *pairs[0])
        for layers, heads in pairs:
            if (layers, heads) not in seen:
                seen.add((layers, heads))
                out += _grid(depth_config(scale, layers, heads), scale, reference)
    return out


def depth_label(config: dict) -> str:
    return f"L={config['model']['layers']},H={config['model']['heads']}"


def wang_e_depth(ctx: ClaimContext, scale: Scale | None = None, budgets: tuple[int, ...] | None = None) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    default_scale, default_budgets = DEPTH_SCALES[ctx.quick]
    scale, budgets = scale or default_scale, budgets or default_budgets
    pairs = depth_pairs(scale, budgets)
    folder, _ = ctx.run_sweep(Sweep(tuple(depth_configs(scale, budgets)), SELECT, "wang-e-depth"))
    s = summaries(folder, depth_label)
    parts, rows, series = {}, [], {}
    for B, members in pairs.items():
        sums = [s[f"L={L},H={H}"] for L, H in members]
        deep, shallow = sums[0], sums[-1]
        parts[f"budget {B}"] = compare(deep.test, shallow.test)
        for (L, H), v in zip(members, sums):
            rows.append(_row(f"L={L},H={H}", v, scale, budget=f"{B} layers x {BASE_HEADS} heads"))
        series[f"~{rows[-len(members)]['non_embedding_params'] / 1e3:.0f}k non-embedding params"] = (
            [L for L, _ in members], sums)
    verdict = _combine(parts)
    fig = _errorbar_figure(ctx.out / "figure.png", series, "layers (heads chosen to match parameters)",
                           f"lm-causal, d={scale.d_model}, head width {head_width(scale)}, equal training FLOPs per "
                           "budget\n(Wang & E Table 2 in small)")
    reason = "; ".join(
        f"budget {B}: " + ", ".join(f"L={L},H={H} {_fmt(s[f'L={L},H={H}'])}" for L, H in members) + f" -> {parts[f'budget {B}']}"
        for B, members in pairs.items())
    numbers = {"parts": parts, "pairs": {str(B): m for B, m in pairs.items()},
               "test_bits_per_byte": {key: list(v.test) for key, v in s.items()},
               "corpus": _corpus_facts(scale), "scale": {**scale.__dict__, "budgets": list(budgets), "tokens": scale.tokens}}
    numbers["lr_at_grid_edge"] = {r["config"]: [r["lr_at_grid_edge"], r["seeds"]] for r in rows}
    return ClaimResult(verdict, reason, rows, fig, numbers, _notes(
        f"heads have a fixed width ({head_width(scale)}), so a head costs parameters and the pairs trade heads for "
        "layers; the feed-forward layers (width 2d) come with the layers, as in any Transformer; every model of a "
        "budget has the training FLOPs of its deepest model", rows))


DEPTH_CRITERION = (
    "Causal byte-level LM on the CPython standard library, pre-LN, heads of width d/4 (a head costs parameters), "
    "FFN width 2d, T5 position bias. A budget B is the non-embedding parameter count of B layers with 2 heads; at "
    "each budget the shallower models halve the layers (down to 1) and take the head count whose non-embedding "
    "parameters come closest to the budget. Every model of a budget trains with the training FLOPs of its B-layer "
    "model. Learning rate selected per configuration and seed on the validation files; test-file bits per byte, "
    "mean over seeds with 95% t intervals. "
    f"Quick: B = {', '.join(map(str, DEPTH_SCALES[True][1]))}, {describe(DEPTH_SCALES[True][0])}. "
    f"Full: B = {', '.join(map(str, DEPTH_SCALES[False][1]))}, {describe(DEPTH_SCALES[False][0])}. "
    "Reproduced if at every budget the deepest model (B layers, 2 heads) is below the shallowest (1 layer, many "
    "heads) with disjoint intervals; refuted if at any budget the shallowest is below the deepest with disjoint "
    "intervals; otherwise not reproduced.")

register(Claim(
    "wang-e-depth", "At matched parameters, more layers cut validation loss more than more heads (Table 2)",
    "Wang & E 2024, Table 2 (insight 1a); spec wang_e_2024.md §4",
    DEPTH_CRITERION, wang_e_depth, "under 10 CPU-minutes (measured: see the README)",
    f"budgets {', '.join(map(str, DEPTH_SCALES[False][1]))}, {describe(DEPTH_SCALES[False][0])}; sized for a GPU"))


# ---- (c) Wang & E Table 7: with versus without the dot product --------------------------------------

DP_SCALES = {True: (Scale(steps=240, **QUICK), (2, 4)), False: (Scale(steps=4000, **FULL), (2, 4, 8))}


def dp_configs(scale: Scale, depths: tuple[int, ...]) -> list:
    """Causal models with ``attention`` or ``dpfree`` mixers, 4 heads, T5 bias, ``ffn_width = 4 d``; the
    DP-free one trained with the FLOPs of the one with the dot product."""
    from expressivity.training import RunConfig

    out = []
    for layers in depths:
        with_dp, without = (RunConfig.for_task("lm-causal", scale.task_args(), model={
            "mixer": mixer, "layers": layers, "heads": 4, "d_model": scale.d_model, "ffn_width": 4 * scale.d_model,
            "rpe": "t5"}, train=scale.train()) for mixer in ("attention", "dpfree"))
        out += _grid(with_dp, scale) + _grid(without, scale, reference=with_dp)
    return out


def dp_label(config: dict) -> str:
    return f"{config['model']['mixer']},L={config['model']['layers']}"


def wang_e_dp(ctx: ClaimContext, scale: Scale | None = None, depths: tuple[int, ...] | None = None) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    default_scale, default_depths = DP_SCALES[ctx.quick]
    scale, depths = scale or default_scale, depths or default_depths
    folder, _ = ctx.run_sweep(Sweep(tuple(dp_configs(scale, depths)), SELECT, "wang-e-dp"))
    s = summaries(folder, dp_label)
    parts = {f"L={L}": compare(s[f"attention,L={L}"].test, s[f"dpfree,L={L}"].test) for L in depths}
    verdict = _combine(parts)
    rows = [_row(f"{'with' if m == 'attention' else 'without'} DP, L={L}", s[f"{m},L={L}"], scale, dot_product=m == "attention")
            for L in depths for m in ("attention", "dpfree")]
    fig = _errorbar_figure(ctx.out / "figure.png", {
        "with dot product (attention + T5 bias)": (list(depths), [s[f"attention,L={L}"] for L in depths]),
        "without (DP-free: T5 bias only)": (list(depths), [s[f"dpfree,L={L}"] for L in depths])},
        "layers", f"lm-causal, d={scale.d_model}, 4 heads, equal training FLOPs per depth "
        "\n(Wang & E Table 7 in small)", xticks=list(depths))
    reason = "; ".join(f"L={L}: with DP {_fmt(s[f'attention,L={L}'])}, without {_fmt(s[f'dpfree,L={L}'])} -> {parts[f'L={L}']}"
                       for L in depths)
    numbers = {"parts": parts, "test_bits_per_byte": {key: list(v.test) for key, v in s.items()},
               "corpus": _corpus_facts(scale), "scale": {**scale.__dict__, "depths": list(depths), "tokens": scale.tokens}}
    numbers["lr_at_grid_edge"] = {r["config"]: [r["lr_at_grid_edge"], r["seeds"]] for r in rows}
    return ClaimResult(verdict, reason, rows, fig, numbers, _notes(
        "the DP-free stack has no W_Q, W_K, so it has fewer parameters and FLOPs per token than the one with DP (see "
        "the table); it trains more steps for the same training FLOPs; the spec does not recover whether the paper "
        "matched parameters or compute", rows))


DP_CRITERION = (
    "Causal byte-level LM on the CPython standard library, pre-LN, 4 heads, FFN width 4d, T5 position bias; the "
    "same stack with dot-product attention or DP-free heads (softmax of the T5 bias alone), the DP-free one "
    "trained with the training FLOPs of the one with the dot product. Learning rate selected per configuration "
    "and seed on the validation files; test-file bits per byte, mean over seeds with 95% t intervals. "
    f"Quick: L = {', '.join(map(str, DP_SCALES[True][1]))} layers, {describe(DP_SCALES[True][0])}. "
    f"Full: L = {', '.join(map(str, DP_SCALES[False][1]))}, {describe(DP_SCALES[False][0])}. "
    "Reproduced if at every depth the model with the dot product is below the DP-free one with disjoint "
    "intervals; refuted if at any depth the DP-free one is below with disjoint intervals; otherwise not reproduced.")

register(Claim(
    "wang-e-dp", "Models with the dot product reach lower language-model loss than DP-free ones (Table 7)",
    "Wang & E 2024, Table 7 (insight 3b); spec wang_e_2024.md §4",
    DP_CRITERION, wang_e_dp, "under 10 CPU-minutes (measured: see the README)",
    f"L = {', '.join(map(str, DP_SCALES[False][1]))}, {describe(DP_SCALES[False][0])}; sized for a GPU"))


def tiny(scale: Scale, **changes) -> Scale:
    """``scale`` with changes (tests shrink a claim with it)."""
    return replace(scale, **changes)
