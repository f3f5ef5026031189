"""The single-model trainer: :func:`run` executes one :class:`RunConfig` through the one training
loop (:mod:`expressivity.training.loop`) with a :class:`SingleStepper`.

AdamW with warm-up + cosine decay, gradient clipping, held-out evaluation, early stopping at a
metric threshold, JSONL metrics, checkpoints and resume. Determinism: the model is initialised
from ``torch.manual_seed(seed)`` and batches come from a dedicated ``torch.Generator`` seeded
with ``seed``; both states are checkpointed, so a resumed run replays exactly the batches an
uninterrupted run would have seen, and ends bit-identical on the CPU.

Status: checkpoints written during training say ``"running"`` (an interrupted or killed run
resumes from the last one); the final checkpoint says ``"done"``, ``"target-reached"`` or
``"nan"``. A non-finite loss stops the run cleanly: the step is not taken and the last
checkpoint, written while everything was finite, is kept and marked ``"nan"``.

Ctrl-C finishes the step in progress, writes a ``"running"`` checkpoint and raises
:class:`~expressivity.training.interrupt.TrainingInterrupted`, so the run can be resumed.

Run folder: ``metrics.jsonl`` (one line per log or evaluation) and ``checkpoint/``.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from expressivity.errors import ExpressivityError, require_path
from expressivity.manifest import (MANIFEST, TRAINED_RUN_FILES, NetworkEntry, check_replaceable, remove_written,
                                   trained_run_files, write_manifest)
from expressivity.nn.model import Model
from expressivity.tasks import Batch, Task
from expressivity.training.budget import Budget, check_run_budget, estimate_run, memory_budget
from expressivity.training.checkpoint import (FINISHED, RUNNING, CheckpointUnreadable, checkpoint_exists,
                                              load_checkpoint, read_checkpoint_config, save_checkpoint)
from expressivity.training.config import RunConfig, check_run_arguments
from expressivity.training.execution import Execution
from expressivity.training.loop import Members, train_members
from expressivity.training.optimizer import FlatAdamW
from expressivity.training.schedule import SPLIT_SEEDS
from expressivity.training.step import (DeviceAlive, batch_source, note_optimizer_fallback, set_attention_kernel,
                                        stepper_losses, to_device)


@dataclass
class RunResult:
    """What a run ended with.

    ``lengths`` maps each evaluated task length (the training length first) to the held-out
    ``{"val_loss", "val_metric", "test_loss", "test_metric"}`` at the end (at the training length
    also ``"test_subsets"``, ``{name: {"loss", "metric", "share"}}``, where the task names subsets:
    :meth:`~expressivity.tasks.Task.held_out_subsets`); ``final_metric`` and
    ``best_metric`` are validation metrics at the training length (the last and the best of the
    periodic evaluations). ``device`` is where it ran.
    """

    id: str
    config: RunConfig
    status: str  # "done", "target-reached" or "nan"
    steps: int
    seconds: float
    params: int
    final_loss: float
    final_metric: float | None
    best_metric: float | None = None
    best_step: int | None = None
    lengths: dict = field(default_factory=dict)
    device: str = "cpu"
    history: list[dict] = field(default_factory=list, repr=False)
    model: Model | None = field(default=None, repr=False)
    execution: dict = field(default_factory=dict)   # how the steps ran (Execution.record())

    @property
    def seed(self) -> int:
        return self.config.seed

    def summary(self) -> dict:
        """The JSON-ready facts of the run (no model, no history)."""
        return {"id": self.id, "seed": self.seed, "status": self.status, "steps": self.steps,
                "seconds": self.seconds, "params": self.params, "final_loss": self.final_loss,
                "final_metric": self.final_metric, "best_metric": self.best_metric, "best_step": self.best_step,
                "lengths": {str(k): v for k, v in self.lengths.items()}, "device": self.device,
                "execution": self.execution}


def eval_batch(task: Task, size: int, length: int | None = None, split: str = "val", device="cpu",
               seed: int | None = None) -> Batch:
    """The held-out ``split`` (``"val"`` or ``"test"``) at ``length``: the same for every run and seed
    (drawn with ``seed``, default the split's own: ``TrainConfig.split_seed`` gives a run's)."""
    batch = task.sample(size, length, torch.Generator().manual_seed(SPLIT_SEEDS[split] if seed is None else seed), split)
    return to_device(batch, device)


def resolve_device(device: str = "cpu") -> str:
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"`` or ``"cuda"``; refuses CUDA without a GPU."""
    if device not in ("auto", "cpu", "cuda"):
        raise ExpressivityError(f"unknown device {device!r}; use auto, cpu or cuda")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ExpressivityError("--device cuda was asked for, but PyTorch sees no CUDA GPU here; use --device cpu or auto")
    return device


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: Task, batch: Batch, chunk: int | None = None) -> tuple[float, float]:
    """``(loss, metric)`` of ``model`` on ``batch``, in evaluation mode; ``chunk``: the sequences
    one pass takes (:func:`~expressivity.training.budget.eval_chunk`; default all of them)."""
    model.eval()
    if chunk is not None and chunk < len(batch.x):
        scores = task.chunked_member_scores(lambda x: model(x).unsqueeze(0), batch, chunk)[0]
        model.train()
        return scores
    out = model(batch.x)
    model.train()
    return task.loss(out, batch).item(), task.metric(out, batch)


