"""Train K runs of one architecture at once on native ensemble layers.

The K models are one :class:`~expressivity.nn.model.Model` built with ``members=K``: every
parameter has a leading ensemble axis and the forward pass is batched matmuls over it
(:mod:`expressivity.nn.layers`), no ``vmap``. Member ``k`` starts as ``Model(cfg)`` built after
``torch.manual_seed(seeds[k])`` and draws its batches from its own generator (the K batches in
one call where the task's sampler allows, :meth:`~expressivity.tasks.Task.sample_members`, each
bit-identical to its single run's). All parameters live in one ``(K, P)`` tensor (the model's
parameters are views of its rows), so AdamW with a per-member learning rate and clipping by each
member's own gradient norm are a handful of whole-tensor operations per step
(:class:`~expressivity.training.optimizer.FlatAdamW`, the one optimizer of single runs too:
member by member, ``torch.optim.AdamW``'s arithmetic). A member whose loss turns non-finite, or
that reaches its target metric, is frozen while the others continue. The loop is
:func:`expressivity.training.loop.train_members`, shared with the single-model trainer.

Which runs may share an ensemble is stated here once (:func:`pack_key`): runs whose
configurations differ only in ``seed`` and ``train.lr``.

How close a member stays to its single run: the optimizer's arithmetic and the batches are the
same bit for bit, but the model's batched kernels may sum in another order, so members agree
with :func:`~expressivity.training.run` to float32 round-off at first and may drift apart slowly
as training amplifies it. ``tests/training/test_ensemble.py`` holds them to parameters within
2e-5 after 15 steps and, after 300 steps, held-out metrics within 0.01 and losses within 0.1%.
Measured on this 2-core CPU: no difference at all on those tests' configurations and on the
``reverse`` defaults with K = 8 after 30 steps (2026-11-25); on ``kernel-memory`` (K = 8) 6e-8
after 30 steps and 6.6e-7 after 300; on claim 4's widest DP-free cell (K = 8, 30 steps,
``benchmarks/ensemble_agreement.py 30 claim4``) 1.2e-7 (2026-11-26; 6.2e-7 on an AVX-512 Xeon,
2026-11-27), since a scalar readout's product is the single model's to float32 ulps (bit for bit
on some CPUs, :func:`expressivity.nn.layers.linear`); before, one
member was 7.5e-4 off in one weight, where AdamW's sign-like early steps turned a round-off
difference in a near-zero gradient into a step of about the learning rate).
Ensembles are exact replicas of themselves: the same configs give bit-identical results, and
resuming is bit-exact.

Checkpoints: the whole ensemble's state (the ``(K, P)`` parameters, both Adam moments, every
member's generator, status and history) is one atomic checkpoint in ``group_dir/ensemble``
(written every ``checkpoint_every`` steps, status ``"running"``), so members always resume from
the same step. At the end every member's folder ``group_dir/<member>`` gets ``metrics.jsonl`` and
a normal final checkpoint, so each member is an ordinary finished run.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import torch

from expressivity.errors import ExpressivityError
from expressivity.manifest import NetworkEntry, refuse_present, replaceable_manifest, trained_run_files, write_manifest
from expressivity.nn.model import Model
from expressivity.records import canonical_json, content_hash
from expressivity.tasks import Batch, Task
from expressivity.training.budget import check_run_budget
from expressivity.training.checkpoint import (FINISHED, RUNNING, CheckpointUnreadable, checkpoint_exists,
                                              load_checkpoint, read_checkpoint_config, save_checkpoint)
from expressivity.training.config import RunConfig, refuse_file
from expressivity.training.execution import Execution
from expressivity.training.loop import Members, train_members
from expressivity.training.optimizer import FlatAdamW
from expressivity.training.step import (DeviceAlive, batch_source, note_optimizer_fallback, set_attention_kernel,
                                        stepper_losses)
from expressivity.training.trainer import (RunResult, check_run_folder, eval_batch, member_result, memory_budget_of,
                                           resolve_device, resolve_execution, score_lengths, write_run_manifest)


def pack_key(config: RunConfig) -> str:
    """Equal for configurations that may share an ensemble: everything but ``seed`` and ``train.lr`` equal."""
    return pack_key_of_dict(config.to_dict())


def pack_key_of_dict(d: dict) -> str:
    """:func:`pack_key` of a configuration's ``to_dict()`` (where it is already made)."""
    return canonical_json({**d, "seed": 0, "train": {**d["train"], "lr": 0}})


