"""Notebook parameters. A notebook's parameters cell is its spec, in papermill's convention: one
``name: type = literal  # meaning`` line per parameter, read with papermill's own parser (name,
type, default, help). The literals are the quick profile's values, the ones a reader sees and
runs. This module holds only what a cell cannot say: the rule on each value (``RULES``) and the
values the other profiles give (``PROFILES``). ``resolve`` applies both once, at the edge: the
runner before a kernel starts, ``check_params`` in a notebook run from JupyterLab or plain
papermill (docs/design.md, "Contracts").

A validator ``(name, value) -> value`` returns the (normalised) value or raises ``ParamError``
naming the bad value and what is allowed; its ``allowed`` attribute says it in words. A rule is a
validator, or ``(lo, hi)``: the bounds of an ``int`` or ``float`` parameter (``None``: unbounded).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import AbstractSet, Any, Callable, Mapping, Sequence

from arrank.common import paths
from arrank.common.display import shown
from arrank.common.named_models import known_names, model_kind

Validator = Callable[[str, Any], Any]
Source = str | Path | None  # a notebook's source; None: notebooks/<stem>.py
PARAMS_ENV = "ARRANK_PARAMS"  # the runner's resolved parameters (JSON), read by check_params in the kernel


class ParamError(ValueError):
    """A notebook parameter has an unknown name or a value outside what is allowed."""


def choice(*allowed: Any) -> Validator:
    """Validator: the value must be one of ``allowed``."""

    def check(name: str, value: Any) -> Any:
        if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
            raise ParamError(f"{name}={shown(value)} is not allowed; choose one of {list(allowed)}")
        return value

    check.allowed = "one of " + ", ".join(repr(a) for a in allowed)
    return check


def _ranged(what: str, types: type | tuple[type, ...], lo: Any, hi: Any, convert: type, optional: bool) -> Validator:
    """Validator of ``integer`` and ``number``: a value of ``types`` (no bool, nothing infinite or NaN) in [lo, hi];
    ``None`` too when ``optional`` (the parameter's comment says what it means)."""
    what += _range_text(lo, hi)

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, types) or not -math.inf < value < math.inf:  # NaN, inf
            raise ParamError(f"{name}={shown(value)} must be {what}")
        if (lo is not None and value < lo) or (hi is not None and value > hi) or abs(value) > sys.float_info.max:
            raise ParamError(f"{name}={shown(value)} is out of range: allowed{_range_text(lo, hi)}")
        return convert(value)

    check.allowed = what + (", or None" if optional else "")
    return check


def integer(lo: int | None = None, hi: int | None = None, optional: bool = False) -> Validator:
    """Validator: an int in [lo, hi] (bools are refused); ``None`` too when ``optional``."""
    return _ranged("an integer", int, lo, hi, int, optional)


def number(lo: float | None = None, hi: float | None = None) -> Validator:
    """Validator: a finite real number in [lo, hi], as a float."""
    return _ranged("a number", (int, float), lo, hi, float, False)


