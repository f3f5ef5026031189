"""Exporters: networks as safetensors weights plus a JSON description."""

from expressivity.export.safetensors_io import load_network, save_network

__all__ = ["load_network", "save_network"]
