"""expressivity: executable Transformer expressivity theory.

Constructs Transformers with hand-set weights that provably realise sequence-to-sequence
functions, verifies them (exactly where the claim is exact), and trains small models to
measure what depth, heads, width and positional encodings buy.

The centre is :class:`expressivity.network.Network`: explicit weights, labelled residual
dimensions, one semantics run by three evaluators (exact, NumPy float64, PyTorch).
"""

__version__ = "0.1.0"
