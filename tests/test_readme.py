"""The README, followed literally: every command in it runs, in order, in one fresh folder.

Convention (for everyone who edits the README):

* Commands go in ```` ```bash ```` fences, Python in ```` ```python ````; any other fence is text
  (layouts, JSON examples) and must not hold ``expressivity`` command lines.
* Every ``bash`` block runs command by command (``\\``-continued lines joined, ``#`` comments
  dropped) in one scratch folder shared with the Python blocks, which run in one namespace, in
  document order. Each command must exit 0.
* Shown output: a line ``#=> TEXT`` after a command (or anywhere in a Python block) says what the
  output contains: every ``...``-separated fragment of TEXT must appear in the command's stdout
  (the block's stdout for Python), in that order. Ordinary ``#`` comments are prose.
* A block that cannot run in test time gets a marker in an HTML comment directly above its fence
  (only blank lines or other markers between), always with the reason:

  ``<!-- readme-test: skip: REASON -->`` (not run; e.g. a full-scale run, a cluster, ``make``)
  ``<!-- readme-test: replace "OLD" with "NEW": REASON -->`` (run with every OLD replaced by
  NEW, e.g. fewer training steps; OLD must occur in the block).

Commands run with ``expressivity`` on the PATH (the interpreter's own ``bin``, as after ``source
.venv/bin/activate``) and this checkout's ``src`` first on ``PYTHONPATH``; the folder holds the
clone's ``experiments/`` (linked), as a clone does, and nothing else.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->", re.S)
SKIP = re.compile(r"^skip:\s*(\S.*)$", re.S)
REPLACE = re.compile(r'^replace\s+"((?:[^"\\]|\\.)*)"\s+with\s+"((?:[^"\\]|\\.)*)":\s*(\S.*)$', re.S)
COMMAND_TIMEOUT_S = 900


@dataclass
class Block:
    language: str
    code: str
    line: int
    skip: str | None = None
    replacements: list[tuple[str, str]] = field(default_factory=list)

    def where(self) -> str:
        return f"README.md line {self.line} ({self.language or 'text'} block)"


def parse(text: str) -> list[Block]:
    """The README's fenced blocks with their markers; ``ValueError`` on a malformed or stale marker."""
    blocks = []
    for match in FENCE.finditer(text):
        line = text[:match.start()].count("\n") + 1
        block = Block(match.group(1), match.group(2), line)
        above = text[:match.start()].rstrip("\n").split("\n")
        comments = []
        while above and (not above[-1].strip() or above[-1].strip().startswith("<!--")):
            if above[-1].strip():
                comments.append(above[-1])
            above.pop()
        for comment in reversed(comments):
            marker = MARKER.search(comment)
            if marker is None:
                continue
            body = " ".join(marker.group(1).split())
            if (skip := SKIP.match(body)) is not None:
                block.skip = skip.group(1)
            elif (rep := REPLACE.match(body)) is not None:
                old, new = (s.replace('\\"', '"') for s in rep.group(1, 2))
                if old not in block.code:
                    raise ValueError(f"{block.where()}: marker replaces {old!r}, which the block does not contain")
                block.replacements.append((old, new))
            else:
                raise ValueError(f"{block.where()}: malformed marker {comment.strip()!r}; write "
                                 "'readme-test: skip: REASON' or 'readme-test: replace \"OLD\" with \"NEW\": REASON'")
        if block.language not in ("bash", "python") and re.search(r"^\s*expressivity\s", block.code, re.M):
            raise ValueError(f"{block.where()}: expressivity commands outside a ```bash fence are never run; "
                             "fence them as bash (with a skip marker if they cannot run in test time)")
        blocks.append(block)
    return blocks


def commands(code: str) -> list[tuple[str, list[str]]]:
    """``(command, [shown output lines])`` of a bash block."""
    out: list[tuple[str, list[str]]] = []
    pending = ""
    for raw in code.split("\n"):
        line = raw.rstrip()
        if line.lstrip().startswith("#=>"):
            if not out:
                raise ValueError(f"shown output {line!r} before any command")
            out[-1][1].append(line.lstrip()[3:].strip())
            continue
        if pending:
            line = pending + " " + line.lstrip()
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append((line.strip(), []))
    return out


def shown_in(shown: str, output: str) -> bool:
    """Every ``...``-separated fragment of ``shown`` occurs in ``output``, in order."""
    at = 0
    for fragment in (f.strip() for f in shown.split("...")):
        if not fragment:
            continue
        at = output.find(fragment, at)
        if at < 0:
            return False
        at += len(fragment)
    return True


def python_shown(code: str) -> list[str]:
    return [line.strip()[3:].strip() for line in code.split("\n") if line.strip().startswith("#=>")]


# ---- the convention itself ----------------------------------------------------------------------

def test_the_parser_reads_markers_commands_and_shown_output():
    text = ('<!-- readme-test: skip: needs a cluster -->\n```bash\nray start\n```\n\n'
            '<!-- readme-test: replace "--task x" with "--task x --steps 2": test time -->\n'
            '```bash\nexpressivity train --task x \\\n  --json   # a comment\n#=> "ok": true ... 3\n```\n'
            '```json\n{"a": 1}\n```\n')
    skip, replace, text_block = parse(text)
    assert skip.skip == "needs a cluster" and replace.replacements == [("--task x", "--task x --steps 2")]
    assert commands(replace.code) == [('expressivity train --task x --json   # a comment', ['"ok": true ... 3'])]
    assert text_block.language == "json" and text_block.skip is None
    assert shown_in('"ok": true ... 3', '{"ok": true, "n": 3}') and not shown_in("3 ... ok", '{"ok": true, "n": 3}')
    with pytest.raises(ValueError, match="does not contain"):
        parse('<!-- readme-test: replace "nope" with "x": r -->\n```bash\nls\n```\n')
    with pytest.raises(ValueError, match="malformed marker"):
        parse('<!-- readme-test: skip -->\n```bash\nls\n```\n')
    with pytest.raises(ValueError, match="outside a ```bash fence"):
        parse("```\nexpressivity circuits\n```\n")


def test_every_readme_block_has_valid_markers_and_reasons():
    blocks = parse(README.read_text())
    assert sum(b.language == "bash" for b in blocks) >= 5 and sum(b.language == "python" for b in blocks) >= 2
    assert all(b.skip is None or len(b.skip) > 10 for b in blocks)


# ---- the README, run -----------------------------------------------------------------------------

def _environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"   # as after `source .venv/bin/activate`
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["COLUMNS"] = "100"
    return env


def test_the_readme_runs_as_written_in_a_fresh_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "experiments").symlink_to(ROOT / "experiments", target_is_directory=True)
    env = _environment()
    namespace: dict = {"__name__": "__readme__"}
    ran = 0
    for block in parse(README.read_text()):
        if block.skip is not None or block.language not in ("bash", "python"):
            continue
        code = block.code
        for old, new in block.replacements:
            code = code.replace(old, new)
        if block.language == "python":
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout):
                exec(compile(code, block.where(), "exec"), namespace)
            for shown in python_shown(code):
                assert shown_in(shown, stdout.getvalue()), f"{block.where()}: output lacks {shown!r}:\n{stdout.getvalue()}"
            ran += 1
            continue
        for command, shown in commands(code):
            done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
            assert done.returncode == 0, f"{block.where()}: `{command}` exited {done.returncode}:\n{done.stderr[-3000:]}"
            for text in shown:
                assert shown_in(text, done.stdout), f"{block.where()}: `{command}` output lacks {text!r}:\n{done.stdout[-3000:]}"
            ran += 1
    assert ran >= 25
