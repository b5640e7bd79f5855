"""Notebook parameters: what each notebook accepts, what values are allowed, and profile defaults.

Contract (docs/design.md): the first code cell of a notebook is tagged ``parameters`` and holds plain
literals, including ``profile`` ("quick" | "paper"), ``seed`` and ``run_name``. Right after it the
notebook calls ``check_params(stem, globals())``, which validates every value and fills each
parameter left at ``None`` from the notebook's profile. The runner (``arrank.workbook.run``) uses the same
specs to refuse unknown names and bad values before a kernel is even started.

A spec maps a parameter name to a validator: a function ``(name, value) -> value`` that returns the
(possibly normalised) value or raises ``ParamError`` naming the bad value and what is allowed; its
``allowed`` attribute says the same in words (``allowed_text``; ``run NOTEBOOK --help`` prints it).
"""

from __future__ import annotations

import re
from typing import Any, Callable

Validator = Callable[[str, Any], Any]


class ParamError(ValueError):
    """A notebook parameter has an unknown name or a value outside what is allowed."""


def choice(*allowed: Any) -> Validator:
    """Validator: the value must be one of ``allowed``."""

    def check(name: str, value: Any) -> Any:
        if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
            raise ParamError(f"{name}={value!r} is not allowed; choose one of {list(allowed)}")
        return value

    check.allowed = "one of " + ", ".join(repr(a) for a in allowed)
    return check