def evaluate_lengths(model: torch.nn.Module, config: RunConfig, task: Task, device="cpu",
                     chunks: dict | None = None) -> dict[int, dict]:
    """Validation and test loss and metric at the training length and at every ``config.eval_lengths``;
    ``chunks``: held-out sequences per pass by sequence length (default: the run's estimate's)."""
    chunks = estimate_run(config, task).chunks if chunks is None else chunks
    return score_lengths(lambda batch: [evaluate(model, task, batch, chunks.get(batch.x.shape[1]))], 1, config, task,
                         device)[0]


def score_lengths(score: Callable[[Batch], list[tuple[float, float]]], size: int, config: RunConfig, task: Task,
                  device="cpu") -> list[dict[int, dict]]:
    """:func:`evaluate_lengths` for ``size`` members at once: ``score(batch)`` gives each member's
    ``(loss, metric)`` on a held-out batch."""
    out: list[dict[int, dict]] = [{} for _ in range(size)]
    for length in dict.fromkeys((task.length, *config.eval_lengths)):
        for split in ("val", "test"):
            batch = eval_batch(task, config.train.eval_size, length, split, device, config.train.split_seed(split))
            for k, (loss, metric) in enumerate(score(batch)):
                row = out[k].setdefault(length, {})
                row[f"{split}_loss"], row[f"{split}_metric"] = loss, metric
            if split == "test" and length == task.length:
                for name, subset in task.held_out_subsets(batch).items():
                    for k, entry in enumerate(subset_scores(score, batch, subset, size)):
                        out[k][length].setdefault("test_subsets", {})[name] = entry
    return out


def subset_scores(score: Callable[[Batch], list[tuple[float, float]]], batch: Batch, subset: torch.Tensor,
                  size: int) -> list[dict]:
    """Each member's ``{"loss", "metric", "share"}`` on the scored positions of ``batch`` within
    ``subset`` (a ``(batch, n)`` bool mask; ``share``: their fraction of the scored positions);
    loss and metric ``None`` where the subset is empty."""
    subset = subset & batch.mask
    count, total = int(subset.sum()), int(batch.mask.sum())
    share = count / total if total else 0.0
    if count == 0:
        return [{"loss": None, "metric": None, "share": share} for _ in range(size)]
    return [{"loss": loss, "metric": metric, "share": share}
            for loss, metric in score(Batch(batch.x, batch.y, subset))]


def _finite_params(model) -> bool:
    return all(torch.isfinite(p).all() for p in model.parameters())


