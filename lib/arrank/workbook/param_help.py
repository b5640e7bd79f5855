"""``python -m arrank.workbook.run NOTEBOOK --help``: a notebook's parameters, each with its
default (per profile where the profile fills it), what is allowed and what it means.

Everything comes from what the runner itself uses: the notebook's parameter definition
(``arrank.common.params.NOTEBOOKS``: meaning, validator, per-profile values) and the defaults of
its ``parameters`` cell, which ``tests/workbook/test_param_help.py`` holds to that definition (the
same names in the same order, the same literals, the comment on each line = the meaning).
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


def profile_defaults(stem: str, name: str, default: Any) -> dict[str, Any]:
    """What each profile gives ``name`` when the notebook leaves it at ``None``
    (``Param.profiles`` of its definition; a per-dataset value as ``wordnet / esci``)."""
    if default is None:
        return {
            p: (
                f"{v.wordnet} / {v.esci}"
                if isinstance(v, params.ByDataset)
                else f"= {v.name}"
                if isinstance(v, params.SameAs)
                else v
            )
            for p, v in params.definition(stem)[name].profiles.items()
        }
    return {}


def describe_parameters(stem: str, cell_source: str, defaults: dict[str, Any]) -> str:
    """The parameter help of notebook ``stem`` from its definition (``params.NOTEBOOKS``: meaning,
    allowed values, profile values) and the ``defaults`` the runner parsed from its parameters
    cell, as ``run NOTEBOOK --help`` prints it."""
    definition, spec = params.definition(stem), params.spec_for(stem)
    lines = [f"parameters of {stem} (set with -p NAME VALUE; profiles: {', '.join(params.profiles_of(stem))}):", ""]
    for name, default in defaults.items():
        per_profile = profile_defaults(stem, name, default)
        by_profile = "  (" + " | ".join(f"{p}: {v!r}" for p, v in per_profile.items()) + ")" if per_profile else ""
        lines.append(f"  {name} = {default!r}{by_profile}")
        if definition[name].help:
            lines.append(f"      {definition[name].help}")
        lines.append(f"      allowed: {params.allowed_text(spec[name])}")
    return "\n".join(lines)