def text(pattern: str | None = None, what: str = "a string", empty: str | None = None, path: bool = False) -> Validator:
    """Validator: a string, matching ``pattern`` (full match) when one is given. Blank strings, spaces
    around, over 4,096 characters and, for a ``path``, over 255 bytes between two '/' (what no file
    system takes) are refused (they would fail deep inside a kernel), but ``''`` is allowed when
    ``empty`` says what it means."""

    def check(name: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise ParamError(f"{name}={shown(value)} must be {what}")
        if value == "" and empty is not None:
            return value
        if not value.strip():
            raise ParamError(f"{name}={shown(value)} is empty: it must be {what}")
        if value != value.strip():
            raise ParamError(f"{name}={shown(value)} has spaces around it: it must be {what}, without them")
        if len(value) > 4096 or path and any(len(part.encode()) > 255 for part in value.split("/")):
            raise ParamError(
                f"{name}={shown(value)} is too long (4,096 characters, 255 bytes between two '/'): it must be {what}"
            )
        if pattern is not None and not re.fullmatch(pattern, value):
            raise ParamError(f"{name}={shown(value)} must be {what}")
        return value

    check.allowed = what
    return check


MAX_LIST = 1000  # values in a list parameter: a sweep point's parameters travel as one argument (128 KiB at most)


def number_list(lo: float | None = None, integers: bool = False, empty: bool = False) -> Validator:
    """Validator: a list of at most ``MAX_LIST`` numbers >= lo (ints when ``integers``; non-empty unless
    ``empty``), given as a list or as a string, comma-separated in brackets or not (``-p alphas 0,1,2``,
    ``-p eval_steps "[4, 8]"``); returns a list."""
    what = f"a {'' if empty else 'non-empty '}list of {'integers' if integers else 'numbers'}{_range_text(lo, None)}"
    what += f" (at most {MAX_LIST:,} values), e.g. [4, 8] or '4,8'"
    item_check = integer(lo) if integers else number(lo)

    def check(name: str, value: Any) -> Any:
        text = re.sub(r"^\[(.*)\]$", r"\1", value.strip(), flags=re.S) if isinstance(value, str) else None
        items = value if text is None else [] if text.strip() == "" else text.split(",")
        if not isinstance(items, (list, tuple)) or not (items or empty) or len(items) > MAX_LIST:
            size = f"; it holds {len(items):,}" if isinstance(items, (list, tuple)) and items else ""
            raise ParamError(f"{name}={shown(value)} must be {what}{size}")
        out = []
        for item in items:
            try:
                x = (int if integers else float)(item) if isinstance(item, str) else item
                out.append(item_check(name, x))
            except ValueError as err:
                why = "is not allowed" if isinstance(err, ParamError) else "is not a number"
                raise ParamError(f"{name}={shown(value)} must be {what}: {shown(item)} {why}") from None
        return out

    check.allowed = what
    return check


def _range_text(lo: Any, hi: Any) -> str:
    if hi is None:
        return "" if lo is None else f" >= {lo}"
    return f" <= {hi}" if lo is None else f" in [{lo}, {hi}]"


RUN_NAME_TEXT = (
    "'auto' or a name of at most 100 letters, digits, '.', '_', '=', '-' that starts with a letter "
    "or digit and holds none of the workbook's own markers ('.failed-', '.partial-', '.rank' + digits, "
    "a '.lock' ending)"
)
# ``text``'s checks, and no name that could be taken for a folder or file the runner makes beside a
# run (outputs: failed, staging, rank, lock; or a leading '.')
RUN_NAME = text(r"(?!.*(\.failed-|\.partial-|\.rank\d|\.lock$))[A-Za-z0-9][A-Za-z0-9._=-]{0,99}", RUN_NAME_TEXT)


def model_name(name: str, value: Any) -> Any:
    """Validator: a name, hub id, local folder or .gguf file that
    ``arrank.common.named_models.model_kind`` accepts."""
    try:
        model_kind(value)
    except ValueError as err:
        raise ParamError(str(err).replace("model_name=", f"{name}=", 1)) from None
    return value


def optional_model_name(name: str, value: Any) -> Any:
    """Validator: ``''`` (no model) or what :func:`model_name` accepts."""
    return value if value == "" else model_name(name, value)


model_name.allowed = (
    f"a named model ({', '.join(known_names())}), a hub id (owner/name), a local model folder or a .gguf file"
)
optional_model_name.allowed = "'' (no model) or " + model_name.allowed


def allowed_text(validator: Validator) -> str:
    """What a validator accepts, in words (its ``allowed`` attribute, a text or a function giving one)."""
    allowed = getattr(validator, "allowed", "see the notebook's parameters cell")
    return allowed() if callable(allowed) else allowed


def registered(kind: str, what: str) -> Validator:
    """Validator: one of the names a stage registered under ``kind`` (``register_name``), e.g. the
    item-weight schemes of ``arrank.training.schemes``: this ground floor never imports a stage."""

    def check(name: str, value: Any) -> Any:
        if not REGISTRIES.get(kind):
            raise ParamError(f"{name}: no {what} are registered; import the stage that registers them first")
        return choice(*REGISTRIES[kind])(name, value)

    check.allowed = lambda: choice(*REGISTRIES.get(kind, ())).allowed + f" ({what})"
    return check


REGISTRIES: dict[str, dict[str, None]] = {}  # kind: the names registered, in order


def register_name(kind: str, name: str) -> None:
    """Add ``name`` to the allowed values of ``registered(kind)`` validators."""
    REGISTRIES.setdefault(kind, {})[name] = None


# --- the choices a stage also refuses on a direct call (``choice(*PACKINGS)("packing", value)``):
# each list written once, here, and imported by the stage that reads the value ----------------------
PRECISIONS = ("auto", "fp32", "bf16")  # arrank.training.precision
BACKENDS = ("auto", "unsloth", "transformers")  # arrank.training.models
DATASETS = ("wordnet", "esci", "custom")  # arrank.data.ranking
CUSTOM_DOCIDS = ("id", "text", "semantic")  # arrank.data.custom
PATH_RULES = ("longest", "shortest", "union")  # arrank.data.wordnet
TARGETS = ("onehot", "trie")  # arrank.training.train: token targets y(r, t)
SAMPLINGS = ("uniform", "weighted")  # arrank.training.train
PACKINGS = ("auto", "per_query", "none")  # arrank.training.packing
LR_SCHEDULES = ("auto", "cosine", "constant")  # arrank.training.train
METHODS = ("prefix_shared", "naive")  # arrank.evaluation.scoring
ROW_UPDATES = ("lazy", "dense")  # arrank.baselines.dual_encoder and cross_encoder
CE_OPTIMIZERS = ("adamw", "adam_l2")  # arrank.baselines.cross_encoder
PAPER_ROWS = ("auto", "yes", "no")  # arrank.workbook.report

# --- the rules: what each value may be ---------------------------------------------------------

COMMON: dict[str, Any] = {"seed": (0, 2**32 - 1), "run_name": RUN_NAME}  # profile: one of the notebook's
WORDNET_QUERIES = {  # 03, 05, 06 and 07: which WordNet queries
    "subtree": text(
        r"[a-z0-9_.'-]+\.n\.\d\d", "'' (all nouns) or a noun synset name such as 'animal.n.01'", empty="all nouns"
    ),
    "min_relevant": (1, 30),
    "n_eval": (1, 10**5),
}
# 05 and 06: the prompt template by style (short, full: the dataset's) or by name; custom data takes ESCI's.
TEMPLATE_STYLES = {"short": ("wordnet_short", "esci_short"), "full": ("wordnet", "esci")}
TEMPLATE = choice(*TEMPLATE_STYLES, "wordnet", "wordnet_short", "esci", "esci_short")
PRECISION = choice(*PRECISIONS)
RANKING_DATA = {  # 05 and 06: the dataset, the held-out queries and their scoring
    "dataset": choice(*DATASETS),
    "data_path": text(
        r"[^\x00]+", "a JSON Lines file of queries (docs/own-data.md)", empty="none (wordnet, esci)", path=True
    ),
    "custom_docids": choice(*CUSTOM_DOCIDS),
    "tokenizer_vocab": (300, 100_000),
    **WORDNET_QUERIES,
    "template": TEMPLATE,
    **{"eval_queries": (0, 10**6), "query_batch": (0, 4096), "precision": PRECISION},
}
MODEL = {"model_name": model_name, "backend": choice(*BACKENDS)}

RULES: dict[str, dict[str, Any]] = {
    "01_de_capacity": {
        "k_max_exact": (2, 7),
        "mc_queries": (1, 10**8),
        "k_max_bound": (2, 10**6),
        "site_sets": (1, 100),
    },
    "02_rank_condition": {
        **{"v_max": (2, 7), "n_targets": (1, 10**5), "seq_vocab": (2, 6), "seq_len": (1, 4), "seq_dim": (1, 64)},
        **{"tokenizer_vocab": (300, 100_000), "model_name": optional_model_name},
    },
    "03_wordnet_data": {
        **WORDNET_QUERIES,
        "max_queries": (0, 10**6),
        "path_rule": choice(*PATH_RULES),
        "template": choice("wordnet", "wordnet_short"),
        "tokenizer_name": text(what="'tiny' (a BPE trained on the data) or a local tokenizer/model folder", path=True),
        "tokenizer_vocab": (300, 100_000),
    },
    "04_esci_data": {
        "data_dir": text(what="'fixture' or the folder holding the two ESCI parquet files", path=True),
        "embedder": text(
            r"tfidf(:[1-9]\d{0,4})?|precomputed:.+|st:.+",
            "'tfidf', 'tfidf:<dim>' (dim 1-99999), 'precomputed:<folder>' or 'st:<model>'",
        ),
        **{"step": (1, 10**5), "depth": (1, 10**6), "n_components": (2, 10_000), "nnz": (1, 10)},
        "collisions": choice("keep", "drop", "suffix"),
        "filter_titles": choice("before", "after"),
        "max_queries": (0, 10**6),
        "template": choice("esci", "esci_short"),
        "tokenizer_vocab": (300, 100_000),
    },
    "05_train": {
        **MODEL,
        "data_seed": (0, 2**32 - 1),
        "scheme": registered("scheme", "item-weight schemes of arrank.training.schemes"),
        **{"alpha": (0.0, 100.0), "beta": (0.0, None)},  # alpha: 1000**100 (MAX_DOCUMENTS ranks) = 1e300 fits a float
        "targets": choice(*TARGETS),
        "sampling": choice(*SAMPLINGS),
        "packing": choice(*PACKINGS),
        **{"steps": (0, 10**7), "save_steps": (1, 10**7), "lr": (1e-9, 10.0), "batch_size": (1, 4096)},
        "eval_steps": number_list(1, integers=True, empty=True),
        "lr_schedule": choice(*LR_SCHEDULES),
        **{"grad_accum": (1, 4096), "max_length": (16, 131_072), "warmup_steps": (0, 10**7)},
        "optimizer": choice("adamw", "adafactor"),
        **{"weight_decay": (0.0, 1.0), "max_grad_norm": (0.0, 1e6), "logging_steps": (1, 10**7)},
        **{"lora_r": (0, 1024), "lora_alpha": (1, 4096), "lora_dropout": (0.0, 0.999)},  # 1: no gradient
        "lora_targets": text(what="'all-linear' or comma-separated module names"),
        **RANKING_DATA,
        **{"train_queries": (0, 10**6), "n_dev": (0, 10**5)},
    },
    "06_evaluate": {
        "train_run": text(
            r"none|latest|[A-Za-z0-9][A-Za-z0-9._=-]{0,99}",
            "'latest', 'none' (an untrained model) or the run name of a finished 05_train run",
        ),
        **MODEL,
        **RANKING_DATA,
        **{"beam_k": (1, 100), "decode_queries": (0, 10**6)},
        "method": choice(*METHODS),
    },
    "07_de_ce_baselines": {
        "model": choice("figure3", "de", "ce"),
        **{"n": (1, 4096), "alpha": (0.0, None), "ce_dim": (1, 4096), "de_alpha_dim": (1, 4096)},
        **{"de_dims": number_list(1, integers=True), "alphas": number_list(0.0)},
        **{"de_steps": (1, 10**7), "ce_steps": (1, 10**7), "batch_size": (1, 10**6), "tau": (1e-6, None)},
        **{"de_lr": (1e-9, None), "de_momentum": (0.0, 0.999), "ce_lr": (1e-9, None), "ce_weight_decay": (0.0, None)},
        "ce_optimizer": choice(*CE_OPTIMIZERS),
        "ce_table_init_std": (1e-6, None),
        **{"de_row_updates": choice(*ROW_UPDATES), "ce_row_updates": choice(*ROW_UPDATES)},
        "arr_runs": text(r"[^/]+", "a glob on 05_train run names, e.g. '*' or 'table1_wordnet_quick-*'"),
        "from_runs": text(
            r"[^/]*", "'' (train) or a glob on 07_de_ce_baselines run names, e.g. 'paper-fig3-*'", empty="train"
        ),
        **{"k_max": (1, 50), "on_par_tol": (0.0, 1.0), "threads": (1, 1024)},
        "precision": PRECISION,
        **WORDNET_QUERIES,
    },
    "08_results": {
        "sweep": text(
            r".+\.ya?ml", "the path of a sweep file (.yaml), e.g. 'sweeps/table1_wordnet_quick.yaml'", path=True
        ),
        "paper_rows": choice(*PAPER_ROWS),
        "curve_sweeps": text(
            r"[^,\s]+\.ya?ml(,[^,\s]+\.ya?ml)*", "'' or comma-separated sweep files (.yaml)", empty="none"
        ),
    },
}

# --- the other profiles: the values that differ from the cell's (quick) ones --------------------
# 05: Appendix B for paper; pretrained is SmolLM2-135M-Instruct + LoRA on a CPU, the paper's recipe
# at small scale. 07: Appendix B's DE / CE steps. 04's pretrained build is quick's (05 and 06 read it).
ALL_NOUNS = {"subtree": "", "min_relevant": 1, "n_eval": 5000}
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "01_de_capacity": {"paper": {"k_max_exact": 7, "mc_queries": 500_000, "site_sets": 3}},
    "02_rank_condition": {"paper": {"v_max": 7, "n_targets": 200}},
    "03_wordnet_data": {"paper": ALL_NOUNS},
    "04_esci_data": {
        "pretrained": {},
        "paper": {"data_dir": "data/esci", "step": 100, "depth": 10_000, "n_components": 100},
    },
    "05_train": {
        "pretrained": {
            **{"model_name": "smollm2-135m", "template": "full", "n_eval": 100, "lora_r": 16, "steps": 80},
            **{"save_steps": 50, "lr": 5e-4, "batch_size": 4, "max_length": 384, "warmup_steps": 10},
            **{"weight_decay": 0.0, "logging_steps": 10},
        },
        "paper": {
            **{"model_name": "paper", "template": "full", **ALL_NOUNS, "lora_r": 16, "steps": 10_000},
            **{"save_steps": 500, "lr": 1e-5, "batch_size": 8, "grad_accum": 8, "max_length": 1024},
            **{"optimizer": "adafactor", "warmup_steps": 50, "weight_decay": 0.0},
        },
    },
    "06_evaluate": {
        "pretrained": {"model_name": "smollm2-135m", "template": "full", "n_eval": 100, "decode_queries": 30},
        "paper": {"model_name": "paper", "template": "full", **ALL_NOUNS, "decode_queries": 500},
    },
    "07_de_ce_baselines": {"paper": {"de_steps": 50_000, "ce_steps": 20_000, **ALL_NOUNS}},
    "08_results": {"paper": {"sweep": "sweeps/table1_wordnet_paper.yaml"}},
}
# A profile's values for one data set, over the profile's own: Appendix B's ESCI settings (max input
# 8,192 tokens, a global batch of 32 = 4 x 8) and Table 2's 310 evaluated queries; (notebook, profile, dataset).
DATASET_PROFILES: dict[tuple[str, str, str], dict[str, Any]] = {
    ("05_train", "paper", "esci"): {"max_length": 8192, "batch_size": 4, "grad_accum": 8, "n_eval": 310},
    ("06_evaluate", "paper", "esci"): {"n_eval": 310},
}


