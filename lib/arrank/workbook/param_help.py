"""``python -m arrank.workbook.run NOTEBOOK --help``: a notebook's parameters, each with its
default (per profile where the profile fills it), what is allowed and what it means, from the
notebook's definition (``arrank.common.params.NOTEBOOKS``) and its ``parameters`` cell.
"""

from __future__ import annotations

import io
import tokenize
from typing import Any

from arrank.common import params


def parameter_comments(cell_source: str) -> dict[str, str]:
    """The comment on each ``name = literal  # comment`` line of a parameters cell, by name
    (a literal spread over several lines: the first comment among its lines)."""
    import ast

    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(cell_source).readline):
        if tok.type == tokenize.COMMENT:
            comments.setdefault(tok.start[0], tok.string.lstrip("#").strip())
    out = {}
    for node in ast.parse(cell_source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            out[node.targets[0].id] = next((comments[n] for n in lines if n in comments), "")
    return out


def _profile_value(value: Any) -> Any:
    """A profile's value as the help shows it: a per-dataset value as ``wordnet / esci``."""
    if isinstance(value, params.ByDataset):
        return f"{value.wordnet} / {value.esci}"
    return f"= {value.name}" if isinstance(value, params.SameAs) else value


def describe_parameters(stem: str, cell_source: str, defaults: dict[str, Any]) -> str:
    """The parameter help of notebook ``stem`` from its definition (``params.NOTEBOOKS``: meaning,
    allowed values, profile values) and the ``defaults`` the runner parsed from its parameters
    cell, as ``run NOTEBOOK --help`` prints it."""
    definition, spec = params.definition(stem), params.spec_for(stem)
    lines = [f"parameters of {stem} (set with -p NAME VALUE; profiles: {', '.join(params.profiles_of(stem))}):", ""]
    for name, default in defaults.items():
        profiles = definition[name].profiles.items() if default is None else ()  # what None takes per profile
        by_profile = " | ".join(f"{p}: {_profile_value(v)!r}" for p, v in profiles)
        lines.append(f"  {name} = {default!r}" + (f"  ({by_profile})" if by_profile else ""))
        if definition[name].help:
            lines.append(f"      {definition[name].help}")
        lines.append(f"      allowed: {params.allowed_text(spec[name])}")
    return "\n".join(lines)