def integer(lo: int | None = None, hi: int | None = None, optional: bool = False) -> Validator:
    """Validator: an int in [lo, hi] (bools are refused); ``None`` too when ``optional``."""

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamError(f"{name}={value!r} must be an integer{_range_text(lo, hi)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamError(f"{name}={value!r} is out of range: allowed{_range_text(lo, hi)}")
        return value

    check.allowed = f"an integer{_range_text(lo, hi)}" + (", or None (from the profile)" if optional else "")
    return check


def number(lo: float | None = None, hi: float | None = None, optional: bool = False) -> Validator:
    """Validator: a finite real number in [lo, hi]; ``None`` too when ``optional``."""

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ParamError(f"{name}={value!r} must be a number{_range_text(lo, hi)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamError(f"{name}={value!r} is out of range: allowed{_range_text(lo, hi)}")
        return float(value)

    check.allowed = f"a number{_range_text(lo, hi)}" + (", or None (from the profile)" if optional else "")
    return check


def text(pattern: str | None = None, what: str = "a string", optional: bool = False,
         empty: str | None = None) -> Validator:
    """Validator: a string, matching ``pattern`` (full match) when one is given; ``None`` too
    when ``optional``. An empty or blank string, or one with spaces around it, is refused (it
    would fail later, deep inside a kernel, with a message that names neither the parameter nor
    what is allowed), unless ``empty`` says what ``''`` means: then ``''`` is allowed."""

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise ParamError(f"{name}={value!r} must be {what}")
        if value == "" and empty is not None:
            return value
        if not value.strip():
            raise ParamError(f"{name}={value!r} is empty: it must be {what}")
        if value != value.strip():
            raise ParamError(f"{name}={value!r} has spaces around it: it must be {what}, without them")
        if pattern is not None and not re.fullmatch(pattern, value):
            raise ParamError(f"{name}={value!r} must be {what}")
        return value

    check.allowed = what + (", or None (from the profile)" if optional else "")
    return check


def number_list(lo: float | None = None, integers: bool = False) -> Validator:
    """Validator: a non-empty list of numbers >= lo (ints when ``integers``), given as a list or
    as a comma-separated string (``-p alphas 0,1,2`` on the command line); returns a list."""

    def check(name: str, value: Any) -> Any:
        what = f"a non-empty list of {'integers' if integers else 'numbers'}{_range_text(lo, None)}"
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items:
            raise ParamError(f"{name}={value!r} must be {what}, e.g. [4, 8] or '4,8'")
        out = []
        for item in items:
            try:
                x = (int(item) if integers else float(item)) if isinstance(item, str) else item
            except ValueError:
                raise ParamError(f"{name}={value!r} must be {what}: {item!r} is not a number") from None
            ok = not isinstance(x, bool) and isinstance(x, int if integers else (int, float)) and x == x
            if not ok or (lo is not None and x < lo):
                raise ParamError(f"{name}={value!r} must be {what}: {item!r} is not allowed")
            out.append(x if integers else float(x))
        return out

    check.allowed = (f"a non-empty list of {'integers' if integers else 'numbers'}{_range_text(lo, None)}, "
                     "e.g. [4, 8] or '4,8'")
    return check


def _range_text(lo: Any, hi: Any) -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" >= {lo}"
    if lo is None:
        return f" <= {hi}"
    return f" in [{lo}, {hi}]"


RUN_NAME_TEXT = ("'auto' or a name of at most 100 letters, digits, '.', '_', '=', '-' that starts with a letter "
                 "or digit and holds none of the workbook's own markers ('.failed-', '.partial-', '.rank' + digits, "
                 "a '.lock' ending)")
RUN_NAME_MARKERS = re.compile(r"\.failed-|\.partial-|\.rank\d|\.lock$")  # outputs: failed, staging, rank, lock


def run_name_value(name: str, value: Any) -> Any:
    """Validator of ``run_name``: ``text``'s checks, a name that cannot be taken for one of the
    folders and files the runner makes beside a run (``RUN_NAME_MARKERS``; a leading '.' hides
    a folder, and is refused too)."""
    value = text(r"[A-Za-z0-9][A-Za-z0-9._=-]{0,99}", RUN_NAME_TEXT)(name, value)
    if RUN_NAME_MARKERS.search(value):
        raise ParamError(f"{name}={value!r} collides with the workbook's own markers beside a run: it must be "
                         f"{RUN_NAME_TEXT}")
    return value


run_name_value.allowed = RUN_NAME_TEXT
RUN_NAME = run_name_value
COMMON: dict[str, Validator] = {
    "profile": choice("quick", "paper"),
    "seed": integer(0, 2**32 - 1),
    "run_name": RUN_NAME,
}

def model_name(name: str, value: Any) -> Any:
    """Validator: ``None`` (the profile's model), or a name, hub id, local folder or .gguf file
    that ``arrank.workbook.named_models.model_kind`` accepts."""
    from arrank.workbook.named_models import model_kind

    if value is None:
        return None
    try:
        model_kind(value)
    except ValueError as err:
        raise ParamError(str(err).replace("model_name=", f"{name}=", 1)) from None
    return value


def optional_model_name(name: str, value: Any) -> Any:
    """Validator: ``''`` (no model) or what :func:`model_name` accepts."""
    return value if value == "" else model_name(name, value)


def _model_names_text() -> str:
    from arrank.workbook.named_models import known_names

    return f"a named model ({', '.join(known_names())}), a hub id (owner/name), a local model folder or a .gguf file"


model_name.allowed = lambda: "None (from the profile), " + _model_names_text()
optional_model_name.allowed = lambda: "'' (no model) or " + _model_names_text()


def allowed_text(validator: Validator) -> str:
    """What a validator accepts, in words (its ``allowed`` attribute, a text or a function giving one)."""
    allowed = getattr(validator, "allowed", "see the notebook's parameters cell")
    return allowed() if callable(allowed) else allowed


SPECS_SUBTREE = text(r"[a-z0-9_.'-]+\.n\.\d\d", "'' (all nouns) or a noun synset name such as 'animal.n.01'",
                     optional=True, empty="all nouns")

# The data and evaluation parameters that 05 (training) and 06 (evaluation) share.
RUN_DATA: dict[str, Validator] = {
        "dataset": choice("wordnet", "esci"),
        "subtree": SPECS_SUBTREE,
        "min_relevant": integer(1, 30, optional=True),
        "n_eval": integer(1, 10**5, optional=True),
        "template": choice(None, "wordnet", "wordnet_short", "esci", "esci_short"),
        "tokenizer_vocab": integer(300, 100_000),
        "eval_queries": integer(0, 10**6),
}

# Per notebook: the notebook-specific parameters (COMMON is added to each).
SPECS: dict[str, dict[str, Validator]] = {
    "01_de_capacity": {
        "k_max_exact": integer(2, 7, optional=True),
        "mc_queries": integer(1, 10**8, optional=True),
        "k_max_bound": integer(2, 10**6, optional=True),
        "site_sets": integer(1, 100, optional=True),
    },
    "02_rank_condition": {
        "v_max": integer(2, 7, optional=True),
        "n_targets": integer(1, 10**5, optional=True),
        "seq_vocab": integer(2, 6),
        "seq_len": integer(1, 4),
        "seq_dim": integer(1, 64),
        "tokenizer_vocab": integer(300, 100_000, optional=True),
        "model_name": optional_model_name,
    },
    "03_wordnet_data": {
        "subtree": SPECS_SUBTREE,
        "min_relevant": integer(1, 30, optional=True),
        "max_queries": integer(0, 10**6, optional=True),
        "n_eval": integer(1, 10**5, optional=True),
        "path_rule": choice("longest", "shortest", "union"),
        "include_root": choice(True, False),
        "template": choice("wordnet", "wordnet_short"),
        "tokenizer_name": text(what="'tiny' (a BPE trained on the data) or a local tokenizer/model folder"),
        "tokenizer_vocab": integer(300, 100_000),
    },
    "04_esci_data": {
        "data_dir": text(what="'fixture' or the folder holding the two ESCI parquet files", optional=True),
        "embedder": text(r"tfidf(:\d+)?|precomputed:.+|st:.+", "'tfidf', 'tfidf:<dim>', 'precomputed:<folder>' or 'st:<model>'"),
        "step": integer(1, 10**5, optional=True),
        "depth": integer(1, 10**6, optional=True),
        "n_components": integer(2, 10_000, optional=True),
        "nnz": integer(1, 10),
        "collisions": choice("keep", "drop", "suffix"),
        "filter_titles": choice("before", "after"),
        "max_queries": integer(0, 10**6),
        "template": choice("esci", "esci_short"),
        "tokenizer_vocab": integer(300, 100_000),
    },
    "05_train": {
        "model_name": model_name,
        "backend": choice("auto", "unsloth", "transformers"),
        "scheme": choice("indicator", "fractional", "stepwise"),
        "alpha": number(0.0),
        "targets": choice("onehot", "trie"),
        "beta": number(0.0),
        "combined": choice(False, True),
        "sampling": choice("uniform", "weighted"),
        "packing": choice("auto", "per_query", "none"),
        "steps": integer(0, 10**7, optional=True),
        "save_steps": integer(1, 10**7, optional=True),
        "lr": number(0.0, 10.0, optional=True),
        "batch_size": integer(1, 4096, optional=True),
        "grad_accum": integer(1, 4096, optional=True),
        "max_length": integer(16, 131_072, optional=True),
        "lora_r": integer(0, 1024, optional=True),
        "lora_alpha": integer(1, 4096),
        "lora_dropout": number(0.0, 1.0),
        "lora_targets": text(what="'all-linear' or comma-separated module names"),
        "load_in_4bit": choice(False, True),
        **RUN_DATA,
        "train_queries": integer(0, 10**6, optional=True),
    },
    "06_evaluate": {
        "train_run": text(r"none|latest|[A-Za-z0-9][A-Za-z0-9._=-]{0,99}",
                          "'latest', 'none' (an untrained model) or the run name of a finished 05_train run"),
        "model_name": model_name,
        "backend": choice("auto", "unsloth", "transformers"),
        **RUN_DATA,
        "include_eos": choice(False, True),
        "method": choice("prefix_shared", "naive"),
        "beam_k": integer(1, 100),
        "decode_queries": integer(0, 10**6, optional=True),
    },
}

# 07: the DE / CE baselines of section 5.3 (arrank.baselines.figure3); hyper-parameter defaults are Appendix B's.
SPECS["07_de_ce_baselines"] = {
    "model": choice("figure3", "de", "ce"),
    "n": integer(1, 4096),
    "alpha": number(0.0),
    "de_dims": number_list(1, integers=True),
    "ce_dim": integer(1, 4096),
    "de_alpha_dim": integer(1, 4096),
    "alphas": number_list(0.0),
    "de_steps": integer(1, 10**7, optional=True),
    "ce_steps": integer(1, 10**7, optional=True),
    "batch_size": integer(1, 10**6),
    "tau": number(1e-6),
    "de_lr": number(1e-9),
    "de_momentum": number(0.0, 0.999),
    "ce_lr": number(1e-9),
    "ce_weight_decay": number(0.0),
    "ce_optimizer": choice("adamw", "adam_l2"),
    "ce_table_init_std": number(1e-6),
    "de_row_updates": choice("lazy", "dense"),
    "ce_row_updates": choice("lazy", "dense"),
    "retrieval": choice(True, False),
    "arr_runs": text(r"[^/]+", "a glob on 05_train run names, e.g. '*' or 'table1_wordnet_quick-*'"),
    "from_runs": text(r"[^/]*", "'' (train) or a glob on 07_de_ce_baselines run names, e.g. 'paper-fig3-*'", empty="train"),
    "k_max": integer(1, 50),
    "on_par_tol": number(0.0, 1.0),
    "threads": integer(1, 1024),
    "subtree": SPECS_SUBTREE,
    "min_relevant": integer(1, 30, optional=True),
    "n_eval": integer(1, 10**5, optional=True),
}

# Per notebook and profile: the values that parameters left at None take.
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "01_de_capacity": {
        "quick": {"k_max_exact": 6, "mc_queries": 20_000, "k_max_bound": 1000, "site_sets": 1},
        "paper": {"k_max_exact": 7, "mc_queries": 500_000, "k_max_bound": 1000, "site_sets": 3},
    },
    "02_rank_condition": {
        "quick": {"v_max": 6, "n_targets": 20, "tokenizer_vocab": 2000},
        "paper": {"v_max": 7, "n_targets": 200, "tokenizer_vocab": 2000},
    },
    "03_wordnet_data": {
        "quick": {"subtree": "animal.n.01", "min_relevant": 5, "max_queries": 0, "n_eval": 300},
        "paper": {"subtree": "", "min_relevant": 1, "max_queries": 0, "n_eval": 5000},
    },
    "04_esci_data": {
        "quick": {"data_dir": "fixture", "step": 5, "depth": 60, "n_components": 32},
        # the data of 05/06's pretrained profile with dataset="esci": the quick fixture
        "pretrained": {"data_dir": "fixture", "step": 5, "depth": 60, "n_components": 32},
        "paper": {"data_dir": "data/esci", "step": 100, "depth": 10_000, "n_components": 100},
    },
    # training hyper-parameters: arrank.training.train.HYPERPARAMETERS (quick: the tiny model on a
    # CPU; pretrained: SmolLM2-135M-Instruct + LoRA on a CPU, the paper's recipe at small scale;
    # paper: Mistral-7B + LoRA on a GPU, Appendix B)
    "05_train": {
        "quick": {"model_name": "tiny", "lora_r": 0, "subtree": "animal.n.01", "min_relevant": 5, "n_eval": 300},
        "pretrained": {"model_name": "smollm2-135m", "lora_r": 16, "subtree": "animal.n.01", "min_relevant": 5,
                       "n_eval": 100},
        "paper": {"model_name": "paper", "lora_r": 16, "subtree": "", "min_relevant": 1, "n_eval": 5000},
    },
    "06_evaluate": {  # data values apply to train_run="none" only; a trained run brings its own
        "quick": {"model_name": "tiny", "subtree": "animal.n.01", "min_relevant": 5, "n_eval": 300,
                  "decode_queries": 50},
        "pretrained": {"model_name": "smollm2-135m", "subtree": "animal.n.01", "min_relevant": 5, "n_eval": 100,
                       "decode_queries": 30},
        "paper": {"model_name": "paper", "subtree": "", "min_relevant": 1, "n_eval": 5000, "decode_queries": 500},
    },
}

PROFILES["07_de_ce_baselines"] = {  # quick: the 05 quick data (animal.n.01), paper: all nouns, App. B steps
    "quick": {"subtree": "animal.n.01", "min_relevant": 5, "n_eval": 300, "de_steps": 3000, "ce_steps": 3000},
    "paper": {"subtree": "", "min_relevant": 1, "n_eval": 5000, "de_steps": 50_000, "ce_steps": 20_000},
}

# 08_results reads the runs of one sweep (arrank.workbook.sweep) and prints the paper's table (arrank.workbook.report).
SPECS["08_results"] = {
    "sweep": text(r".+\.ya?ml", "the path of a sweep file (.yaml), e.g. 'sweeps/table1_wordnet_quick.yaml'",
                  optional=True),
    "paper_rows": choice("auto", "yes", "no"),
}
PROFILES["08_results"] = {
    "quick": {"sweep": "sweeps/table1_wordnet_workbook.yaml"},
    "paper": {"sweep": "sweeps/table1_wordnet_paper.yaml"},
}


def profiles_of(stem: str) -> list[str]:
    """The profiles a notebook accepts: its ``PROFILES`` keys (quick and paper for every notebook;
    05, 06 and the ESCI build of 04 also ``pretrained``)."""
    return list(PROFILES.get(stem, {"quick": {}, "paper": {}}))


def spec_for(stem: str) -> dict[str, Validator]:
    """The full spec (COMMON + notebook-specific) of a notebook, or a clear error."""
    if stem not in SPECS:
        raise ParamError(f"no parameter spec for notebook {stem!r}; known notebooks: {sorted(SPECS)}")
    return {**COMMON, "profile": choice(*profiles_of(stem)), **SPECS[stem]}


def validate(stem: str, values: dict[str, Any]) -> dict[str, Any]:
    """Check names and values against the notebook's spec; return the normalised values.

    Unknown names and missing names are errors; values are checked by their validators.
    Parameters at ``None`` are left as they are (see ``resolve_profile``).
    """
    spec = spec_for(stem)
    unknown = sorted(set(values) - set(spec))
    if unknown:
        raise ParamError(f"unknown parameter(s) {unknown} for {stem}; allowed: {sorted(spec)}")
    missing = sorted(set(spec) - set(values))
    if missing:
        raise ParamError(f"{stem} is missing parameter(s) {missing} in its parameters cell")
    return {name: spec[name](name, value) for name, value in values.items()}


def resolve_profile(stem: str, values: dict[str, Any]) -> dict[str, Any]:
    """Fill every parameter that is ``None`` from ``PROFILES[stem][profile]``."""
    defaults = PROFILES.get(stem, {}).get(values["profile"], {})
    out = dict(values)
    spec = spec_for(stem) if defaults else {}
    for name, value in values.items():
        if value is None and name in defaults:
            out[name] = spec[name](name, defaults[name])
    return out


def check_params(stem: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Validate a notebook's parameters, taken by name from its namespace (``globals()``).

    Returns the resolved parameters (profile defaults filled in); raises ``ParamError`` with the
    bad name or value and what is allowed.
    """
    names = spec_for(stem)
    missing = sorted(n for n in names if n not in namespace)
    if missing:
        raise ParamError(f"{stem}: parameter(s) {missing} are not defined in the parameters cell")
    return resolve_profile(stem, validate(stem, {n: namespace[n] for n in names}))
