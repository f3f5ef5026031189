"""TransformerLens 4 export and import: our networks as ``TransformerBridge.boot_native`` models and back.

**Export** (:func:`to_transformer_lens`, :func:`save_transformer_lens`) writes a folder that
TransformerLens 4.3 loads with its own API::

    cfg = TransformerBridgeConfig(**json.load(open(DIR / "config.json")))
    bridge = TransformerBridge.boot_native(cfg, dtype=torch.float64)   # or float32
    bridge.load_state_dict(safetensors.torch.load_file(DIR / "model.safetensors"), strict=True)
    logits, cache = bridge.run_with_cache(X @ bridge.state_dict()["embed.weight"])

``config.json`` holds the ``TransformerBridgeConfig`` arguments, ``model.safetensors`` the
bridge's state-dict names (float64), ``expressivity.json`` the residual labels, which network
layer became which block, what the export changed and what it cost. The contract: the residual
stream's first ``d`` dimensions are the network's own, in order; added dimensions come after. For
an input ``X`` ``(batch, n, d_in)`` of the network (tokens as rows), ``X @ W_E`` (``W_E`` =
``embed.weight``, ``(d_in, d_model)``: the network's embedding, or the zero padding of ``X`` to
``d_model`` when it has none) given to the bridge as float input embeddings yields the
network's output as the bridge's logits; for token networks (one-hot inputs) the token ids do
the same. Hooks line up: ``blocks.{b}.hook_resid_mid`` / ``hook_resid_post`` hold our residual
stream after the layer that became block ``b``'s attention / MLP (its first ``d`` entries), and
``blocks.{b}.attn.hook_pattern[:, h]`` our head ``h``'s attention weights.

How the semantics are matched (TransformerLens facts checked in its 4.3.0 source,
``model_bridge/sources/native/model.py``):

* TransformerLens divides scores by ``sqrt(d_head)`` (``attn_scale=1`` is refused for
  ``d_head > 1``): ``sqrt(d_head)`` and the inverse temperature are folded into ``W_Q``, ``b_Q``.
* It has no additive attention bias (ALiBi is refused by the native model; a float mask is only
  thresholded). A position bias ``B`` is realised exactly by ``n_ctx`` one-hot position dimensions
  written by ``pos_embed``: the query reads ``sqrt(d_head) B[i, :]``, the key ``e_j``, so ``q.k``
  carries ``B[i, j]``. Cost: ``n_ctx`` residual dimensions for the whole model and ``n_ctx``
  query/key dimensions in every head that has a bias (``d_head`` is the widest head). A ``-inf``
  bias entry becomes :data:`MASKED_SCORE`. Not with layer norm (it would read those dimensions)
  nor rotary (TransformerLens drops ``pos_embed`` then).
* Blocks are ``attention then MLP``: consecutive attention layers get a zero MLP between them, a
  feed-forward layer with no attention before it a zero attention; heads and widths are padded
  with zeros (padded heads' patterns are uniform and unused).
* Rotary heads: TransformerLens rotates adjacent pairs ``(2k, 2k+1)``, we rotate ``(k, k + m/2)``
  (same frequencies): the query/key columns are permuted. TransformerLens computes its rotary
  tables in float32, so rotary networks agree only to float32 precision (1e-5), even in float64.
* Softmax over the visible keys only. Hardmax layers export exactly when every head's scores tie
  (uniform attention, e.g. the ``mean`` and ``sum`` circuits), or as softmax of ``lam`` times the
  scores with ``hardmax_lambda=lam`` (the weight off the arg-max is then at most
  ``(n-1) exp(-lam g)`` per query, ``g`` the smallest score gap); otherwise they are refused.
  Refused with the fix: piecewise-linear activations (soften first), the infinite-past
  normaliser, mixing layers (a fixed mix is not a softmax pattern), mixed causality, mixed
  activations, layer norm on some layers only.

**Import** (:func:`from_transformer_lens`, :func:`network_from_config`, :func:`load_transformer_lens`) turns a native model
(no norm, LayerNorm or LNPre; ReLU or GELU; attention-only or not; standard or rotary positions;
grouped keys/values) into a :class:`Network` computing the same function on one-hot token
inputs (``b_K`` cancels in softmax; ``b_V W_O + b_O`` is added by a width-0 feed-forward layer).
Classic ``HookedTransformer`` checkpoints (``blocks.0.attn.W_Q [H, D, DH]`` ...) are converted
first with TransformerLens's ``convert_tl_checkpoint``.

The modules, one job each: :mod:`.export` (Network -> config and state dict, :class:`TLExport`),
:mod:`.folder` (write and read the folder), :mod:`.bridge` (boot it in TransformerLens),
:mod:`.check` (compare and verify against TransformerLens), :mod:`.load` (TransformerLens -> Network).
"""

from expressivity.export.transformer_lens.bridge import INSTALL, boot, bridge_input, load_bridge, require_transformer_lens
from expressivity.export.transformer_lens.check import METRICS, compare, our_float32, verify
from expressivity.export.transformer_lens.export import (DEFAULT_N_CTX, FORMAT, MASKED_SCORE, MAX_N_CTX,
                                                         ROTARY_FLOAT64_TOLERANCE, TL_VERSION, TOLERANCE, ExportError,
                                                         TLExport, to_transformer_lens)
from expressivity.export.transformer_lens.folder import FOLDER_FILES, read_folder_config, save_transformer_lens
from expressivity.export.transformer_lens.load import (CONFIG_DEFAULTS, from_transformer_lens, load_transformer_lens,
                                                       network_from_config)

__all__ = [
    "CONFIG_DEFAULTS", "DEFAULT_N_CTX", "FOLDER_FILES", "FORMAT", "INSTALL", "MASKED_SCORE", "MAX_N_CTX", "METRICS",
    "ROTARY_FLOAT64_TOLERANCE", "TL_VERSION", "TOLERANCE", "ExportError", "TLExport", "boot", "bridge_input", "compare",
    "from_transformer_lens", "load_bridge", "load_transformer_lens", "network_from_config", "our_float32",
    "read_folder_config", "require_transformer_lens", "save_transformer_lens", "to_transformer_lens", "verify",
]
