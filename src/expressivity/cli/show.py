"""``expressivity show``: one self-contained HTML page for a saved network."""

from __future__ import annotations

import click

from expressivity.cli.common import console, emit_json, human_output_to_stderr, run_record, warn
from expressivity.records import OutputFile, staged_file
from expressivity.errors import ExpressivityError


@click.command("show")
@click.argument("path", type=str)
@click.option("--input", "input_text", default=None,
              help="The input whose attention patterns and residual stream the page shows (as for `expressivity run`); "
                   "default: an example input.")
@click.option("--out", type=str, required=True, help="The HTML file to write.")
@click.option("--allow-length", "allow_length", is_flag=True,
              help="Draw an input whose length is outside the lengths the network is built and verified for; the "
                   "page then says it is outside the construction's claim.")
@click.option("--allow-outside", "allow_outside", is_flag=True,
              help="Draw an input with values outside the input domain the network is built and verified for; the "
                   "page then says it is outside the construction's claim.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def show(path, input_text, out, allow_length, allow_outside, as_json):
    """Write one HTML page (no network access needed to open it) for the saved network at PATH: the layers and what
    each head and MLP reads and writes, the size next to the paper's bound, every head's attention pattern on the
    input (and every mixing head's fixed matrix), the residual stream per layer, and the construction's checks and margins."""
    from expressivity.export.folders import load_saved
    from expressivity.inspect.page import GENERATOR_TAG, page_and_claim
    from expressivity.errors import NetworkError
    from expressivity.inspect.run import as_flags, claim_status, domain_text, no_claim_text, parse_input
    from expressivity.network.inputs import default_input

    if not out.strip():
        raise ExpressivityError("--out must name an HTML file, such as page.html")
    staging = staged_file(out, OutputFile.tagged("show", "an HTML page", GENERATOR_TAG.encode()))
    out = staging.path
    if out.suffix.lower() not in (".html", ".htm"):   # as plot refuses a name not ending in .png (a fresh audit, 2026-11-29)
        raise ExpressivityError(f"--out {out} must be a file name ending in .html, such as page.html: the page is an "
                                "HTML file, which a browser opens by its suffix")
    record = run_record("show", {"path": str(path), "input": input_text, "out": str(out), "allow_length": allow_length,
                                 "allow_outside": allow_outside})
    with human_output_to_stderr(as_json):
        saved = load_saved(path)
        warn(saved)
        try:
            if input_text is None:
                # the page's own example is drawn inside the claim, so the flags cannot apply; they were taken
                # silently, exit 0 (a fuzz pass, 2026-11-29), as export --to network refuses them
                given = [flag for flag, on in (("--allow-length", allow_length), ("--allow-outside", allow_outside))
                         if on]
                if given:
                    raise ExpressivityError(f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} only "
                                            "with --input: the page's own example needs neither; drop "
                                            f"{'them' if len(given) > 1 else 'it'}, or give --input")
                X = default_input(saved.network, saved.typical_length())
            else:
                X = parse_input(saved.network, input_text, allow_length, allow_outside)   # exact: checked as typed
            page, outside = page_and_claim(saved, X, input_text, allow_length, allow_outside)
        except NetworkError as exc:   # the library's keyword spelled as this command's flag (a fuzz, 2026-11-28)
            raise NetworkError(as_flags(str(exc))) from None
        with staging as temp:
            temp.write_text(page, encoding="utf-8")
    # one heatmap per head drawn: attention patterns and mixing matrices (heads that write nothing are not drawn)
    heads = page.count('<svg class="heatmap"')
    n = int(X.shape[0])
    within = claim_status(saved.network, outside)
    result = {"page": str(out), "bytes": len(page.encode()), "heads": heads, "tokens": n,
              "valid_lengths": saved.network.lengths.describe(), "input_domain": domain_text(saved.network),
              "within_claim": within, **({"outside_claim": outside} if outside else {}),
              **({"claim": no_claim_text(saved.network)} if within is None else {}),
              "source": saved.describe(), "run": record,
              **({"warnings": list(saved.warnings)} if saved.warnings else {})}
    if as_json:
        emit_json(result)
        return
    console.print(f"wrote {out} ({result['bytes'] / 1024:.0f} KiB): {heads} heatmap(s), one per head, on {X.shape[0]} "
                  "tokens; open it in a browser (self-contained, works offline)", markup=False, soft_wrap=True)
