"""Training: the run contract (:class:`RunConfig`), the trainer (:func:`run`), ensembles
(:func:`run_ensemble`) and checkpoints."""

from expressivity.training.config import RunConfig, TaskSpec, model_config_for
from expressivity.training.ensemble import check_packable, pack_key, run_ensemble
from expressivity.training.schedule import TrainConfig
from expressivity.training.trainer import RunResult, evaluate_lengths, load_trained, run

__all__ = ["RunConfig", "RunResult", "TaskSpec", "TrainConfig", "evaluate_lengths", "load_trained",
           "check_packable", "model_config_for", "pack_key", "run", "run_ensemble"]