def check_packable(configs: list[RunConfig]) -> list[str]:
    """Refuse configurations that may not share an ensemble (:func:`pack_key`), or one run twice;
    returns the members' run ids (:meth:`RunConfig.id`)."""
    if not configs:
        raise ExpressivityError("an ensemble needs at least one run")
    dicts = [c.to_dict() for c in configs]   # once each: pack key and id from the same dict
    if len({pack_key_of_dict(d) for d in dicts}) > 1:
        raise ExpressivityError("ensemble members may differ only in seed and lr; run the others separately")
    ids = [content_hash(d) for d in dicts]
    if len(set(ids)) != len(ids):
        raise ExpressivityError("an ensemble got the same run twice; give distinct seeds or learning rates")
    return ids


class EnsembleStepper:
    """K models on native ensemble layers, their parameters the rows of one ``(K, P)`` tensor."""

    def __init__(self, configs: list[RunConfig], task: Task, ckpt: Path | None, execution: Execution | str,
                 ids: list[str] | None = None, chunks: dict | None = None):
        """``ids``: what :func:`check_packable` returned for ``configs`` (checked here when not
        given); ``execution``: how the steps run (a device name for its defaults); ``chunks``:
        held-out sequences per pass by sequence length
        (:attr:`~expressivity.training.budget.MemoryEstimate.chunks`)."""
        execution = Execution.choose(execution) if isinstance(execution, str) else execution
        device = execution.device
        self.configs, self.task, self.ckpt, self.execution, self.device = configs, task, ckpt, execution, device
        self.ids = check_packable(configs) if ids is None else ids
        self.group_id = group_id(configs, self.ids)
        self.train = configs[0].train
        models = []
        for c in configs:
            # the CPU generator is all a model built on the CPU draws from: what torch.manual_seed
            # gives a single run, without also seeding every accelerator (75 us a member)
            torch.default_generator.manual_seed(c.seed)
            model = Model(c.model)
            models.append(model if device == "cpu" else model.to(device))   # .to walks every module even when a no-op
        self.model = Model.stack(models)
        set_attention_kernel(self.model, execution.attention)   # held-out passes too, also of a pack resumed finished
        self._singles = models   # reused by member_model() at the end (building K models costs more)
        self.size = len(configs)
        self.optimizer = FlatAdamW(list(self.model.named_parameters()), self.size, self.model.weight_matrix_names(),
                                   self.train)
        self.gens = [torch.Generator().manual_seed(c.seed) for c in configs]
        self.sample = batch_source(task, execution, self.train.batch_size, [c.seed for c in configs], self.gens,
                                   members=True)
        self._loss = None   # built at the first step, on the model the stepper then has
        self.defers_sync = execution.host_sync == "log"
        self.alive = (DeviceAlive(self.size, device, rates=[c.train.lr for c in configs]) if self.defers_sync
                      else None)
        self.chunks = chunks or {}
        self.finished = False
        # each member's last finite weights at a checkpoint step, (step, row of the flat parameters): a member
        # whose loss turns non-finite keeps these, as a single run keeps its last good checkpoint
        self.last_good: dict[int, tuple[int, torch.Tensor]] = {}

    def keep_good(self, step: int, members: Members) -> None:
        """Remember the rows of the members still training or finished (not NaN) whose weights are finite."""
        flat = self.optimizer.flat.detach()
        finite = torch.isfinite(flat).all(dim=1).tolist()
        for k in range(self.size):
            if members.status[k] != "nan" and finite[k]:
                self.last_good[k] = (step, flat[k].cpu().clone())

    def last_good_model(self, k: int) -> tuple[int, Model] | None:
        """Member ``k``'s last finite weights kept at a checkpoint, as ``(step, model)`` (a copy on the
        CPU), or ``None`` when none was kept."""
        if k not in self.last_good:
            return None
        step, row = self.last_good[k]
        model = copy.deepcopy(self.member_model(k))   # member_model reuses one model per member: a copy
        singles, at = dict(model.named_parameters()), 0
        with torch.no_grad():
            for name, p in self.model.named_parameters():   # the flat row's column order (the optimizer's)
                width = p[0].numel()
                singles[name].copy_(row[at:at + width].reshape(singles[name].shape))
                at += width
        return step, model

    # ---- resume ------------------------------------------------------------------------------
    def load(self, group_dir) -> tuple[int, Members]:
        ckpt = self.ckpt
        if ckpt is None or not checkpoint_exists(ckpt):
            raise CheckpointUnreadable(f"no ensemble checkpoint to resume in {group_dir}; start a fresh run instead")
        saved, tensors, st = load_checkpoint(ckpt)
        if saved.get("id") != self.group_id:
            raise CheckpointUnreadable(f"the ensemble checkpoint in {group_dir} belongs to other runs; use a new folder")
        try:
            for name in ("flat", "m1", "m2"):
                value, target = tensors[name].to(self.device), getattr(self.optimizer, name)
                if value.shape != target.shape:
                    raise ValueError(f"{name} has shape {tuple(value.shape)}, this ensemble {tuple(target.shape)}")
                target.copy_(value)
            for g, s in zip(self.gens, st["generators"]):
                g.set_state(s)
            members = Members(self.size, self.train.steps, status=list(st["status"]), stop_step=list(st["stop_step"]),
                              last_loss=list(st["last_loss"]), last_metric=list(st["last_metric"]),
                              best=[tuple(b) for b in st["best"]], histories=st["histories"],
                              alive=[bool(a) for a in st["alive"].tolist()],
                              seconds=float(st.get("seconds", 0.0)))   # 0: written before it was kept
            start = st["step"]
            self.keep_good(start, members)
            if self.alive is not None:
                self.alive = DeviceAlive(self.size, self.device, [c.train.lr for c in self.configs], members.alive)
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            raise CheckpointUnreadable(f"checkpoint {ckpt} has an incomplete training state ({type(exc).__name__}: "
                                       f"{exc}); delete the folder to start over") from None
        if saved["status"] in FINISHED:
            start, self.finished = self.train.steps, True
        return start, members

    # ---- the stepper protocol ------------------------------------------------------------------
    def lr(self, k: int, step: int) -> float:
        return self.configs[k].train.lr_at(step)

    def losses(self, step: int) -> torch.Tensor:
        return stepper_losses(self, step, members=True)

    def update(self, step: int, losses: torch.Tensor, alive: list[bool] | None) -> None:
        """``alive=None``: the loop reads the device only when it logs (``host_sync="log"``)."""
        self.optimizer.zero_grad()
        with warnings.catch_warnings():
            # The gradients are views of the rows of one (K, P) tensor, so not dense in memory:
            # torch warns that this "may impair performance"; it accumulates into them in place,
            # which is the point (bench_ensemble.py measures the whole step).
            warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")
            if alive is None:
                self.alive.screen(step, losses).sum().backward()
            elif all(alive):
                losses.sum().backward()
            else:   # a stopped member's loss may be NaN: kept out of the sum, so its gradient is 0
                torch.where(torch.tensor(alive, device=self.device), losses, torch.zeros_like(losses)).sum().backward()
        if alive is None:
            self.optimizer.step(step + 1, self.alive.rates(self.train, step), self.alive.alive)
        else:
            self.optimizer.step(step + 1, [self.lr(k, step) for k in range(self.size)], alive)
        note_optimizer_fallback(self)

    def nan_steps(self) -> list[int]:
        return self.alive.nan_steps()

    @torch.no_grad()
    def evaluate(self, batch: Batch) -> list[tuple[float, float]]:
        chunk = self.chunks.get(batch.x.shape[1])
        self.model.eval()
        with self.execution.autocast():
            if chunk is not None and chunk < len(batch.x):
                scores = self.task.chunked_member_scores(lambda x: self.model(x.expand(self.size, *x.shape)), batch,
                                                         chunk)
                self.model.train()
                return scores
            out = self.model(batch.x.expand(self.size, *batch.x.shape))
        self.model.train()
        shared = Batch(*(t.expand(self.size, *t.shape) for t in (batch.x, batch.y, batch.mask)))
        return list(zip(self.task.member_losses(out, shared).tolist(), self.task.member_metrics(out, batch)))

    def member_model(self, k: int) -> Model:
        """Member ``k``'s current weights as one model on the CPU (a copy)."""
        model, stacked = self._singles[k], dict(self.model.named_parameters())
        with torch.no_grad():
            for name, p in model.named_parameters():   # buffers (a sinusoidal table) are the config's
                p.copy_(stacked[name][k])
        return model.cpu()

    def record(self, k: int, entry: dict) -> None:
        pass   # members' metrics are written with their folders at the end

    def stopped(self, k: int, members: Members, step: int) -> None:
        # a stopped member's learning rate and gradient are zero from now on
        if self.alive is not None:
            self.alive.stop(k)

    def checkpoint(self, step: int, members: Members, status: str = RUNNING) -> bool:
        self.keep_good(step, members)
        if self.ckpt is None:
            return False
        st = {"generators": [g.get_state() for g in self.gens], "alive": torch.tensor(members.alive),
              "status": list(members.status), "stop_step": list(members.stop_step), "last_loss": list(members.last_loss),
              "last_metric": list(members.last_metric), "best": [list(b) for b in members.best],
              "histories": [list(h) for h in members.histories], "step": step, "seconds": members.seconds}
        opt = self.optimizer
        save_checkpoint(self.ckpt, {"flat": opt.flat, "m1": opt.m1, "m2": opt.m2},
                        {"id": self.group_id, "members": self.ids, "step": step,
                         # the group's status, and each member's (a group "done" with NaN members said only "done")
                         "status": status, "member_status": list(members.status),
                         "execution": self.execution.record()}, st)
        return True

    def finish(self, step: int, members: Members) -> None:
        self.checkpoint(step, members, "done")


