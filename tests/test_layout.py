"""The package's layering: each stage of lib/arrank imports only the stages before it and the
shared machinery (``arrank.workbook``), and no module imports itself back through a cycle."""

import ast
from pathlib import Path

import arrank

PACKAGE = Path(arrank.__file__).parent
STAGES = ["theory", "data", "training", "evaluation", "baselines"]


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
            found |= {f"{node.module}.{a.name}" if is_module(f"{node.module}.{a.name}") else node.module
                      for a in node.names}
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): arrank_imports(p) for p in PACKAGE.rglob("*.py")}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "arrank"


def test_every_module_lives_in_a_stage_folder():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py"], top
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(
        STAGES + ["workbook"])


def test_stages_import_only_earlier_stages_and_the_workbook_machinery():
    bad = []
    for module, imports in graph().items():
        here = stage(module)
        for imported in imports:
            there = stage(imported)
            if here in STAGES and there in STAGES and STAGES.index(there) > STAGES.index(here):
                bad.append(f"{module} -> {imported}")
    assert not bad, "upward imports: " + ", ".join(sorted(bad))


def test_machinery_imports_no_stage_but_in_the_whole_workbook_command():
    bad = [f"{m} -> {i}" for m, imports in graph().items() if stage(m) == "workbook"
           and m != "arrank.workbook.whole" for i in imports if stage(i) in STAGES]
    assert not bad, bad


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
