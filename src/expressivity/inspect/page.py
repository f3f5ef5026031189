"""One self-contained HTML page per network: what every layer reads and writes, and what it does on an input.

:func:`network_page` returns the page as text (inline CSS, inline SVG, a few lines of inline
script; nothing is fetched, so it opens anywhere without a network). Sections:

1. the network: kind, size next to the paper's bound (from the construction's report, when one
   was saved), residual dimensions by label;
2. the layers: for every head and feed-forward layer, the labelled dimensions it reads and
   writes (from the non-zero rows and columns of its weights), its position bias and width;
3. the input and the output, under their labels;
4. attention patterns of every head on the input as heatmaps (query rows, key columns), and the
   fixed mixing matrices of mixing layers;
5. the residual stream after the input and after every layer, under the labels;
6. the construction's checks (with the arithmetic they ran in) and margins.

Everything on the page is evaluated by the NumPy float64 reference pass (the spec), or by the exact pass where
the claim holds in exact arithmetic only (Yun's modified networks), drawn as floats.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.export.folders import Saved
from expressivity.inspect.run import domain_text, outside_claim, token_answers
from expressivity.network.inputs import takes_tokens
from expressivity.network.layers import head_count, rule_for
from expressivity.network.network import PARAMETERS_COUNTED, Network

MAX_CELLS = 2_000_000     # heatmap and table cells on one page (keeps it openable)
# Marks a page as written by `expressivity show`, so a later `show --out` may replace it (and nothing else).
GENERATOR_TAG = '<meta name="generator" content="expressivity show">'

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;
padding:0 16px;color:#1d232a;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #d8dee4;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:18px 0 6px}.muted{color:#57606a}code{background:#f3f4f6;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:12.5px}td,th{border:1px solid #d8dee4;padding:2px 6px;
text-align:right}th{background:#f6f8fa;font-weight:600}td.l,th.l{text-align:left}.ok{color:#1a7f37;font-weight:600}
.bad{color:#cf222e;font-weight:600}.heads{display:flex;flex-wrap:wrap;gap:18px}.head{border:1px solid #d8dee4;
border-radius:6px;padding:8px}.head p{margin:2px 0 6px;font-size:12.5px}svg.heatmap rect:hover{stroke:#000;stroke-width:1}
#status{position:sticky;top:0;background:#fff8c5;border:1px solid #d4a72c;padding:2px 8px;border-radius:4px;
font-size:12.5px;min-height:1.4em;display:inline-block}.scroll{overflow-x:auto}
"""

SCRIPT = """
(function () {
  var status = document.getElementById('status');
  var maps = document.querySelectorAll('svg.heatmap');
  document.body.setAttribute('data-heatmaps', String(maps.length));
  for (var i = 0; i < maps.length; i++) {
    maps[i].addEventListener('mouseover', function (ev) {
      var t = ev.target.getAttribute('data-v');
      if (t !== null) { status.textContent = t; }
    });
  }
  status.textContent = maps.length + ' heatmaps; hover over a cell for its value';
  document.body.setAttribute('data-ready', '1');
})();
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _fmt(v) -> str:
    f = float(v)
    if not math.isfinite(f):
        return str(f)
    if f == 0:
        return "0"
    if abs(f) >= 1e5 or abs(f) < 1e-3:
        return f"{f:.3g}"
    return f"{f:.4g}"


def _support(mask: np.ndarray, labels) -> str:
    names = [labels[k] for k in range(len(labels)) if mask[k]]
    if not names:
        return "nothing"
    if len(names) > 12:
        return ", ".join(names[:10]) + f", ... ({len(names)} dims)"
    return ", ".join(names)


def _rows(*mats) -> np.ndarray:
    return np.any(np.concatenate([np.asarray(m, dtype=np.float64) != 0 for m in mats], axis=1), axis=1)


def _cols(*mats) -> np.ndarray:
    return np.any(np.concatenate([np.asarray(m, dtype=np.float64) != 0 for m in mats], axis=0), axis=0)


def _attention_rows(layer, labels) -> tuple[str, list[dict]]:
    """How an attention layer normalises, and per head: what its scores, values and output touch."""
    how = ("hardmax" if layer.normalization == "hardmax"
           else f"softmax, inverse temperature {_fmt(float(layer.inverse_temperature))}")
    if layer.normaliser == "infinite":
        how += ", over an infinite past"
    parts = []
    for h, head in enumerate(layer.heads):
        content = not head.is_dp_free and bool(np.any(_rows(head.W_Q, head.W_K)))
        sources = [("query . key of " + _support(_rows(head.W_Q, head.W_K), labels)
                    + (" (rotary)" if head.rotary else ""))] if content else []
        if head.position_bias is not None:
            sources.append(f"position bias {head.position_bias.describe()}")
        parts.append({"part": f"head {h}" + (f" ({head.name})" if head.name else ""),
                      "scores from": " + ".join(sources) or "nothing (uniform over the keys)",
                      "reads values": _support(_rows(head.W_V), labels),
                      "writes": _support(_cols(head.W_O), labels),
                      "width": f"m={head.size}, m_v={head.W_V.shape[1]}"})
    return how + (", causal" if layer.causal else ""), parts


def _feedforward_rows(layer, labels) -> tuple[str, list[dict]]:
    """A feed-forward layer's activation and width, and what it reads and writes."""
    writes = _support(_cols(layer.W_2, np.asarray(layer.b_2, dtype=np.float64)[None]), labels)
    return (f"{layer.activation.describe()}, width {layer.width}",
            [{"part": "feed-forward", "scores from": "", "reads values": _support(_rows(layer.W_1), labels),
              "writes": writes, "width": f"r={layer.width}"}])


