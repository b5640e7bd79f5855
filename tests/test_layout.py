"""The package's floors: ``common`` at the bottom imports no other part of arrank; each stage of
the paper (theory, data, training, evaluation, baselines, results) imports only ``common`` and the
stages before it; ``workbook`` (the notebook runner, sweeps, set-up) is on top and nothing below it
imports it. No exceptions are allowed, and no module imports itself back through a cycle."""

import ast
import re
from pathlib import Path

import arrank

PACKAGE = Path(arrank.__file__).parent
GROUND = "common"
STAGES = ["theory", "data", "training", "evaluation", "baselines", "results"]
TOP = "workbook"
FLOORS = [GROUND, *STAGES, TOP]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def arrank_imports(path: Path) -> set[str]:
    """Every ``arrank`` module that ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("arrank")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("arrank"):
            found |= {
                f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module for a in node.names
            }
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): arrank_imports(p) for p in PACKAGE.rglob("*.py")}


def floor(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "arrank"


def level(module: str) -> int:
    return FLOORS.index(floor(module))


def test_every_module_lives_on_a_floor():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py"], top
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(FLOORS), folders


def test_no_import_points_up():
    """common imports no other floor; a stage imports common and earlier stages; workbook is
    imported by nothing below it."""
    bad = [
        f"{m} -> {i}"
        for m, imports in graph().items()
        if floor(m) != "arrank"
        for i in imports
        if floor(i) != "arrank" and level(i) > level(m)
    ]
    assert not bad, "upward imports: " + ", ".join(sorted(bad))


def test_the_check_sees_an_upward_import(tmp_path):
    """The checker itself: a stage module that imports the runner is reported."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from arrank.workbook import run\n")
    imports = arrank_imports(source)
    assert "arrank.workbook.run" in imports and level("arrank.workbook.run") > level("arrank.training.train")


def test_no_import_cycles():
    g = graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in g.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for node in g:
        if node not in state:
            visit(node, [])


def test_developers_table_names_every_module_on_its_floor():
    """DEVELOPERS.md's "Where code belongs" table (one row a floor) names each module of that floor,
    and nothing that is not one: the map a contributor reads stays the code's."""
    rows = {}
    for line in (PACKAGE.parents[1] / "DEVELOPERS.md").read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[1].strip("`").rstrip("/") in FLOORS:
            rows[cells[1].strip("`").rstrip("/")] = set(re.findall(r"`([a-z_0-9]+)`", cells[-2]))
    modules = {
        f: {p.stem for p in (PACKAGE / f).iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
        - {"__init__", "__main__"}
        for f in FLOORS
    }
    assert sorted(rows) == sorted(FLOORS)
    assert {f: sorted(modules[f] - rows[f]) for f in FLOORS if modules[f] - rows[f]} == {}, (
        "modules missing from the table"
    )
    assert {f: sorted(rows[f] - modules[f]) for f in FLOORS if rows[f] - modules[f]} == {}, "names that are no module"
