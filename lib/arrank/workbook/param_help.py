"""``python -m arrank.workbook.run NOTEBOOK --help``: a notebook's parameters, each with its
default (per profile where the profile fills it), what is allowed and what it means.

Everything comes from what the runner itself uses: the defaults and the one-line meanings from
the notebook's ``parameters`` cell (the comment on each line), the allowed values from the spec
the runner validates with (``arrank.common.params.spec_for``), the per-profile values from
``params.PROFILES``.
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
    """What ``params.PROFILES`` fills in for ``name`` in each profile that fills it, when the
    notebook leaves it at ``None`` (05's training hyper-parameters are filled by the notebook
    from ``arrank.training.train.HYPERPARAMETERS`` instead: their comment gives the values)."""
    if default is not None:
        return {}
    profiles = params.PROFILES.get(stem, {})
    return {p: profiles[p][name] for p in params.profiles_of(stem) if name in profiles.get(p, {})}


def describe_parameters(stem: str, cell_source: str, defaults: dict[str, Any]) -> str:
    """The parameter help of notebook ``stem``, from its parameters cell (``cell_source``, and
    the ``defaults`` the runner parsed from it), as ``run NOTEBOOK --help`` prints it."""
    meanings = parameter_comments(cell_source)
    spec = params.spec_for(stem)
    lines = [f"parameters of {stem} (set with -p NAME VALUE; profiles: {', '.join(params.profiles_of(stem))}):", ""]
    for name, default in defaults.items():
        per_profile = profile_defaults(stem, name, default)
        by_profile = "  (" + " | ".join(f"{p}: {v!r}" for p, v in per_profile.items()) + ")" if per_profile else ""
        lines.append(f"  {name} = {default!r}{by_profile}")
        if meanings.get(name):
            lines.append(f"      {meanings[name]}")
        lines.append(f"      allowed: {params.allowed_text(spec[name])}")
    return "\n".join(lines)
