"""How a run's steps run, as opposed to what they compute (the :class:`RunConfig` and its id):
the device, the arithmetic, the attention kernel, whether the step is captured, where batches
are sampled and how often the host reads the device. Chosen per device, recorded in every run
record (``execution``), and never part of a run's id, so a sweep folder resumes on any machine.

=============  ==============================  ======================================================
choice         CPU default (the reference)     CUDA default
=============  ==============================  ======================================================
precision      ``fp32``                        ``tf32``: float32 storage and sums, TF32 matrix
                                               products (``bf16`` autocast is an option)
attention      ``explicit`` softmax            ``sdpa``: ``scaled_dot_product_attention`` with the
                                               additive position bias (hardmax stays explicit)
capture        ``eager``                       ``compiled``: the forward and loss (with the device
                                               sampler, the batch's drawing too) through
                                               ``torch.compile(mode="reduce-overhead")``, which
                                               captures them as CUDA graphs (eager without Triton)
sampler        ``host``: stream 1, a           ``device``: stream 2 (:mod:`expressivity.tasks.streams`),
               ``torch.Generator`` per member  on the GPU for every member at once (host for the
               on the CPU                      tasks that cannot)
host sync      every ``step``                  every ``log`` step: non-finite losses are found on the
                                               device and read when the loop logs
=============  ==============================  ======================================================

Why TF32 and not bf16 on CUDA: trained with the same seeds, bf16 moved final held-out losses as
far as another seed would (``benchmarks/precision_agreement.py`` on the CPU: claim 4's widest
cell, bf16 - fp32 -0.0035 [-0.040, +0.033] against a seed sd of 0.018; claim 7's T = 8 cell
+0.0036 [-0.0084, +0.0155] against 0.0011), so its effect on a verdict is not shown to be
negligible; TF32 keeps float32 storage and sums. ``benchmarks/gpu_check.sh`` measures both on a GPU.

The CPU defaults are today's arithmetic exactly (``tests/training/test_cpu_unchanged.py`` holds
small runs to results recorded before these choices existed); every other choice is tested
against them on the CPU where PyTorch runs it there (bf16 autocast, SDPA, ``torch.compile``, the
device stream). A resumed run keeps the precision and sampler its checkpoint was written with
(they change the numbers); the rest may change between sessions.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, replace

from expressivity.errors import ExpressivityError

PRECISIONS = ("fp32", "tf32", "bf16")
ATTENTION_KERNELS = ("explicit", "sdpa")
CAPTURES = ("eager", "compiled")
SAMPLERS = ("host", "device")
HOST_SYNCS = ("step", "log")
CHOICES = {"precision": PRECISIONS, "attention": ATTENTION_KERNELS, "capture": CAPTURES, "sampler": SAMPLERS,
           "host_sync": HOST_SYNCS}
DEFAULTS = {"cpu": {"precision": "fp32", "attention": "explicit", "capture": "eager", "sampler": "host", "host_sync": "step"},
            "cuda": {"precision": "tf32", "attention": "sdpa", "capture": "compiled", "sampler": "device",
                     "host_sync": "log"}}
STREAMS = {"host": 1, "device": 2}


@dataclass(frozen=True)
class Execution:
    """One choice per row of the module's table, for ``device`` (``"cpu"`` or ``"cuda"``)."""

    device: str = "cpu"
    precision: str = "fp32"
    attention: str = "explicit"
    capture: str = "eager"
    sampler: str = "host"
    host_sync: str = "step"
    # what did not run as chosen (a compile that failed and ran eagerly), in the record only when some did
    fallbacks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.device not in DEFAULTS:
            raise ExpressivityError(f"unknown device {self.device!r}; use cpu or cuda")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ExpressivityError(f"unknown {name.replace('_', ' ')} {getattr(self, name)!r}; use "
                                        f"{', '.join(allowed)} (or auto)")
        if self.precision == "tf32" and self.device != "cuda":
            raise ExpressivityError("--precision tf32 is a CUDA matrix-unit mode; on the CPU use fp32 or bf16")

    @classmethod
    def choose(cls, device: str = "cpu", **given) -> "Execution":
        """The device's defaults with the non-``"auto"``, non-``None`` choices in ``given``
        (``device`` already resolved: :func:`~expressivity.training.trainer.resolve_device`).
        Compilation on CUDA falls back to eager where Triton is missing (recorded as such)."""
        unknown = set(given) - set(CHOICES)
        if unknown:
            raise ExpressivityError(f"unknown execution settings {', '.join(sorted(unknown))}; known: "
                                    f"{', '.join(CHOICES)}")
        chosen = dict(DEFAULTS.get(device, DEFAULTS["cpu"]))
        if device == "cuda" and given.get("capture") in (None, "auto") and not _has_triton():
            chosen["capture"] = "eager"
        chosen |= {k: v for k, v in given.items() if v not in (None, "auto")}
        return cls(device, **chosen)

    @staticmethod
    def refuse_unread(configs, given: dict | None) -> None:
        """Refuse an attention kernel asked for (``given["attention"]``, not ``auto``) where no run of
        ``configs`` has a softmax attention layer to read it: `sweep run --attention-kernel sdpa` over
        DP-free models recorded ``attention: sdpa`` on every run (an audit, 2026-11-28; ``train`` refused it)."""
        kernel = (given or {}).get("attention")
        if kernel in (None, "auto"):
            return
        if not any("attention" in c.model.layer_mixers() and c.model.normalization == "softmax" for c in configs):
            mixers = sorted({m for c in configs for m in c.model.layer_mixers()})
            raise ExpressivityError(f"--attention-kernel {kernel} does not apply: no run has a softmax attention layer "
                                    f"(mixers {', '.join(mixers)}); drop it")

    def for_task(self, task) -> "Execution":
        """The host sampler for a task that cannot sample on the device (recorded as what ran)."""
        return self if self.sampler == "host" or task.device_sampling() else replace(self, sampler="host")

    def resumed(self, saved: dict | None) -> "Execution":
        """This execution with the precision and sampler a checkpoint was written with (``saved``:
        its record; ``None`` for checkpoints written before these choices: fp32, host)."""
        saved = saved or {"precision": "fp32", "sampler": "host"}
        precision = saved.get("precision", "fp32")
        if precision == "tf32" and self.device != "cuda":
            precision = "fp32"   # tf32 has no CPU form; its products are float32 with fewer mantissa bits
        return replace(self, precision=precision, sampler=saved.get("sampler", "host"))

    @property
    def is_reference(self) -> bool:
        """Whether every choice is the CPU reference's (what the other choices are tested against)."""
        return {k: getattr(self, k) for k in CHOICES} == DEFAULTS["cpu"]

    def record(self) -> dict:
        """The run record's ``execution``: every choice and the data stream's version, and
        ``fallbacks`` where something did not run as chosen."""
        record = asdict(self) | {"stream": STREAMS[self.sampler]}
        if self.fallbacks:
            record["fallbacks"] = list(self.fallbacks)
        else:
            del record["fallbacks"]
        return record

    def fell_back(self, what: str) -> "Execution":
        """This execution with ``what`` (a compile that failed, and what ran instead) recorded."""
        return self if what in self.fallbacks else replace(self, fallbacks=(*self.fallbacks, what))

    def autocast(self):
        """The context a forward pass and its loss run in: bf16 autocast, else nothing."""
        if self.precision != "bf16":
            return nullcontext()
        import torch

        return torch.autocast(self.device, dtype=torch.bfloat16)

    @contextmanager
    def matmul_mode(self):
        """On CUDA while a run trains: TF32 matrix products and convolutions for ``tf32``, and none
        for ``fp32`` (PyTorch's default lets cuDNN's convolutions use TF32: a depth-wise
        convolution recorded as fp32 could run in TF32), restored afterwards."""
        if self.device != "cuda" or self.precision not in ("fp32", "tf32"):
            yield
            return
        import torch

        before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        tf32 = self.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _has_triton() -> bool:
    try:
        from torch.utils._triton import has_triton

        return bool(has_triton())
    except ImportError:  # pragma: no cover - very old torch
        return False
