"""One training step (forward, backward, AdamW step) of our model vs x-transformers at an equal
configuration, measured in the same process.

Equal configuration: token embedding + learned absolute positions, L pre-LN encoder blocks
(bidirectional) of H-head dot-product attention with head width d/H and no QKV/O bias, GELU FFN
of width 4d with biases, final LayerNorm, linear logits. Printed ratio = their time / our time
(goal: >= 1.0, "no slower").

``--capture compiled`` also times our model through ``torch.compile`` (the ``compiled`` capture
of ``training/execution.py``; on the CPU, inductor's C++ kernels) in the same rounds, against
their eager model (issue 29's goal where compiling helps on the CPU: >= 1.3), once with AdamW's
step eager and once with it compiled too; compilation time is printed apart and not in the ratio.

    python benchmarks/bench_xtransformers.py [--json] [--capture compiled] [--d-model 128 --layers 2 --heads 4 --length 64 --batch 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def build_ours(vocab, n, d, layers, heads):
    from expressivity.nn import Model, ModelConfig

    return Model(ModelConfig(vocab_size=vocab, d_out=vocab, max_len=n, mixer="attention", layers=layers, heads=heads, d_model=d,
                             ffn_width=4 * d, activation="gelu", ape="learned", norm="pre", causal=False))


def build_theirs(vocab, n, d, layers, heads):
    from x_transformers import Encoder, TransformerWrapper

    return TransformerWrapper(num_tokens=vocab, max_seq_len=n,
                              attn_layers=Encoder(dim=d, depth=layers, heads=heads, attn_dim_head=d // heads, ff_mult=4))


# each model's AdamW and its step function, made once: interleaved rounds continue one run, and a
# compiled step is compiled once
_OPTIMIZERS: dict = {}


def step_time(model, x, y, vocab, repeats, warmup=5):
    """Seconds of each of ``repeats`` training steps after ``warmup``; where ``model.compile_step``
    is set, the AdamW step is compiled too."""
    if model not in _OPTIMIZERS:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        _OPTIMIZERS[model] = (opt, torch.compile(opt.step) if getattr(model, "compile_step", False) else opt.step)
    opt, opt_step = _OPTIMIZERS[model]

    def step():
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt_step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def compiled_copy(model, x, y, vocab, compile_step: bool):
    """A ``torch.compile`` of a copy of ``model`` (its AdamW step compiled too where
    ``compile_step``), compiled by two steps, and the seconds those took."""
    import copy

    compiled = torch.compile(copy.deepcopy(model), dynamic=False)
    compiled.compile_step = compile_step
    t0 = time.perf_counter()
    step_time(compiled, x, y, vocab, 1, warmup=2)   # compiles the forward, the backward (and the step)
    return compiled, time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--length", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--capture", choices=["eager", "compiled"], default="eager",
                   help="compiled: also time our model through torch.compile")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    x = torch.randint(0, a.vocab, (a.batch, a.length))
    y = torch.randint(0, a.vocab, (a.batch, a.length))
    ours = build_ours(a.vocab, a.length, a.d_model, a.layers, a.heads)
    theirs = build_theirs(a.vocab, a.length, a.d_model, a.layers, a.heads)
    models = {"ours": ours, "theirs": theirs}
    compile_s = None
    if a.capture == "compiled":
        # once with AdamW's step eager, once with it compiled too (its per-parameter operations
        # fused), as the CUDA path captures its optimizer
        models["ours compiled"], compile_s = compiled_copy(ours, x, y, a.vocab, compile_step=False)
        models["ours compiled, AdamW too"], compile_whole_s = compiled_copy(ours, x, y, a.vocab, compile_step=True)
    times = {name: [] for name in models}
    for _ in range(a.rounds):  # interleaved rounds, so drifting machine load hits both alike
        for name, model in models.items():
            times[name] += step_time(model, x, y, a.vocab, a.repeats)
    median = {name: statistics.median(t) for name, t in times.items()}
    m_ours, m_theirs = median["ours"], median["theirs"]
    res = {"benchmark": "train_step_vs_x_transformers", "config": vars(a) | {"json": None},
           "params_ours": sum(q.numel() for q in ours.parameters()), "params_theirs": sum(q.numel() for q in theirs.parameters()),
           "ours_ms": 1e3 * m_ours, "theirs_ms": 1e3 * m_theirs, "ratio": m_theirs / m_ours, "goal": ">= 1.0 (no slower)",
           "met": m_theirs / m_ours >= 1.0}
    if compile_s is not None:
        ratio = m_theirs / median["ours compiled"]
        whole = m_theirs / median["ours compiled, AdamW too"]
        res |= {"ours_compiled_ms": 1e3 * median["ours compiled"], "compile_s": compile_s, "ratio_compiled": ratio,
                "ours_compiled_adamw_ms": 1e3 * median["ours compiled, AdamW too"], "ratio_compiled_adamw": whole,
                "compile_adamw_s": compile_whole_s,
                "goal_compiled": ">= 1.3", "met_compiled": max(ratio, whole) >= 1.3}
    if a.json:
        print(json.dumps(res))
    else:
        print(f"params: ours {res['params_ours']}, x-transformers {res['params_theirs']}")
        print(f"median train step: ours {res['ours_ms']:.2f} ms, x-transformers {res['theirs_ms']:.2f} ms")
        print(f"ratio (theirs / ours) = {res['ratio']:.2f}   goal >= 1.0   {'MET' if res['met'] else 'NOT MET'}")
        if compile_s is not None:
            print(f"ours compiled: {res['ours_compiled_ms']:.2f} ms a step (compiled in {compile_s:.0f} s); ratio "
                  f"(theirs / ours compiled) = {res['ratio_compiled']:.2f}   goal >= 1.3   "
                  f"{'MET' if ratio >= 1.3 else 'NOT MET'}")
            print(f"ours compiled, AdamW step too: {res['ours_compiled_adamw_ms']:.2f} ms a step (compiled in "
                  f"{compile_whole_s:.0f} s); ratio "
                  f"{res['ratio_compiled_adamw']:.2f}   goal >= 1.3   {'MET' if whole >= 1.3 else 'NOT MET'}")
    return res


if __name__ == "__main__":
    main()