class SingleStepper:
    """One model trained by the shared AdamW (:class:`~expressivity.training.optimizer.FlatAdamW`
    with one row: ``torch.optim.AdamW``'s arithmetic, bit for bit); checkpoints in
    ``out_dir/checkpoint`` (the optimizer state in ``torch.optim.AdamW``'s layout), metrics in
    ``out_dir/metrics.jsonl`` as they are recorded (see :mod:`expressivity.training.loop`)."""

    size = 1

    def __init__(self, config: RunConfig, task: Task, out_dir: Path | None, execution: Execution | str,
                 chunks: dict | None = None):
        """``execution``: how the steps run (:mod:`expressivity.training.execution`; a device name
        for its defaults); ``chunks``: held-out sequences per pass by sequence length
        (:attr:`~expressivity.training.budget.MemoryEstimate.chunks`)."""
        execution = Execution.choose(execution) if isinstance(execution, str) else execution
        self.config, self.task, self.execution, self.device = config, task, execution, execution.device
        cfg = config.train
        torch.manual_seed(config.seed)
        self.model = Model(config.model).to(self.device)
        set_attention_kernel(self.model, execution.attention)   # held-out passes too, also of a run resumed finished
        self.optimizer = FlatAdamW(list(self.model.named_parameters()), None, self.model.weight_matrix_names(), cfg)
        self.gen = torch.Generator().manual_seed(config.seed)
        self.sample = batch_source(task, execution, cfg.batch_size, [config.seed], [self.gen], members=False)
        self._loss = None   # built at the first step, on the model the stepper then has
        self.defers_sync = execution.host_sync == "log"
        self.alive = DeviceAlive(1, self.device, rates=[cfg.lr]) if self.defers_sync else None
        self.chunks = chunks or {}
        self.ckpt = Path(out_dir) / "checkpoint" if out_dir is not None else None
        self.metrics_path = Path(out_dir) / "metrics.jsonl" if out_dir is not None else None
        self.log = None
        self.finished = False   # resumed a run that had ended: nothing is trained or written

    # ---- resume ------------------------------------------------------------------------------
    def load(self, out_dir) -> tuple[int, Members]:
        """The step and members' state of ``out_dir/checkpoint`` (the weights, optimizer and RNGs loaded)."""
        config, cfg, ckpt = self.config, self.config.train, self.ckpt
        if ckpt is None or not checkpoint_exists(ckpt):
            raise CheckpointUnreadable(f"no checkpoint to resume in {out_dir}; start a fresh run instead")
        saved, tensors, state = load_checkpoint(ckpt)
        if saved.get("id") != config.id():
            raise CheckpointUnreadable(f"the checkpoint in {out_dir} belongs to another configuration "
                                       f"(id {saved.get('id')}, this run {config.id()}); use a new folder")
        if saved["step"] > cfg.steps or (saved["status"] == "done" and saved["step"] != cfg.steps) \
                or saved.get("run") != config.to_dict():
            raise CheckpointUnreadable(f"the checkpoint in {out_dir} does not match its run (step {saved['step']} of "
                                       f"{cfg.steps}, status {saved['status']}); delete the folder to start over")
        _load_weights(self.model, {k: v.to(self.device) for k, v in tensors.items()}, ckpt)
        try:
            if state["step"] != saved["step"]:
                raise ValueError(f"state at step {state['step']}, config at step {saved['step']}")
            members = Members(1, cfg.steps, last_metric=[state["last_metric"]], last_loss=[state["last_loss"]],
                              best=[tuple(state["best"])], histories=[state["history"]],
                              seconds=float(state.get("seconds", 0.0)))   # 0: written before it was kept
            if saved["status"] in FINISHED:
                # a NaN run's checkpoint is its last good one, at an earlier step: it ended where it turned non-finite
                ended = saved.get("nan_at_step", cfg.steps) if saved["status"] == "nan" else cfg.steps
                members.stop(0, saved["status"], ended)
                self.finished = True
                return (ended if saved["status"] == "nan" else state["step"]), members
            else:
                self.optimizer.load_torch_state(state["optimizer"], state["step"])
                self.gen.set_state(state["generator"])
                torch.set_rng_state(state["torch_rng"])
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            raise CheckpointUnreadable(f"checkpoint {ckpt} has an incomplete training state ({type(exc).__name__}: "
                                       f"{exc}); delete the folder to start over") from None
        return state["step"], members

    def open_log(self, stack: ExitStack, members: Members) -> None:
        if self.metrics_path is None:
            return
        self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
        # Drop lines written after the checkpoint we resume from: they will be recomputed.
        self.metrics_path.write_text("".join(json.dumps(h) + "\n" for h in members.histories[0]))
        self.log = stack.enter_context(self.metrics_path.open("a"))

    # ---- the stepper protocol ------------------------------------------------------------------
    def lr(self, k: int, step: int) -> float:
        return self.config.train.lr_at(step)

    def losses(self, step: int) -> torch.Tensor:
        return stepper_losses(self, step, members=False)

    def update(self, step: int, losses: torch.Tensor, alive: list[bool] | None) -> None:
        """``alive=None``: the loop reads the device only when it logs (``host_sync="log"``)."""
        self.optimizer.zero_grad()
        if alive is None:
            self.alive.screen(step, losses).sum().backward()
            self.optimizer.step(step + 1, self.alive.rates(self.config.train, step), self.alive.alive)
        else:
            losses.sum().backward()
            self.optimizer.step(step + 1, [self.lr(0, step)], alive)
        note_optimizer_fallback(self)

    def nan_steps(self) -> list[int]:
        return self.alive.nan_steps()

    def evaluate(self, batch: Batch) -> list[tuple[float, float]]:
        with self.execution.autocast():
            return [evaluate(self.model, self.task, batch, self.chunks.get(batch.x.shape[1]))]

    def record(self, k: int, entry: dict) -> None:
        if self.log is not None:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()

    def stopped(self, k: int, members: Members, step: int) -> None:
        if self.alive is not None:
            self.alive.stop(k)
        if members.status[k] == "nan":
            _mark_nan(self.ckpt, step, members)

    def checkpoint(self, step: int, members: Members, status: str = RUNNING) -> bool:
        if self.ckpt is None or not _finite_params(self.model):
            return False
        # the learning rate of the last step taken, as torch.optim.AdamW's state_dict holds it
        optimizer = self.optimizer.torch_state(step, self.lr(0, max(step - 1, 0)))
        state = {"optimizer": optimizer, "generator": self.gen.get_state(),
                 "torch_rng": torch.get_rng_state(), "step": step, "history": list(members.histories[0]),
                 "last_metric": members.last_metric[0], "last_loss": members.last_loss[0], "best": list(members.best[0]),
                 "seconds": members.seconds}
        config = {"run": self.config.to_dict(), "id": self.config.id(), "step": step, "status": status,
                  "execution": self.execution.record()}
        save_checkpoint(self.ckpt, self.model.state_dict(), config, state)
        return True

    def finish(self, step: int, members: Members) -> None:
        if not self.finished and members.status[0] != "nan":   # a NaN run keeps its last good checkpoint
            self.checkpoint(step, members, members.status[0])