def run_ensemble(configs: list[RunConfig], group_dir: Path | None = None, member_dirs: list[Path] | None = None, *,
                 resume: bool = False, progress: bool = False, on_step=None, device: str = "cpu",
                 execution: Execution | dict | None = None, memory_budget=None) -> tuple[list[RunResult], Model]:
    """Train every config as one ensemble; returns one :class:`RunResult` per member (``seconds``
    is the wall time of the whole ensemble) and the ensemble model (``Model(cfg, members=K)``;
    ``.member(k)`` is member ``k``).

    ``group_dir`` holds the ensemble checkpoint; ``member_dirs`` (default ``group_dir/seed_<s>``)
    get each member's metrics, final checkpoint and ``manifest.json``, as a single run's folder.
    With the default member folders, ``group_dir`` gets a ``manifest.json`` listing them (and the
    members of earlier calls still there; ``train --out``'s own manifest is left to it). Folders
    another command's or the user's ``manifest.json`` describes are refused before anything is
    written. ``on_step(step)`` is called before every step (tests use it to simulate a crash).
    ``device``, ``execution`` and ``memory_budget`` (for the whole ensemble) as in
    :func:`~expressivity.training.run`.
    """
    device = resolve_device(device)
    execution = resolve_execution(execution, device)
    ids = check_packable(configs)   # before the budget check and anything is built
    for c in configs:
        c.check_trainable()
    base_cfg, task = configs[0], configs[0].build_task()
    tc = base_cfg.train
    estimate = check_run_budget(base_cfg, task, len(configs), memory_budget_of(memory_budget, device), device)
    base_cfg.check_scorable(task)   # the members share the task and its lengths (check_packable)
    listed = group_dir is not None and member_dirs is None   # the members under group_dir, which lists them
    refuse_file(group_dir, "group_dir")
    for d in member_dirs or []:
        refuse_file(d, "a member's folder")
    if listed:
        member_dirs = [Path(group_dir) / f"seed_{c.seed}" for c in configs]
        earlier = replaceable_manifest(Path(group_dir), "trained runs", GROUP_WRITERS, whole=False)
        if earlier is None and not resume:   # an "ensemble" of the user's is not this function's to replace
            refuse_present(Path(group_dir), ENSEMBLE_FILES, "run_ensemble")
    for d in member_dirs or []:
        check_run_folder(d)
    if listed:   # only once every folder was found writable
        _write_group_manifest(Path(group_dir), configs, earlier)
    ckpt = Path(group_dir) / "ensemble" if group_dir is not None else None
    ran = None   # a finished ensemble's record of how it ran (nothing runs in this session)
    if resume and ckpt is not None and checkpoint_exists(ckpt):
        ran = read_checkpoint_config(ckpt).get("execution")
        execution = execution.resumed(ran)
    stepper = EnsembleStepper(configs, task, ckpt, execution.for_task(task), ids, estimate.chunks)
    held_out = eval_batch(task, tc.eval_size, device=device)
    if resume and not (ckpt is not None and checkpoint_exists(ckpt)) and \
            not any(checkpoint_exists(Path(d) / "checkpoint") for d in member_dirs or []):
        # stopped before its first checkpoint (killed, out of memory): resume refused it ("start a fresh run") and a
        # fresh run refused the folder ("continue it with --resume"), with no way out but deleting it (a fresh audit,
        # 2026-11-29). Nothing trained is kept, so it starts afresh, as a single run does.
        resume = False
    start, members = stepper.load(group_dir) if resume else (0, Members(len(configs), tc.steps))
    with stepper.execution.matmul_mode():
        step, seconds = train_members(stepper, task, tc, held_out, members, start,
                                      label=f"{task.name} ensemble of {len(configs)}", progress=progress,
                                      on_step=on_step)
        # every member's held-out lengths in one batched pass per length and split
        lengths = score_lengths(stepper.evaluate, len(configs), base_cfg, task, device)
    results = [member_result(c, task, members, k, stepper.member_model(k), step, seconds, device, lengths[k],
                             run_id=stepper.ids[k], execution=ran if stepper.finished and ran else stepper.execution)
               for k, c in enumerate(configs)]
    if member_dirs is not None:
        _write_members(results, member_dirs, {k: stepper.last_good_model(k) for k, r in enumerate(results)
                                              if r.status == "nan"})
    return results, stepper.model


