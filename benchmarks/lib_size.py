"""The size of the library and its docs: the figures the small-lib targets are measured by.

Code lines are counted over the AST and the token stream: a line counts when it holds a token of
code, i.e. it is not blank, not a comment, and not part of a docstring (a string literal that is the
first statement of a module, class or function). Docs are counted in words (whitespace-separated)
over docs/*.md.

    python benchmarks/lib_size.py            # the table
    python benchmarks/lib_size.py --json     # the same figures as JSON
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "arrank"
DOCS = ROOT / "docs"
TARGETS = {"lib": 7500, "common+workbook": 2000, "docs words": 22000}


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers covered by module, class and function docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def code_lines(source: str) -> int:
    """Lines of `source` that hold code: not blank, not comment-only, not docstring."""
    skip = docstring_lines(ast.parse(source))
    ignored = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in ignored:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - skip)


def lib_figures() -> dict[str, int]:
    """Code lines per top-level folder of lib/arrank, plus the totals the targets name."""
    per: dict[str, int] = {}
    for path in sorted(LIB.rglob("*.py")):
        part = path.relative_to(LIB).parts[0] if len(path.relative_to(LIB).parts) > 1 else "(top)"
        per[part] = per.get(part, 0) + code_lines(path.read_text())
    per["lib"] = sum(v for k, v in per.items())
    per["common+workbook"] = per.get("common", 0) + per.get("workbook", 0)
    per["docs words"] = sum(len(p.read_text().split()) for p in DOCS.glob("*.md"))
    return per


def main() -> None:
    """Print the figures against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    figures = lib_figures()
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print("| part | figure | target |\n|---|---|---|")
    for name, value in figures.items():
        target = TARGETS.get(name)
        print(f"| {name} | {value:,} | {'<= ' + format(target, ',') if target else ''} |")


if __name__ == "__main__":
    main()