def run(config: RunConfig, out_dir: Path | None = None, *, resume: bool = False, progress: bool = False,
        on_step: Callable[[int, Model], None] | None = None, device: str = "cpu",
        execution: Execution | dict | None = None, memory_budget=None) -> RunResult:
    """Train one model as ``config`` says; with ``out_dir`` write ``metrics.jsonl``, ``checkpoint/``
    and ``manifest.json`` (:func:`write_run_manifest`, when training starts).

    ``resume=True`` continues from ``out_dir/checkpoint`` (which must hold the same
    configuration); a finished run is returned as it ended, without training further.
    ``on_step(step, model)`` is called before every step (tests use it to simulate crashes).
    ``device``: ``"cpu"``, ``"cuda"`` or ``"auto"``. ``execution``: how the steps run, an
    :class:`~expressivity.training.execution.Execution` or a dict of its choices (default: the
    device's; on the CPU today's arithmetic, with data drawn on the CPU). ``memory_budget``: bytes
    or a size (``"8GiB"``) the run may use (default: from the device, :mod:`~expressivity.training.budget`);
    a run estimated above it is refused before anything is built. Bit-exact resume is promised
    on the CPU.
    """
    check_run_arguments(config, out_dir)
    config.check_trainable()
    device = resolve_device(device)
    execution = resolve_execution(execution, device)
    task, cfg = config.build_task(), config.train
    estimate = check_run_budget(config, task, 1, memory_budget_of(memory_budget, device), device)
    config.check_scorable(task)
    if out_dir is not None and not resume:   # a resumed folder is the run's own: its checkpoint decides
        check_run_folder(out_dir)
    ran = None   # a finished run's record of how it ran (nothing runs in this session)
    if resume and out_dir is not None and checkpoint_exists(Path(out_dir) / "checkpoint"):
        ran = read_checkpoint_config(Path(out_dir) / "checkpoint").get("execution")
        execution = execution.resumed(ran)
    stepper = SingleStepper(config, task, out_dir, execution.for_task(task), estimate.chunks)
    held_out = eval_batch(task, cfg.eval_size, device=device)
    start, members = stepper.load(out_dir) if resume else (0, Members(1, cfg.steps))
    if out_dir is not None and (not resume or not (Path(out_dir) / MANIFEST).exists()):
        write_run_manifest(out_dir, config, "run")   # a resume keeps the manifest its run wrote
    with ExitStack() as stack:
        stack.enter_context(stepper.execution.matmul_mode())
        stepper.open_log(stack, members)
        step, seconds = train_members(
            stepper, task, cfg, held_out, members, start, label=f"{task.name} seed {config.seed}", progress=progress,
            on_step=None if on_step is None else (lambda s: on_step(s, stepper.model)),
            describe=lambda m: (f"{task.name} seed {config.seed} loss {m.last_loss[0]:.4f} "
                                f"{task.metric_name} {m.last_metric[0]:.4f}"))
        lengths = None if members.status[0] == "nan" else score_lengths(stepper.evaluate, 1, config, task, device)[0]
    return member_result(config, task, members, 0, stepper.model, step, seconds, device, lengths,
                         execution=ran if stepper.finished and ran else stepper.execution)


