"""Booting an export in TransformerLens (needed from here on): a ``TransformerBridge`` and its input."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.export.transformer_lens.folder import read_folder_config

INSTALL = "pip install 'expressivity[interp]' (TransformerLens 4.3)"


def require_transformer_lens():
    """``(TransformerBridge, TransformerBridgeConfig)``, or a one-line error saying how to install TransformerLens."""
    try:
        import transformer_lens  # noqa: F401
    except ImportError:
        raise ExpressivityError(f"TransformerLens is not installed; {INSTALL}") from None
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge import TransformerBridge

    return TransformerBridge, TransformerBridgeConfig


def _torch_dtype(dtype: str):
    import torch

    if dtype not in ("float32", "float64"):
        raise ExpressivityError(f"TransformerLens dtype must be float32 or float64, got {dtype!r}")
    return torch.float32 if dtype == "float32" else torch.float64


def boot(config: dict, state_dict: dict, dtype: str = "float64"):
    """A ``TransformerBridge`` built by ``boot_native`` from config arguments and a state dict (strict load)."""
    import torch

    TransformerBridge, TransformerBridgeConfig = require_transformer_lens()
    tdt = _torch_dtype(dtype)
    bridge = TransformerBridge.boot_native(TransformerBridgeConfig(**config), dtype=tdt, device="cpu")
    tensors = {k: torch.tensor(np.asarray(v), dtype=tdt) if isinstance(v, np.ndarray) else v.to(tdt)
               for k, v in state_dict.items()}
    bridge.load_state_dict(tensors, strict=True)
    bridge.eval()
    return bridge


def load_bridge(directory: Path, dtype: str = "float64"):
    """Load an export folder through TransformerLens's own API (``boot_native`` + ``load_state_dict``)."""
    import safetensors.torch

    directory = Path(directory)
    config, _ = read_folder_config(directory)
    return boot(config, safetensors.torch.load_file(str(directory / "model.safetensors")), dtype)


def bridge_input(bridge, X: np.ndarray, input_bias=None):
    """The float input embeddings ``X @ embed.weight (+ input_bias)`` for an input ``X`` ``(batch, n, d_in)`` of the network."""
    import torch

    W_E = bridge.state_dict()["embed.weight"]
    out = torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=W_E.dtype) @ W_E
    return out if input_bias is None else out + torch.as_tensor(np.asarray(input_bias), dtype=W_E.dtype)