def _mixing_rows(layer, labels) -> tuple[str, list[dict]]:
    """Per head of a mixing layer: its fixed matrix or convolution, what its values and output touch."""
    parts = []
    for h, head in enumerate(layer.heads):
        how = (f"matrix {head.length}x{head.length}" if head.matrix is not None
               else f"convolution K={head.kernel.shape[0]}, left={head.left}")
        parts.append({"part": f"head {h}", "scores from": how, "reads values": _support(_rows(head.W_V), labels),
                      "writes": _support(_cols(head.W_O), labels), "width": f"m_v={head.W_V.shape[1]}"})
    return "fixed mixing along the sequence", parts


# layer kind -> (how it works, its parts) for the page's layer list
_LAYER_ROWS = {"attention": _attention_rows, "feedforward": _feedforward_rows, "mixing": _mixing_rows}


def layer_rows(net: Network) -> list[dict]:
    """What each layer's parts read and write, by label (the page's layer list)."""
    out = []
    for k, layer in enumerate(net.layers):
        how, parts = rule_for(_LAYER_ROWS, layer, "HTML page")(layer, net.labels)
        out.append({"index": k, "kind": layer.kind, "name": layer.name, "norm": layer.norm is not None, "parts": parts,
                    "how": how})
    return out


def _mixing_matrix(head, n: int) -> np.ndarray:
    if head.matrix is not None:
        return np.asarray(head.matrix, dtype=np.float64)[:n, :n]
    K = head.kernel.shape[0]
    M = np.zeros((n, n))          # a 1-channel picture: the taps of the first value channel
    taps = np.asarray(head.kernel, dtype=np.float64)[:, 0]
    for i in range(n):
        for u in range(K):
            j = i - head.left + u
            if 0 <= j < n:
                M[i, j] = taps[u]
    return M


