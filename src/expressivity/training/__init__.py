"""Trainer, ensembles and checkpoints for the model family of :mod:`expressivity.nn`."""

from expressivity.training.ensemble import Ensemble, train_ensemble
from expressivity.training.schedule import TrainConfig
from expressivity.training.trainer import TrainResult, load_trained, model_config_for, train

__all__ = ["Ensemble", "TrainConfig", "TrainResult", "load_trained", "model_config_for", "train", "train_ensemble"]