def profiles_of(stem: str) -> list[str]:
    """The profiles a notebook accepts: quick (its cell's values) and those ``PROFILES`` names
    (paper for every notebook; 05, 06 and the ESCI build of 04 also pretrained)."""
    return ["quick", *PROFILES.get(stem, {"paper": {}})]


# --- the spec: the parameters cell, read with papermill's parser ----------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter as its notebook's cell states it (name, type, the quick profile's value, the
    line's comment as its meaning), its validator and the other profiles' values."""

    name: str
    type: str
    default: Any
    help: str
    check: Validator
    profiles: Mapping[str, Any]


def parse_cell(source: str, where: str) -> list[tuple[str, str, Any, str]]:
    """``(name, type, default, help)`` per line of a parameters cell, by papermill's parser
    (``PythonTranslator.inspect``), which skips a line it cannot read (an ``=`` in the comment):
    such a line, or one that is not ``name: type = literal``, is an error naming it."""
    from papermill.translators import PythonTranslator

    read = {p.name: p for p in PythonTranslator.inspect({"source": source})}
    out = []
    for node in ast.parse(source).body:
        name = getattr(getattr(node, "target", None), "id", None)
        if not isinstance(node, ast.AnnAssign) or name is None or node.value is None:
            raise ParamError(f"{where}: parameters cell line {node.lineno} is not `name: type = literal  # meaning`")
        if name not in read:
            raise ParamError(f"{where}: papermill cannot read parameter {name} (is there an '=' in its comment?)")
        try:
            default = ast.literal_eval(node.value)
        except ValueError:
            raise ParamError(f"{where}: parameter {name} is not a plain literal") from None
        out.append((name, read[name].inferred_type_name, default, read[name].help))
    return out


def _validator(stem: str, name: str, kind: str, default: Any = 0) -> Validator:
    """The validator of a parameter of type ``kind`` (the cell's annotation) from its rule; an
    ``int`` whose cell value is None also takes None (its comment says what None means)."""
    rule = {**COMMON, **RULES.get(stem, {})}.get(name)
    if name == "profile":
        return choice(*profiles_of(stem))
    if callable(rule):
        return rule
    lo, hi = rule or (None, None)
    if kind == "int":
        return integer(lo, hi, optional=default is None)
    if kind == "float":
        return number(lo, hi)
    if kind == "bool":
        return choice(False, True)
    if kind == "str" and rule is None:
        return text()
    raise ParamError(f"{stem}: parameter {name} of type {kind} has no rule in arrank.common.params.RULES")


@lru_cache(maxsize=64)
def _spec(stem: str, source: str, mtime: int) -> dict[str, Param]:
    """The parameters of the notebook at ``source`` (cached per file and modification time): the
    one cell tagged ``parameters``, read by ``parse_cell``, with each parameter's rule and profiles."""
    import jupytext

    where = Path(source).name
    cells = [c for c in jupytext.read(source).cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ParamError(f"{where} must have exactly one cell tagged 'parameters', has {len(cells)}")
    out = {}
    for name, kind, default, meaning in parse_cell(cells[0].source, where):
        by_profile = {p: values[name] for p, values in PROFILES.get(stem, {}).items() if name in values}
        by_profile |= {f"{p}, {d}": v[name] for (s, p, d), v in DATASET_PROFILES.items() if s == stem and name in v}
        out[name] = Param(name, kind, default, meaning, _validator(stem, name, kind, default), by_profile)
    return out


def spec(stem: str, source: Source = None) -> dict[str, Param]:
    """The parameters of notebook ``stem`` (its cell at ``source``, by default notebooks/<stem>.py)."""
    path = Path(source) if source is not None else paths.NOTEBOOKS / f"{stem}.py"
    if not path.is_file():
        known = [p.stem for p in paths.notebooks()]
        raise ParamError(f"no parameter spec for notebook {stem!r}; known notebooks: {known}")
    return _spec(stem, str(path), path.stat().st_mtime_ns)


def spec_for(stem: str, source: Source = None) -> dict[str, Validator]:
    """Every parameter's validator."""
    return {name: p.check for name, p in spec(stem, source).items()}


def validate(stem: str, values: Mapping[str, Any], source: Source = None) -> dict[str, Any]:
    """Check names (none unknown, none missing) and each value against the notebook's rules; return
    the normalised values (no profile applied: ``resolve``)."""
    params = spec(stem, source)
    if unknown := sorted(set(values) - set(params)):
        raise ParamError(f"unknown parameter(s) {unknown} for {stem}; allowed: {sorted(params)}")
    if missing := sorted(set(params) - set(values)):
        raise ParamError(f"{stem} is missing parameter(s) {missing} in its parameters cell")
    return {name: params[name].check(name, values[name]) for name in params}


def lr_schedule(schedule: str, eval_steps: Sequence[int] | None) -> str:
    """Notebook 05's learning-rate schedule after the warm-up: ``schedule``, or for ``"auto"`` constant
    when ``eval_steps`` scores points during the run (then the model at step N is the model of a run
    that stops at N: the rate never depends on the horizon) and cosine (Appendix B) otherwise."""
    choice(*LR_SCHEDULES)("lr_schedule", schedule)
    return ("constant" if eval_steps else "cosine") if schedule == "auto" else schedule


def items_per_step(params: Mapping[str, Any], processes: int = 1) -> int:
    """The items an optimizer step of a notebook 05 run carries: ``batch_size * grad_accum`` on each of
    its ``processes`` (``WORLD_SIZE``, results.json's ``env``; docs/scale-out.md)."""
    return int(params["batch_size"]) * int(params.get("grad_accum") or 1) * processes


def dataset_template(template: str, dataset: str) -> str:
    """``template`` as a template's name: a style (short, full) becomes ``dataset``'s (custom data
    takes ESCI's); a name is kept."""
    return TEMPLATE_STYLES[template][dataset != "wordnet"] if template in TEMPLATE_STYLES else template


def template_fits(template: str, dataset: str) -> str | None:
    """05 and 06: the data and their prompts agree."""
    fits = [names[dataset != "wordnet"] for names in TEMPLATE_STYLES.values()]
    return None if template in fits else f"template={template!r} is not for dataset={dataset!r}; choose one of {fits}"


def custom_data_path(dataset: str, data_path: str) -> str | None:
    """05 and 06: a data_path goes with custom data, and only with it."""
    if (dataset == "custom") != bool(data_path):
        return f"data_path={shown(data_path)} with dataset={dataset!r}: a data_path is given exactly with dataset 'custom' (docs/own-data.md)"


def _within_steps(eval_steps: list[int], steps: int) -> str | None:
    """05: each point of a budget curve is a step of the run."""
    if beyond := [s for s in eval_steps if s > steps]:
        return f"eval_steps={shown(eval_steps)}: {len(beyond):,} beyond steps={steps} (the first: {beyond[0]}); each is a step of the run"


def _dev_below_eval(n_dev: int, n_eval: int) -> str | None:
    """05: the validation queries come out of the held-out ones."""
    if n_dev >= n_eval:
        return f"n_dev={n_dev} leaves no test queries of n_eval={n_eval}; give n_dev below n_eval"


# What ``resolve`` derives, in this order, where a notebook has every parameter read (05, 06):
# (the parameter set, the parameters read, the function of their values giving it).
DERIVED: list[tuple[str, tuple[str, ...], Callable[..., Any]]] = [
    ("data_seed", ("data_seed", "seed"), lambda data_seed, seed: seed if data_seed is None else data_seed),
    ("template", ("template", "dataset"), dataset_template),  # a style becomes the dataset's template
    ("eval_steps", ("eval_steps",), lambda eval_steps: sorted(set(eval_steps))),
    ("lr_schedule", ("lr_schedule", "eval_steps"), lr_schedule),  # auto named
]
# What the resolved values must agree on: (the parameters read, the function of their values giving
# the error, None when they agree).
AGREEMENTS: list[tuple[tuple[str, ...], Callable[..., str | None]]] = [
    (("template", "dataset"), template_fits),
    (("dataset", "data_path"), custom_data_path),
    (("eval_steps", "steps"), _within_steps),
    (("n_dev", "n_eval"), _dev_below_eval),
]


def resolve(stem: str, values: Mapping[str, Any], given: AbstractSet[str] = frozenset(), source: Source = None) -> dict:
    """The values that run: each parameter not in ``given`` (set on purpose) takes its profile's
    value (``PROFILES``, then ``DATASET_PROFILES`` for the data set), every value is validated, then
    what ``DERIVED`` derives (05's ``data_seed`` None is the seed, its ``eval_steps`` sorted,
    ``lr_schedule`` auto named; a template style (short, full) becomes the dataset's template) and
    ``AGREEMENTS`` checked (each of 05's ``eval_steps`` at most ``steps``, ...): a resume or a sweep
    compares what ran with these values."""
    profile = _validator(stem, "profile", "str")("profile", values.get("profile"))
    # a scan, not .get: a sweep file's dataset may be a mapping (unhashable), which validate then names
    data = next((v for k, v in DATASET_PROFILES.items() if k == (stem, profile, values.get("dataset"))), {})
    from_profile = {n: v for n, v in {**PROFILES.get(stem, {}).get(profile, {}), **data}.items() if n not in given}
    out = validate(stem, {**values, **from_profile}, source)
    for name, reads, derive in DERIVED:
        if set(reads) <= out.keys():
            out[name] = derive(*(out[n] for n in reads))
    for reads, disagreement in AGREEMENTS:
        if set(reads) <= out.keys() and (error := disagreement(*(out[n] for n in reads))):
            raise ParamError(error)
    return out


def profile_values(stem: str, profile: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every parameter of notebook ``stem`` as ``profile`` gives it (``values`` set on purpose)."""
    defaults = {name: p.default for name, p in spec(stem).items()}
    return resolve(stem, {**defaults, **(values or {}), "profile": profile}, set(values or {}))


def profile_template(profile: str, dataset: str) -> str:
    """Notebook 05's prompt template in ``profile`` for ``dataset`` (``profile_value``), a style (short,
    full) turned into the dataset's (custom data takes ESCI's)."""
    return dataset_template(profile_value("05_train", profile, "template"), dataset)


def profile_value(stem: str, profile: str, name: str) -> Any:
    """Parameter ``name`` of notebook ``stem`` as ``profile`` gives it (the cell's value where the profile
    names none), read alone: no other parameter resolved, no stage imported."""
    choice(*profiles_of(stem))("profile", profile)
    return PROFILES[stem].get(profile, {}).get(name, spec(stem)[name].default)


def check_params(stem: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """A notebook's parameters, taken by name from its namespace (``globals()``). Run by the
    runner, they were checked and resolved before the kernel started (``PARAMS_ENV``; papermill
    injected each that is not the cell's): they are returned as the runner resolved them. Run from JupyterLab or plain papermill, this is the edge: a value the
    cell holds as the notebook file has it takes the profile's (printed), then all are checked
    (``resolve``); ``ParamError`` names a bad name or value."""
    if ran := os.environ.get(PARAMS_ENV):
        resolved = json.loads(ran)
        if wrong := sorted(n for n in resolved if n not in namespace or namespace[n] != resolved[n]):
            raise ParamError(f"{stem}: parameter(s) {wrong} differ from what the runner resolved")
        return resolved
    params = spec(stem)
    if missing := sorted(n for n in params if n not in namespace):
        raise ParamError(f"{stem}: parameter(s) {missing} are not defined in the parameters cell")
    given = {n for n, p in params.items() if namespace[n] != p.default}
    out = resolve(stem, {n: namespace[n] for n in params}, given)
    if taken := [n for n, p in params.items() if n not in given and out["profile"] in p.profiles]:
        print(
            f"profile {out['profile']!r} sets "
            + ", ".join(f"{n} = {out[n]!r}" for n in taken)
            + " in place of the cell's values, which are the quick profile's (--help lists every profile's)"
        )
    return out
