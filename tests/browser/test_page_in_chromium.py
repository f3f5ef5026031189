"""The network page in a real browser: headless Chromium from the system packages loads each page
from disk (no network), and the rendered result is checked: a screenshot that is not blank, every
head's heatmap present with a non-empty box, the inline script run, and no console errors."""

import io
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli
from tests.browser.cdp import Browser, find_chromium


def _chromium() -> str:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("EXPRESSIVITY_REQUIRE_BROWSER") == "1":
            pytest.fail("Chromium is required (EXPRESSIVITY_REQUIRE_BROWSER=1): apt-get install chromium, or make test")
        pytest.skip("Chromium is not installed (apt-get install chromium; make test installs it)")
    return binary


def _run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Pages of a softmax circuit, a hardmax circuit, Yun's softened network (5 attention layers),
    a trained model and a Wang & E network, written by `expressivity show`."""
    root = tmp_path_factory.mktemp("pages")
    _run("circuit", "shift", "--length", "6", "--out", root / "shift")
    _run("circuit", "reverse", "--length", "5", "--scale", "inf", "--out", root / "reverse")
    _run("yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
         "--out", root / "yun")
    _run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8",
         "--batch-size", "8", "--steps", "3", "--layers", "2", "--out", root / "train")
    _run("wang-e", "build", "--memory", "adaptive", "--length", "8", "--max-lag", "3", "--beta", "8", "--out", root / "we")
    made = {}
    for name, folder, extra in (("shift", root / "shift", ["--input", "3,1,4,1,5,6"]), ("reverse", root / "reverse", []),
                                ("yun", root / "yun" / "delta_1_2" / "softened", []), ("train", root / "train", []),
                                ("wang-e", root / "we", [])):
        page = root / f"{name}.html"
        obj = json.loads(_run("show", folder, "--out", page, *extra, "--json"))
        made[name] = (page, obj["heads"])
    return made


def _not_blank(png: bytes) -> None:
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    assert image.shape[0] >= 800 and image.shape[1] >= 1000
    inked = np.any(np.abs(image - 255) > 24, axis=-1).mean()
    colours = len(np.unique(image.reshape(-1, 3)[::7], axis=0))
    assert inked > 0.02 and colours > 20, (inked, colours)


def test_every_page_renders_with_every_heatmap_and_no_console_errors(pages, tmp_path):
    with Browser(_chromium()) as browser:
        for name, (page, heads) in pages.items():
            browser.load(page.resolve().as_uri())
            state = browser.evaluate("""JSON.stringify({
                ready: document.body.getAttribute('data-ready'),
                counted: document.body.getAttribute('data-heatmaps'),
                heatmaps: Array.from(document.querySelectorAll('svg.heatmap')).map(function (s) {
                    var r = s.getBoundingClientRect();
                    return {id: s.id, w: r.width, h: r.height, cells: s.querySelectorAll('rect').length}; }),
                status: document.getElementById('status').textContent,
                title: document.title})""")
            state = json.loads(state)
            assert state["ready"] == "1", name                      # the inline script ran to the end
            assert len(state["heatmaps"]) == heads > 0, name        # every head's heatmap is in the DOM
            for box in state["heatmaps"]:
                assert box["w"] > 20 and box["h"] > 20 and box["cells"] > 0, (name, box)
            assert state["status"].startswith(f"{state['counted']} heatmaps"), name
            assert browser.problems() == [], (name, browser.problems())
            png = browser.screenshot()
            (tmp_path / f"{name}.png").write_bytes(png)
            _not_blank(png)


def test_a_page_that_throws_is_caught_by_the_check(tmp_path):
    """The check can fail: a page with a script error and no heatmap is reported."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>"
                   "<script>undefinedFunction();</script></body></html>")
    with Browser(_chromium()) as browser:
        browser.load(bad.resolve().as_uri())
        assert any("exception" in p for p in browser.problems())
        assert browser.evaluate("document.querySelectorAll('svg.heatmap').length") == 0
