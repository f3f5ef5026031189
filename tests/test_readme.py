"""The README and every guide page under ``docs/``, followed literally: every command in a page runs,
in order, in one fresh folder of its own.

Convention (for everyone who edits the README or a page under ``docs/``):

* Commands go in ```` ```bash ```` fences, Python in ```` ```python ````; any other fence is text
  (layouts, JSON examples) and must not hold ``expressivity`` command lines.
* Every ``bash`` block runs command by command (``\\``-continued lines joined, ``#`` comments
  dropped) in one scratch folder per page, shared with the page's Python blocks, which run in one
  namespace per page, in document order. Each command must exit 0. Pages do not share folders: a
  page that needs a trained run or a saved network makes it itself.
* Shown output: a line ``#=> TEXT`` after a command (or anywhere in a Python block) says what the
  output contains: every ``...``-separated fragment of TEXT must appear in the command's stdout
  (the block's stdout for Python), in that order. Ordinary ``#`` comments are prose.
* A block that cannot run in test time gets a marker in an HTML comment directly above its fence
  (only blank lines or other markers between), always with the reason:

  ``<!-- readme-test: skip: REASON -->`` (not run; e.g. a full-scale run, a cluster, ``make``)
  ``<!-- readme-test: replace "OLD" with "NEW": REASON -->`` (run with every OLD replaced by
  NEW, e.g. fewer training steps; OLD must occur in the block).
  ``<!-- readme-test: same as docs/PAGE.md: REASON -->`` (not run here because PAGE runs it: every
  command of the block, after its own replacements, must be a command of PAGE's run blocks, in the
  same order, showing at least the same ``#=>`` lines there; a Python block must occur verbatim in
  one of PAGE's run Python blocks. The README's examples use it, so each runs once per test.)

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
DOCS = ROOT / "docs"
PAGES = [README, *sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] != "results")]
# docs/results/ holds finished runs' files (criterion.md beside verdict.json), not guide pages
README_MAX_LINES = 300
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->", re.S)
SKIP = re.compile(r"^skip:\s*(\S.*)$", re.S)
REPLACE = re.compile(r'^replace\s+"((?:[^"\\]|\\.)*)"\s+with\s+"((?:[^"\\]|\\.)*)":\s*(\S.*)$', re.S)
SAME_AS = re.compile(r"^same as\s+(\S+\.md):\s*(\S.*)$", re.S)
COMMAND_TIMEOUT_S = 900


def page_name(path: Path) -> str:
    """``README.md`` or ``docs/...``: a page as the markers and messages name it."""
    return path.relative_to(ROOT).as_posix()


@dataclass
class Block:
    language: str
    code: str
    line: int
    page: str = "README.md"
    skip: str | None = None
    same_as: str | None = None
    replacements: list[tuple[str, str]] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.page} line {self.line} ({self.language or 'text'} block)"

    def runs(self) -> bool:
        return self.skip is None and self.same_as is None and self.language in ("bash", "python")

    def replaced(self) -> str:
        code = self.code
        for old, new in self.replacements:
            code = code.replace(old, new)
        return code


def parse(text: str, page: str = "README.md") -> list[Block]:
    """A page's fenced blocks with their markers; ``ValueError`` on a malformed or stale marker."""
    blocks = []
    for match in FENCE.finditer(text):
        line = text[:match.start()].count("\n") + 1
        block = Block(match.group(1), match.group(2), line, page)
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
            elif (same := SAME_AS.match(body)) is not None:
                block.same_as = same.group(1)
            elif (rep := REPLACE.match(body)) is not None:
                old, new = (s.replace('\\"', '"') for s in rep.group(1, 2))
                if old not in block.code:
                    raise ValueError(f"{block.where()}: marker replaces {old!r}, which the block does not contain")
                block.replacements.append((old, new))
            else:
                raise ValueError(f"{block.where()}: malformed marker {comment.strip()!r}; write "
                                 "'readme-test: skip: REASON', 'readme-test: replace \"OLD\" with \"NEW\": REASON' "
                                 "or 'readme-test: same as docs/PAGE.md: REASON'")
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


def without_comment(command: str) -> str:
    """A command line without its trailing ``# comment`` (so a page and the README may word it differently)."""
    return re.sub(r"\s+#\s.*$", "", command).strip()


def same_as_problems(block: Block, page_blocks: list[Block]) -> list[str]:
    """Why ``block`` (marked ``same as PAGE``) is not run by ``page_blocks``, PAGE's blocks; ``[]`` if it is."""
    running = [b for b in page_blocks if b.runs() and b.language == block.language]
    if block.language == "python":
        code = block.replaced().strip()
        return [] if any(code in b.replaced() for b in running) else ["its code occurs in no run Python block"]
    page_commands = [(without_comment(c), shown) for b in running for c, shown in commands(b.replaced())]
    at = 0
    for command, shown in commands(block.replaced()):
        found = next((i for i in range(at, len(page_commands)) if page_commands[i][0] == without_comment(command)), None)
        if found is None:
            return [f"`{command}` is not a later command of the page's run blocks"]
        missing = [s for s in shown if s not in page_commands[found][1]]
        if missing:
            return [f"`{command}` there does not show {missing}"]
        at = found + 1
    return []