def group_id(configs: list[RunConfig], ids: list[str] | None = None) -> str:
    """Content hash of the member ids, in order (the ensemble checkpoint's identity); ``ids``:
    the members' ids when already computed (:func:`check_packable` returns them)."""
    return content_hash([c.id() for c in configs] if ids is None else ids)


# what an ensemble writes in its group folder besides the members: its checkpoint and the
# checkpoint's staging names (removed once every member folder holds its final checkpoint)
ENSEMBLE_FILES = ("ensemble/", "ensemble.tmp/", "ensemble.old/")

# the commands whose manifest a group folder may have: this function's, or train --out's (which
# lists the same seed folders and is rewritten by the command itself)
GROUP_WRITERS = ("run_ensemble", "train")


def _write_group_manifest(group_dir: Path, configs: list[RunConfig], earlier) -> None:
    """``group_dir/manifest.json`` listing the members under ``seed_<s>``, with the members of an
    ``earlier`` call into the same folder (the manifest found there) whose folders are still there;
    a ``train --out`` folder's own manifest is left to that command."""
    if earlier is not None and earlier.command != "run_ensemble":
        return
    kept = [] if earlier is None else [e for e in earlier.networks if (group_dir / e.path).is_dir()]
    entries = {e.path: e for e in kept} | {f"seed_{c.seed}": NetworkEntry(f"seed_{c.seed}", f"{c.task.name} seed {c.seed}",
                                                                          "trained run") for c in configs}
    files = {"ensemble/": "checkpoint of the whole ensemble while it trains (for resume)"}
    for path in entries:
        files |= trained_run_files(f"{path}/")
    group_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(group_dir, "trained runs", "run_ensemble", files, sorted(entries.values(), key=lambda e: e.path))