def resolve_execution(execution: Execution | dict | None, device: str) -> Execution:
    """An :class:`Execution` for the resolved ``device`` from ``None`` (its defaults), a dict of
    choices or an :class:`Execution` (whose device must be ``device``)."""
    if isinstance(execution, Execution):
        if execution.device != device:
            raise ExpressivityError(f"the execution is for {execution.device} but the run is on {device}; "
                                    "give one device")
        return execution
    if execution is not None and not isinstance(execution, dict):
        raise ExpressivityError(f"execution must be an Execution or a dict of its choices, got {type(execution).__name__}")
    return Execution.choose(device, **(execution or {}))


def memory_budget_of(given, device: str) -> Budget:
    """A :class:`Budget` from ``given`` (a Budget, bytes, a size string or ``None``: the device's)."""
    return given if isinstance(given, Budget) else memory_budget(given, device)


# the functions that write a trained run's folder (manifest.json's "command")
RUN_WRITERS = ("run", "run_ensemble")


# what a run writes in its folder: the manifest's files, and the checkpoint's staging names
RUN_FILES = (*TRAINED_RUN_FILES, "checkpoint.tmp/", "checkpoint.old/")


def check_run_folder(run_dir: Path) -> None:
    """Refuse to train into a folder another command's or the user's ``manifest.json`` describes
    (:func:`~expressivity.manifest.check_replaceable`), or one holding a file of a name the run
    writes (``metrics.jsonl``, ``checkpoint/``) that no run's manifest lists; a trained run of a
    ``train`` or ``sweep`` folder is the trainer's. Other files in the folder are kept."""
    check_replaceable(run_dir, "trained runs", RUN_WRITERS, listed_as="trained run", writes=RUN_FILES)


def clear_run_folder(run_dir: Path) -> None:
    """Remove what a run wrote in ``run_dir`` (:data:`RUN_FILES` and its manifest) to train it
    afresh, keeping anything else (:func:`~expressivity.manifest.remove_written`)."""
    remove_written(run_dir, (*RUN_FILES, MANIFEST))


