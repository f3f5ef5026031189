"""Torch modules of the trained model family (tokens as rows: ``(batch, n, d)``)."""

from expressivity.nn.config import ModelConfig
from expressivity.nn.convert import from_network, to_network
from expressivity.nn.mixers import MIXER_NAMES, MIXERS
from expressivity.nn.model import Model
from expressivity.nn.positional import APE_NAMES, APES, RPE_NAMES, RPES

__all__ = ["APES", "APE_NAMES", "MIXERS", "MIXER_NAMES", "Model", "ModelConfig", "RPES", "RPE_NAMES", "from_network",
           "to_network"]
