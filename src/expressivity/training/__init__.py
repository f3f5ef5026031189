"""Training: the run contract (:class:`RunConfig`), the trainer (:func:`run`), ensembles
(:func:`run_ensemble`) and checkpoints."""

from expressivity.training.config import RunConfig, TaskSpec, model_config_for
from expressivity.training.ensemble import Ensemble, run_ensemble
from expressivity.training.schedule import TrainConfig
from expressivity.training.trainer import RunResult, evaluate_lengths, load_trained, run

__all__ = ["Ensemble", "RunConfig", "RunResult", "TaskSpec", "TrainConfig", "evaluate_lengths", "load_trained",
           "model_config_for", "run", "run_ensemble"]