def write_run_manifest(run_dir: Path, config: RunConfig, command: str) -> None:
    """``run_dir/manifest.json``: the folder is one trained run (``metrics.jsonl``, ``checkpoint/``),
    written by ``command`` (``"run"`` or ``"run_ensemble"``, the Python functions)."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir, "trained runs", command, trained_run_files(),
                   [NetworkEntry(".", f"{config.task.name} seed {config.seed}", "trained run")])


def member_result(config: RunConfig, task: Task, members: Members, k: int, model: Model, step: int, seconds: float,
                  device: str, lengths: dict | None = None, run_id: str | None = None,
                  execution: Execution | dict | None = None) -> RunResult:
    """Member ``k``'s :class:`RunResult` after the loop ended at ``step``, with ``lengths`` (its
    :func:`evaluate_lengths`, computed here when not given; none for a NaN run), ``run_id``
    (``config.id()``, hashed here when not given) and the ``execution`` it ran with (an
    :class:`Execution`, or the record of one: a finished run's, read from its checkpoint)."""
    status = members.status[k]
    if status == "nan":
        lengths = {}
    elif lengths is None:
        lengths = evaluate_lengths(model.to(device), config, task, device)
    last_loss = float("nan") if status == "nan" else members.last_loss[k]
    return RunResult(run_id or config.id(), config, status, min(members.stop_step[k], step), seconds,
                     model.parameter_count(), last_loss, members.last_metric[k], members.best[k][0], members.best[k][1],
                     lengths, device, members.histories[k], model.cpu(),
                     execution if isinstance(execution, dict) else (execution or Execution.choose(device)).record())


def _load_weights(model: torch.nn.Module, tensors: dict, where, fix: str = "delete it to start over") -> None:
    """Load ``tensors`` into ``model``; a one-line :class:`ExpressivityError` naming checkpoint ``where``
    and ``fix`` (by default the advice for resuming training) when they do not fit it."""
    try:
        model.load_state_dict(tensors)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointUnreadable(f"checkpoint {where} does not fit this model ({first}); {fix}") from None


def _mark_nan(ckpt: Path | None, step: int, members: Members | None = None) -> None:
    """Keep the last good checkpoint's weights, but record that the run ended in NaN at ``step``, with
    the run's whole history (through the NaN event): resuming the finished run returns it as it
    ended and leaves its ``metrics.jsonl`` as it is (it was cut back to the checkpoint's history)."""
    if ckpt is None or not checkpoint_exists(ckpt):
        return
    config, tensors, state = load_checkpoint(ckpt)
    if members is not None:
        state = {**state, "history": list(members.histories[0]), "last_metric": members.last_metric[0],
                 "best": list(members.best[0])}
    save_checkpoint(ckpt, tensors, {**config, "status": "nan", "nan_at_step": step}, state)


def load_trained(run_dir: Path) -> tuple[Model, Task, RunConfig]:
    """The model (weights of the last checkpoint), task and configuration of a run folder.

    A missing or damaged checkpoint (config, weights) is a one-line :class:`ExpressivityError` naming
    what is wrong and the fix for reading a run: its checkpoint is damaged, so train it again into a
    new folder. (Deleting the folder to start over is the advice for resuming training, not for this.)
    """
    run_dir = require_path(run_dir, "load_trained's run folder")
    diverged = _diverged_before_a_checkpoint(Path(run_dir))
    if diverged is not None:
        raise CheckpointUnreadable(f"{run_dir}: the loss became non-finite at step {diverged}, before the first "
                                   "checkpoint, so the run kept no weights to read; train it again with a smaller "
                                   "--lr into a new folder")
    fix = ("the run's checkpoint is damaged or missing, so it cannot be read: train it again into a new folder "
           "(expressivity train ... --out NEW, with the options of the original run)")
    saved, tensors, _ = load_checkpoint(run_dir / "checkpoint", with_state=False, fix=fix)
    if "run" not in saved:
        raise CheckpointUnreadable(f"{run_dir}/checkpoint was not written by this version's trainer; retrain it")
    config = RunConfig.from_dict(saved["run"])
    _check_shapes(config, tensors, Path(run_dir) / "checkpoint", fix)
    model = Model(config.model)
    _load_weights(model, tensors, Path(run_dir) / "checkpoint", fix)
    return model, config.build_task(), config


def _diverged_before_a_checkpoint(run_dir: Path) -> int | None:
    """The step at which a run with no checkpoint turned non-finite (its ``metrics.jsonl`` ends in a ``nan``
    event), else ``None``: such a run was reported as "damaged or missing" (a fresh audit, 2026-11-29)."""
    if checkpoint_exists(run_dir / "checkpoint"):
        return None
    try:
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        last = json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(last, dict) and last.get("event") == "nan" and isinstance(last.get("step"), int):
        return last["step"]
    return None


def _check_shapes(config: RunConfig, tensors: dict, where, fix: str) -> None:
    """Compare the weights' shapes with those the configuration's model has, built on the meta device (no
    memory), before the model itself is built: a shared run's config.json with d_model 12,000 took 2.5 GB
    before "does not fit this model" (an audit, 2026-11-28)."""
    with torch.device("meta"):
        shapes = {name: tuple(t.shape) for name, t in Model(config.model).state_dict().items()}
    for name, shape in shapes.items():
        tensor = tensors.get(name)
        if tensor is None or tuple(tensor.shape) != shape:
            found = "missing" if tensor is None else f"of shape {tuple(tensor.shape)}"
            raise CheckpointUnreadable(f"checkpoint {where} does not fit this model (tensor {name!r} is {found}; its "
                                       f"configuration makes it {shape}); {fix}")
