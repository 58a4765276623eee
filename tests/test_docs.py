"""Every ```python block of README.md and docs/*.md runs: each page's blocks in order, in one namespace, with JAX's
default settings (x64 off), as a reader would run them. A block that must not run here (it takes minutes) has the HTML
comment `<!-- no-test -->` on the line before its fence; output listings and pseudo code use another fence (```text)."""
import pathlib, re
import pytest
from jnp_table import x64_off

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
pytestmark = pytest.mark.usefixtures("tinygrad_optimizations")   # as a reader runs them (conftest.compile_in_process)
FENCE = re.compile(r"^```(\S*)\s*$")

def python_blocks(text: str) -> list[tuple[int, str]]:
  """(first line number, code) of the page's ```python blocks, without those marked `<!-- no-test -->`."""
  blocks, lines, i = [], text.splitlines(), 0
  while i < len(lines):
    m = FENCE.match(lines[i])
    if not m:
      i += 1
      continue
    start, lang = i, m.group(1)
    i += 1
    while i < len(lines) and not lines[i].startswith("```"): i += 1
    skip = start > 0 and lines[start - 1].strip() == "<!-- no-test -->"
    if lang == "python" and not skip: blocks.append((start + 2, "\n".join(lines[start + 1:i])))
    i += 1
  return blocks

def test_block_extraction():
  page = "a\n```python\nx = 1\n```\n<!-- no-test -->\n```python\nslow()\n```\n```text\nout\n```\n```python\ny = x\n```\n"
  assert python_blocks(page) == [(3, "x = 1"), (13, "y = x")]

@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p.read_text())], ids=lambda p: str(p.relative_to(ROOT)))
def test_page(page, monkeypatch):
  monkeypatch.chdir(ROOT)   # examples refer to files from the repository root
  ns: dict = {"__name__": "__docs__"}
  with x64_off():
    for line, code in python_blocks(page.read_text()):
      # padded so that a traceback's line numbers are the page's
      exec(compile("\n" * (line - 1) + code, str(page.relative_to(ROOT)), "exec"), ns)
