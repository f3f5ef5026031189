"""Torch modules of the trained model family (tokens as rows: ``(batch, n, d)``)."""

from expressivity.nn.load import from_network
from expressivity.nn.mixers import MIXER_NAMES
from expressivity.nn.model import Model, ModelConfig
from expressivity.nn.positional import APE_NAMES, RPE_NAMES

__all__ = ["APE_NAMES", "MIXER_NAMES", "Model", "ModelConfig", "RPE_NAMES", "from_network"]