def _color(v: float, scale: float, signed: bool) -> str:
    if not math.isfinite(v) or scale == 0:
        return "#ffffff"
    t = max(-1.0, min(1.0, v / scale))
    if not signed or t >= 0:
        r, g, b = (int(255 - t * (255 - c)) for c in ((33, 102, 172) if not signed else (178, 24, 43)))
        return f"#{r:02x}{g:02x}{b:02x}"
    t = -t
    r, g, b = (int(255 - t * (255 - c)) for c in (33, 102, 172))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(M: np.ndarray, element_id: str, title: str, signed: bool = False, cell: int | None = None,
                attrs: str = "") -> str:
    """An inline SVG heatmap of ``M`` (rows: queries, columns: keys), one ``rect`` per cell with its value."""
    n_r, n_c = M.shape
    cell = cell or max(6, min(28, 360 // max(n_r, n_c, 1)))
    pad = 24
    w, h = pad + n_c * cell + 4, pad + n_r * cell + 4
    scale = float(np.max(np.abs(M[np.isfinite(M)]), initial=0.0)) if signed else 1.0
    parts = [f'<svg class="heatmap" id="{_e(element_id)}" {attrs} width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'role="img" aria-label="{_e(title)}">']
    step = max(1, n_c // 16)
    for j in range(0, n_c, step):
        parts.append(f'<text x="{pad + j * cell + cell / 2:.1f}" y="{pad - 6}" font-size="9" text-anchor="middle" '
                     f'fill="#57606a">{j}</text>')
    for i in range(0, n_r, step):
        parts.append(f'<text x="{pad - 4}" y="{pad + i * cell + cell * 0.7:.1f}" font-size="9" text-anchor="end" '
                     f'fill="#57606a">{i}</text>')
    for i in range(n_r):
        for j in range(n_c):
            v = float(M[i, j])
            label = f"query {i}, key {j}: {_fmt(v)}"
            parts.append(f'<rect x="{pad + j * cell}" y="{pad + i * cell}" width="{cell}" height="{cell}" '
                         f'fill="{_color(v, scale, signed)}" stroke="#eaeef2" stroke-width="0.5" data-v="{_e(label)}">'
                         f'<title>{_e(label)}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def _value_table(values: np.ndarray, col_labels, row_labels, signed: bool = True) -> str:
    values = np.asarray(values, dtype=np.float64)
    scale = float(np.max(np.abs(values[np.isfinite(values)]), initial=0.0))
    head = "".join(f"<th>{_e(c)}</th>" for c in col_labels)
    rows = []
    for r, row in zip(row_labels, values):
        cells = "".join(f'<td style="background:{_color(v, scale, signed)}'
                        f'{";color:#fff" if scale and abs(v) > 0.6 * scale else ""}">{_e(_fmt(v))}</td>' for v in row)
        rows.append(f'<tr><th class="l">{_e(r)}</th>{cells}</tr>')
    return f'<div class="scroll"><table><tr><th class="l">token</th>{head}</tr>{"".join(rows)}</table></div>'


def _stored_tensor_entries(folder) -> int | None:
    """The number of entries in a TransformerLens folder's ``model.safetensors`` (its header's shapes; nothing
    loaded), or ``None`` where it cannot be read."""
    from safetensors import safe_open

    try:
        with safe_open(str(Path(folder) / "model.safetensors"), framework="numpy") as f:
            return int(sum(math.prod(f.get_slice(key).get_shape()) for key in f.keys()))
    except Exception:   # the folder was read already; a page does not fail over an extra count
        return None


def _size_section(net: Network, report: dict | None, saved: Saved | None = None) -> str:
    # What "parameters" counts, said on the page: the network read back from a TransformerLens folder is counted
    # in expressivity's layout, which differs from the state dict's (an audit, 2026-11-28: 304 shown, 326 stored).
    items = [("width d", net.d), ("layers", len(net.layers)),
             *((f"{title} layers", count) for title, count in net.layer_breakdown()),
             ("parameters", f"{net.parameter_count()} ({_e(PARAMETERS_COUNTED)})")]
    if saved is not None and saved.kind == "transformer-lens":
        stored = _stored_tensor_entries(saved.folder)
        if stored is not None:
            items.append(("TransformerLens parameters", f"{stored} (every entry of model.safetensors, in "
                                                        "TransformerLens's own layout)"))
    size = (report or {}).get("size") or {}
    bound = size.get("paper_bound")
    if bound is not None:
        # this network's parameters over the bound: a report shared by two networks (Yun's modified and
        # softened forms) states the softened one's ratio, which the modified one's page showed as its own
        number = isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound) and bound > 0
        items.append(("paper's bound", f"{_e(_num(bound))} ({_e(size.get('bound') or '')})"))
        items.append(("parameters / bound", _fmt(net.parameter_count() / bound) if number else ""))
    rows = "".join(f'<tr><th class="l">{_e(k)}</th><td>{_e(v) if not isinstance(v, str) else v}</td></tr>'
                   for k, v in items)
    return f"<table>{rows}</table>"


def _layers_section(net: Network) -> str:
    out = []
    for entry in layer_rows(net):
        title = f"[{entry['index']}] {entry['kind']}" + (f": {entry['name']}" if entry["name"] else "")
        pre = " &middot; pre-layer-norm" if entry["norm"] else ""
        rows = "".join(f'<tr><td class="l">{_e(p["part"])}</td><td class="l">{_e(p["scores from"])}</td>'
                       f'<td class="l">{_e(p["reads values"])}</td><td class="l">{_e(p["writes"])}</td>'
                       f'<td class="l">{_e(p["width"])}</td></tr>' for p in entry["parts"])
        out.append(f'<h3>{_e(title)}</h3><p class="muted">{_e(entry.get("how", ""))}{pre}</p>'
                   '<table><tr><th class="l">part</th><th class="l">scores from (attention) / kind</th>'
                   f'<th class="l">reads</th><th class="l">writes</th><th class="l">size</th></tr>{rows}</table>')
    return "".join(out)


def _checks_section(report: dict | None, where) -> str:
    if not report:
        return '<p class="muted">No construction report was saved beside this network.</p>'
    out = [f'<p class="muted">From <code>{_e(where)}</code>: {_e(report.get("construction", ""))} &mdash; '
           f'{_e(report.get("claim", ""))}</p>']
    checks = report.get("checks") or []
    if checks:
        rows = "".join(
            f'<tr><td class="l">{_e(c.get("property"))}</td><td>{_e(c.get("points"))}</td><td>{_e(c.get("failures"))}</td>'
            f'<td class="l {"ok" if c.get("passed") is True else "bad"}">{"passed" if c.get("passed") is True else "FAILED"}'
            '</td>'
            f'<td class="l">{_e(c.get("arithmetic"))}</td></tr>' for c in checks if isinstance(c, dict))
        out.append('<table><tr><th class="l">check</th><th>points</th><th>failures</th><th class="l">result</th>'
                   f'<th class="l">arithmetic</th></tr>{rows}</table>')
    errors = report.get("errors") or []
    if errors:
        rows = "".join(f'<tr><td class="l">{_e(e.get("name"))}</td><td>{_e(_num(e.get("value")))}</td>'
                       f'<td>{_e(_num(e.get("bound")))}</td><td class="l">{_e(e.get("method"))}</td></tr>'
                       for e in errors if isinstance(e, dict))
        out.append('<table><tr><th class="l">error</th><th>value</th><th>bound</th><th class="l">method</th></tr>'
                   f'{rows}</table>')
    for title, key in (("margins", "margins"), ("bounds", "bounds")):
        values = report.get(key) or {}
        if values:
            rows = "".join(f'<tr><th class="l">{_e(k)}</th><td>{_e(_num(v))}</td></tr>' for k, v in values.items())
            out.append(f"<h3>{title}</h3><table>{rows}</table>")
    return "".join(out)


def _num(v) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _fmt(v)
    return "" if v is None else str(v)


def _attention_pictures(k: int, layer, H: np.ndarray, n: int) -> str:
    """Heatmaps of an attention layer's weights on its input residual ``H`` ``(1, n, d)``, one per head."""
    from expressivity.network.reference import attention_weights

    A = attention_weights(layer, H)[0]
    # a head whose output weights are all zero writes nothing: the padding heads a TransformerLens export adds (50
    # heatmaps on the page of a Yun export whose network has 9, a fresh audit, 2026-11-29) are counted, not drawn
    silent = [h for h, head in enumerate(layer.heads) if not np.any(np.asarray(head.W_O, dtype=np.float64))]
    cards = [f'<div class="head"><p><b>layer {k}, head {h}</b> {_e(head.name)}</p>'
             + heatmap_svg(A[h], f"attn-{k}-{h}", f"attention of layer {k} head {h}",
                           attrs=f'data-layer="{k}" data-head="{h}" data-kind="attention"') + "</div>"
             for h, head in enumerate(layer.heads) if h not in silent]
    note = "" if not silent else (
        f'<p class="muted">{len(silent)} head(s) with all-zero output weights (they write nothing) not drawn: '
        f'{", ".join(map(str, silent))}</p>' if len(silent) < len(layer.heads) else
        f'<p class="muted">every head has all-zero output weights: the layer writes nothing (a zero sublayer an '
        f'export inserts), so none of its {len(silent)} head(s) is drawn</p>')
    return f'<h3>layer {k}: {_e(layer.name or "attention")}</h3>{note}<div class="heads">{"".join(cards)}</div>'


def _mixing_pictures(k: int, layer, H: np.ndarray, n: int) -> str:
    """Heatmaps of a mixing layer's fixed matrices (they do not depend on the input ``H``)."""
    def channels(head) -> str:   # a convolution has taps per value channel; the picture is the first one's
        if head.matrix is not None or np.asarray(head.kernel).shape[1] < 2:
            return ""
        return (f'<p class="muted">channel 0 of {np.asarray(head.kernel).shape[1]}: each channel has its own taps '
                '(a depth-wise convolution)</p>')

    cards = [f'<div class="head"><p><b>layer {k}, mixing head {h}</b></p>'
             + heatmap_svg(_mixing_matrix(head, n), f"mix-{k}-{h}", f"mixing matrix of layer {k} head {h}"
                           + ("" if head.matrix is not None else ", channel 0"), signed=True,
                           attrs=f'data-layer="{k}" data-head="{h}" data-kind="mixing"') + channels(head) + "</div>"
             for h, head in enumerate(layer.heads)]
    return (f'<h3>layer {k}: {_e(layer.name or "mixing")} (fixed, input-independent)</h3>'
            f'<div class="heads">{"".join(cards)}</div>')


def _no_pictures(k: int, layer, H: np.ndarray, n: int) -> str:
    return ""   # a feed-forward layer mixes no tokens: its effect shows in the residual stream


# layer kind -> its heatmaps on the page (attention: patterns on the input; mixing: the fixed matrices)
_PICTURES = {"attention": _attention_pictures, "mixing": _mixing_pictures, "feedforward": _no_pictures}


def _evaluate_for_page(net: Network, X: np.ndarray, allow_length: bool, allow_outside: bool):
    """Outputs ``(1, n, d_out)`` and residuals (``len(layers) + 1`` arrays ``(1, n, d)``) of the float64
    reference pass on ``X`` ``(n, d_in)`` (exact or float: the claim is checked on it as given), or of the
    exact pass, drawn as floats, where the claim holds in exact arithmetic only (Yun's modified networks:
    float64 answers another cell's value near a cell boundary); refused when the page would be too big
    or a value is not finite."""
    from expressivity.inspect.run import default_dtype
    from expressivity.network.reference import forward

    exact = default_dtype(net) == "exact"
    # the arithmetic the page draws is part of the claim: a reversal at |x| = 1e12, past its float64 limit of 56,295,
    # was drawn "within_claim: true", off by 4.9e-4 (an audit, 2026-11-29)
    net.check_input(X, allow_length=allow_length, allow_outside=allow_outside,
                    arithmetic="exact" if exact else "float64")
    X_given, X = X, _floats(X)
    n = X.shape[0]
    heads = head_count(net.layers)
    cells = heads * n * n + (len(net.layers) + 1) * n * net.d
    if cells > MAX_CELLS:
        raise ExpressivityError(f"the page would draw {cells:,} cells ({heads} heads x {n}^2 plus the residual stream); "
                                f"the limit is {MAX_CELLS:,}: give a shorter --input")
    if exact:
        from expressivity.network.exact import forward_exact

        out, residuals = forward_exact(net, np.asarray(X_given, dtype=object)[None], return_residuals=True,
                                       allow_length=True, allow_outside=True)
        out, residuals = _floats(out), [_floats(r) for r in residuals]
        return out, residuals
    with np.errstate(all="ignore"):   # the claim was checked above, on X as given
        out, residuals = forward(net, X[None], return_residuals=True, allow_length=True, allow_outside=True)
    if not (np.all(np.isfinite(out)) and all(np.all(np.isfinite(r)) for r in residuals)):
        raise ExpressivityError(f"network {net.name!r} produced non-finite values in float64 on this input; use smaller "
                                "input values")
    return out, residuals


def _residual_section(net: Network, residuals, tokens) -> str:
    """Tables of the residual stream (each ``(1, n, d)``) after the input and after every layer."""
    where = ["input (embedded, with positions)"] + [f"after layer {k}" + (f": {layer.name}" if layer.name else "")
                                                     for k, layer in enumerate(net.layers)]
    return "".join(f"<h3>{_e(w)}</h3>" + _value_table(R[0], net.labels, tokens) for w, R in zip(where, residuals))


def _answers_section(net: Network, X: np.ndarray, out: np.ndarray) -> str:
    """A token network's input value, answer and arg-max output column per position (empty for other networks)."""
    if not takes_tokens(net):
        return ""
    found = token_answers(net, X, out)
    answers = found.get("answers", ["-"] * len(X))
    rows = "".join(f"<tr><td>{i}</td><td>{_e(v)}</td><td>{_e(a)}</td><td>{k}</td></tr>"
                   for i, (v, a, k) in enumerate(zip(found["input_values"], answers, found["argmax"])))
    return ('<table id="answers"><tr><th>position</th><th>input</th><th>answer</th><th>arg-max column</th></tr>'
            f"{rows}</table>")


def _source_line(saved: Saved) -> str:
    """Where the network came from (kind, folder, training task) and whether its checks passed."""
    report = saved.report
    ok = "" if not report else (' &middot; <span class="ok">all checks passed</span>' if report.get("ok") is True
                                else ' &middot; <span class="bad">a check FAILED</span>')
    source = f"{saved.kind} &middot; <code>{_e(saved.folder)}</code>"
    if saved.info.get("task"):
        source += (f" &middot; task {_e(saved.info['task'])} {_e(saved.info.get('task_args') or '')} &middot; "
                   f"status {_e(saved.info.get('status'))} after {_e(saved.info.get('step'))} steps")
    return source + ok


def _floats(X: np.ndarray) -> np.ndarray:
    try:
        return np.asarray(X, dtype=np.float64)
    except OverflowError:
        raise ExpressivityError("an input value is beyond the float64 range (|v| > 1.8e308), which the page's float64 "
                                "pass cannot draw; use smaller values") from None


def page_outside_claim(net: Network, X: np.ndarray, out: np.ndarray, allow_outside: bool,
                       given: bool = True) -> str | None:
    """What the page says about the claim for input ``X`` ``(n, d_in)`` as given and the page's answer ``out``
    ``(1, n, d_out)``: ``None`` inside it, else the note. Where the claim is exact but the page drew the float64 pass,
    the answer is checked against exact arithmetic as ``run`` checks it, and a difference is refused unless
    ``allow_outside`` (then noted): ``show`` drew 4.16e-17 for the sum circuit's exact 0 "within the claim", which
    ``run`` refused (a fresh audit, 2026-11-29). ``given``: ``X`` was typed with ``--input`` (else the page's
    example input, which the refusal names as such rather than as ``--input``)."""
    from expressivity.errors import NetworkError
    from expressivity.inspect.run import differs_from_exact, default_dtype, input_rounding

    outside = outside_claim(net, X, "exact" if default_dtype(net) == "exact" else "float64")
    if outside is not None or default_dtype(net) == "exact" or net.input_domain is None or not net.input_domain.exact:
        return outside
    outs = net.output_labels or tuple(f"y[{k}]" for k in range(net.d_out))
    differs, agreement = differs_from_exact(net, X, out[0], "float64", input_rounding(X, "float64"), outs)
    if differs is None:
        return None
    if not allow_outside:
        fix = ("`expressivity run --dtype exact` gives the exact answer" if agreement is not None else
               "show the network it was made from (a saved network runs in exact arithmetic)")
        what = "--input" if given else "the example input (no --input given)"
        raise NetworkError(f"{what}: {differs}; the page draws the float64 pass: {fix}, or pass --allow-outside to "
                           "draw it, marked")
    return f"outside the construction's claim: {differs}; the output is not covered by any check"


def network_page(saved: Saved, X: np.ndarray, input_text: str | None = None, allow_length: bool = False,
                 allow_outside: bool = False) -> str:
    """The HTML page of ``saved.network`` on input ``X`` (see :func:`page_and_claim`), as text."""
    return page_and_claim(saved, X, input_text, allow_length, allow_outside)[0]


def page_and_claim(saved: Saved, X: np.ndarray, input_text: str | None = None, allow_length: bool = False,
                   allow_outside: bool = False) -> tuple[str, str | None]:
    """The HTML page of ``saved.network`` on input ``X`` ``(n, d_in)`` (exact numbers or floats), as text.

    A length outside the network's valid lengths is refused unless ``allow_length``, values outside
    its input domain unless ``allow_outside``; the page then says, at the top, that what it shows is
    outside the construction's claim. It names the input domain, and on a token network the answer
    (the decoded output) at every position. Returns the page and what it says about the claim
    (:func:`page_outside_claim`: ``None`` inside it)."""
    net = saved.network
    out, residuals = _evaluate_for_page(net, X, allow_length, allow_outside)
    outside = page_outside_claim(net, X, out, allow_outside, given=bool(input_text))
    X = _floats(X)
    n = X.shape[0]
    tokens = [str(i) for i in range(n)]
    outs = net.output_labels or tuple(f"y[{k}]" for k in range(net.d_out))
    attn_html = [rule_for(_PICTURES, layer, "HTML page")(k, layer, residuals[k], n) for k, layer in enumerate(net.layers)]
    attn_html = [part for part in attn_html if part]
    resid_html = _residual_section(net, residuals, tokens)
    report = saved.report
    source = _source_line(saved)
    given = f"<code>{_e(input_text)}</code>" if input_text else "an example input (give your own with --input)"
    from expressivity.inspect.run import default_dtype

    arithmetic = ("in exact rational arithmetic (the claim holds in it), drawn as floats"
                  if default_dtype(net) == "exact" else "in NumPy float64 (the reference pass)")
    body = f"""
<h1>{_e(net.name or 'network')}</h1>
<p class="muted">{source}</p>
{'' if outside is None else f'<p class="bad" id="outside-claim">{_e(outside)}</p>'}
<div id="status"></div>
<h2>Size</h2>{_size_section(net, report, saved)}
<h2>Residual dimensions</h2><p>{_e(', '.join(f'{k}:{lab}' for k, lab in enumerate(net.labels)))}</p>
<p class="muted">input: {_e(', '.join(net.input_labels))}{' &rarr; embedding' if net.embedding is not None else ''}
{' &middot; positional encoding' if net.positional_encoding is not None else ''} &middot; output: {_e(', '.join(outs))}</p>
<h2>Layers: what each head and MLP reads and writes</h2>{_layers_section(net)}
<h2>Input and output</h2><p>Input: {given}, {n} tokens, evaluated {arithmetic}.</p>
<p id="input-domain">Input domain ({'what the model was trained on; a trained model carries no proven claim'
                                     if net.trained else 'what the model takes; it records no claim'
                                     if net.input_domain is not None and not net.input_domain.is_claim
                                     else 'what the claim covers'}): {_e(domain_text(net))}</p>
{_answers_section(net, X, out[0])}{_value_table(X, net.input_labels, tokens)}{_value_table(out[0], outs, tokens)}
<h2>Attention patterns</h2><p class="muted">Rows are queries, columns keys; darker is more weight.</p>
{''.join(attn_html) or '<p class="muted">This network has no attention layers.</p>'}
<h2>Residual stream</h2><p class="muted">After the input and after every layer; red positive, blue negative.</p>
{resid_html}
<h2>Checks and margins</h2>{_checks_section(report, saved.report_path)}
"""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR_TAG}<title>{_e(net.name or "network")}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
            f'<style>{CSS}</style></head>'
            f'<body data-ready="0">{body}<script>{SCRIPT}</script></body></html>\n'), outside