def _write_members(results: list[RunResult], member_dirs: list[Path], last_good: dict | None = None) -> None:
    """Each member's folder: its metrics, a final checkpoint and a manifest, as a single run would leave them.
    A member whose loss turned non-finite (``last_good``: its ``(step, model)`` at the last checkpoint step
    with finite weights, or ``None``) keeps those weights, its checkpoint at that step with the step it
    turned non-finite (``nan_at_step``), as a single run's does; with none kept it gets no checkpoint
    (its non-finite weights were saved, and the command said the last finite ones were kept)."""
    for k, (r, d) in enumerate(zip(results, member_dirs)):
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        write_run_manifest(d, r.config, "run_ensemble")
        (d / "metrics.jsonl").write_text("".join(json.dumps(h) + "\n" for h in r.history))
        step, model, extra = r.steps, r.model, {}
        if r.status == "nan":
            kept = (last_good or {}).get(k)
            if kept is None:
                continue
            (step, model), extra = kept, {"nan_at_step": r.steps}
        save_checkpoint(d / "checkpoint", model.state_dict(),
                        {"run": r.config.to_dict(), "id": r.id, "step": step, "status": r.status,
                         "trained_in": "ensemble", "execution": r.execution, **extra},
                        {"step": step, "history": r.history, "last_metric": r.final_metric,
                         "last_loss": r.final_loss, "best": [r.best_metric, r.best_step], "seconds": r.seconds})