# ---- the convention itself ----------------------------------------------------------------------

def test_the_parser_reads_markers_commands_and_shown_output():
    text = ('<!-- readme-test: skip: needs a cluster -->\n```bash\nray start\n```\n\n'
            '<!-- readme-test: replace "--task x" with "--task x --steps 2": test time -->\n'
            '```bash\nexpressivity train --task x \\\n  --json   # a comment\n#=> "ok": true ... 3\n```\n'
            '```json\n{"a": 1}\n```\n'
            '<!-- readme-test: same as docs/x.md: runs there -->\n```bash\nls\n```\n')
    skip, replace, text_block, same = parse(text)
    assert skip.skip == "needs a cluster" and replace.replacements == [("--task x", "--task x --steps 2")]
    assert commands(replace.code) == [('expressivity train --task x --json   # a comment', ['"ok": true ... 3'])]
    assert text_block.language == "json" and text_block.skip is None
    assert same.same_as == "docs/x.md" and not same.runs() and replace.runs() and not skip.runs()
    assert shown_in('"ok": true ... 3', '{"ok": true, "n": 3}') and not shown_in("3 ... ok", '{"ok": true, "n": 3}')
    with pytest.raises(ValueError, match="does not contain"):
        parse('<!-- readme-test: replace "nope" with "x": r -->\n```bash\nls\n```\n')
    with pytest.raises(ValueError, match="malformed marker"):
        parse('<!-- readme-test: skip -->\n```bash\nls\n```\n')
    with pytest.raises(ValueError, match="malformed marker"):
        parse('<!-- readme-test: same as docs/x.md -->\n```bash\nls\n```\n')
    with pytest.raises(ValueError, match="outside a ```bash fence"):
        parse("```\nexpressivity circuits\n```\n")


def test_a_same_as_block_must_be_run_with_its_output_on_its_page():
    page = parse('```bash\nexpressivity a --out x   # makes x\nexpressivity b x\n#=> 17/6\n#=> exact\n```\n'
                 '```python\nprint(1)\n#=> 1\n```\n'
                 '<!-- readme-test: skip: too long for test time -->\n```bash\nexpressivity c\n```\n', "docs/p.md")
    def problems(text):
        return same_as_problems(parse(text)[0], page)
    assert problems('```bash\nexpressivity a --out x\nexpressivity b x   # other words\n#=> 17/6\n```\n') == []
    assert problems('```python\nprint(1)\n```\n') == []
    assert problems('```bash\nexpressivity b x\nexpressivity a --out x\n```\n')      # out of order
    assert problems('```bash\nexpressivity b x\n#=> 1/6\n```\n')                     # output not shown there
    assert problems('```bash\nexpressivity c\n```\n')                                # skipped there
    assert problems('```python\nprint(2)\n```\n')


def test_every_page_has_valid_markers_reasons_and_runs_its_examples():
    blocks = {page_name(p): parse(p.read_text(), page_name(p)) for p in PAGES}
    readme = blocks["README.md"]
    assert sum(b.language == "bash" for b in readme) >= 5
    for page, found in blocks.items():
        for block in found:
            assert block.skip is None or len(block.skip) > 10, f"{block.where()}: give the reason for skipping"
            if block.same_as is not None:
                assert block.same_as in blocks, f"{block.where()}: no page {block.same_as}"
                assert not (problems := same_as_problems(block, blocks[block.same_as])), \
                    f"{block.where()}: not run on {block.same_as}: {problems[0]}"
    run = sum(len(commands(b.code)) if b.language == "bash" else 1 for found in blocks.values() for b in found if b.runs())
    assert run >= 35, f"only {run} commands and Python blocks run across the pages"


def test_the_readme_stays_short():
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into a page under docs/"


# ---- the pages, run ------------------------------------------------------------------------------

def _environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"   # as after `source .venv/bin/activate`
    env["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["COLUMNS"] = "100"
    return env


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_the_page_runs_as_written_in_a_fresh_folder(path, tmp_path, monkeypatch):
    page = page_name(path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "experiments").symlink_to(ROOT / "experiments", target_is_directory=True)
    env = _environment()
    namespace: dict = {"__name__": "__readme__"}
    for block in parse(path.read_text(), page):
        if not block.runs():
            continue
        code = block.replaced()
        if block.language == "python":
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout):
                exec(compile(code, block.where(), "exec"), namespace)
            for shown in python_shown(code):
                assert shown_in(shown, stdout.getvalue()), f"{block.where()}: output lacks {shown!r}:\n{stdout.getvalue()}"
            continue
        for command, shown in commands(code):
            done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
            assert done.returncode == 0, f"{block.where()}: `{command}` exited {done.returncode}:\n{done.stderr[-3000:]}"
            for text in shown:
                assert shown_in(text, done.stdout), f"{block.where()}: `{command}` output lacks {text!r}:\n{done.stdout[-3000:]}"
