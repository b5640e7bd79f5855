"""The repository is self-contained: no tracked file points at a file a clone does not have
(the design notes live in docs/design.md; the paper is cited by its arXiv id, 2601.05588)."""

import re
import subprocess
from pathlib import Path

import pytest

from arrank.common import paths

# a design or notes file of the project's workspace, a folder beside the checkout, the paper's
# LaTeX source by path, an absolute path of the machine this was built on. The words are joined
# from parts so that this file names no such path itself.
DESIGN, BESIDE, NOTES = "DESIGN" + ".md", "sha" + "red", "cpu-" + "feasibility"
TEX, WORKSPACE = "autoregressive_ranking" + ".tex", "/" + "work" + "/"
OUTSIDE = re.compile(
    "|".join([re.escape(DESIGN), rf"\b{BESIDE}/", rf"[\"']{BESIDE}[\"']", NOTES, re.escape(TEX), WORKSPACE])
)
THIS = Path(__file__).resolve().relative_to(paths.ROOT).as_posix()


def _tracked() -> list[str]:
    out = subprocess.run(["git", "-C", str(paths.ROOT), "ls-files", "-z"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.split("\0") if f and f != THIS]


def test_no_tracked_file_refers_outside_the_repository():
    hits = []
    for name in _tracked():
        path = paths.ROOT / name
        if path.suffix in (".png", ".parquet", ".gguf", ".jpg") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{name}:{number}: {line.strip()[:120]}")
    assert hits == [], "references to files outside the repository:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_is_for():
    for bad in (
        f"see {DESIGN}",
        f"(notes/{NOTES}.md)",
        f'ROOT / "{BESIDE}" / "paper"',
        f"../{BESIDE}/paper/x",
        f"{WORKSPACE}main/.venv/bin/python",
        TEX,
    ):
        assert OUTSIDE.search(bad), bad
    for fine in ("docs/design.md", "shared prompt", "prefix-shared scoring", "arXiv 2601.05588"):
        assert not OUTSIDE.search(fine), fine


def test_design_notes_are_in_the_repository():
    text = (paths.ROOT / "docs" / "design.md").read_text()
    for section in ("## Layout", "## Contracts", "## Known pitfalls", "## Size"):
        assert section in text
    assert "## Conventions" in (paths.ROOT / "DEVELOPERS.md").read_text()
    cited = set(
        re.findall(
            r"docs/design\.md",
            "\n".join((paths.ROOT / f).read_text(errors="replace") for f in _tracked() if f.endswith((".py", ".md"))),
        )
    )
    assert cited  # the code points at it, and it exists
