"""Notebook parameters: what each notebook accepts, what values are allowed, and profile defaults
(``NOTEBOOKS``; the runner, ``--help`` and ``check_params`` read it: docs/design.md, "Contracts").
A validator ``(name, value) -> value`` returns the (normalised) value or raises ``ParamError``
naming the bad value and what is allowed; its ``allowed`` attribute says it in words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from arrank.common.display import shown
from arrank.common.named_models import known_names, model_kind

Validator = Callable[[str, Any], Any]


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


def _or_none(check: Validator, allowed: str, optional: bool) -> Validator:
    """``check``, letting ``None`` (the profile's value) through when ``optional``."""

    def checked(name: str, value: Any) -> Any:
        return None if value is None and optional else check(name, value)

    checked.allowed = allowed + (", or None (from the profile)" if optional else "")
    return checked


def _ranged(what: str, types: type | tuple[type, ...], lo: Any, hi: Any, optional: bool, convert: type) -> Validator:
    """Validator of ``integer`` and ``number``: a value of ``types`` (no bool, no NaN) in [lo, hi]."""
    what += _range_text(lo, hi)

    def check(name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, types) or value != value:
            raise ParamError(f"{name}={shown(value)} must be {what}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParamError(f"{name}={shown(value)} is out of range: allowed{_range_text(lo, hi)}")
        return convert(value)

    return _or_none(check, what, optional)


def integer(lo: int | None = None, hi: int | None = None, optional: bool = False) -> Validator:
    """Validator: an int in [lo, hi] (bools are refused); ``None`` too when ``optional``."""
    return _ranged("an integer", int, lo, hi, optional, int)


def number(lo: float | None = None, hi: float | None = None, optional: bool = False) -> Validator:
    """Validator: a finite real number in [lo, hi], as a float; ``None`` too when ``optional``."""
    return _ranged("a number", (int, float), lo, hi, optional, float)


def text(
    pattern: str | None = None, what: str = "a string", optional: bool = False, empty: str | None = None
) -> Validator:
    """Validator: a string, matching ``pattern`` (full match) when one is given; ``None`` too when
    ``optional``. Blank strings and spaces around are refused (they would fail deep inside a
    kernel), but ``''`` is allowed when ``empty`` says what it means."""

    def check(name: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise ParamError(f"{name}={shown(value)} must be {what}")
        if value == "" and empty is not None:
            return value
        if not value.strip():
            raise ParamError(f"{name}={shown(value)} is empty: it must be {what}")
        if value != value.strip():
            raise ParamError(f"{name}={shown(value)} has spaces around it: it must be {what}, without them")
        if pattern is not None and not re.fullmatch(pattern, value):
            raise ParamError(f"{name}={shown(value)} must be {what}")
        return value

    return _or_none(check, what, optional)


def number_list(lo: float | None = None, integers: bool = False, empty: bool = False) -> Validator:
    """Validator: a list of numbers >= lo (ints when ``integers``; non-empty unless ``empty``), given
    as a list or as a comma-separated string (``-p alphas 0,1,2`` on the command line); returns a list."""
    what = f"a {'' if empty else 'non-empty '}list of {'integers' if integers else 'numbers'}{_range_text(lo, None)}"
    item_check = integer(lo) if integers else number(lo)

    def check(name: str, value: Any) -> Any:
        items = ([] if value.strip() == "" else value.split(",")) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not (items or empty):
            raise ParamError(f"{name}={shown(value)} must be {what}, e.g. [4, 8] or '4,8'")
        out = []
        for item in items:
            try:
                x = (int if integers else float)(item) if isinstance(item, str) else item
                out.append(item_check(name, x))
            except ValueError as err:
                why = "is not allowed" if isinstance(err, ParamError) else "is not a number"
                raise ParamError(f"{name}={shown(value)} must be {what}: {item!r} {why}") from None
        return out

    check.allowed = what + ", e.g. [4, 8] or '4,8'"
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
RUN_NAME_MARKERS = re.compile(r"\.failed-|\.partial-|\.rank\d|\.lock$")  # outputs: failed, staging, rank, lock
_RUN_NAME_TEXT_CHECK = text(r"[A-Za-z0-9][A-Za-z0-9._=-]{0,99}", RUN_NAME_TEXT)


def run_name_value(name: str, value: Any) -> Any:
    """Validator of ``run_name``: ``text``'s checks, and no name that could be taken for a folder
    or file the runner makes beside a run (``RUN_NAME_MARKERS``, or a leading '.')."""
    value = _RUN_NAME_TEXT_CHECK(name, value)
    if RUN_NAME_MARKERS.search(value):
        raise ParamError(
            f"{name}={shown(value)} collides with the workbook's own markers beside a run: it must be {RUN_NAME_TEXT}"
        )
    return value


run_name_value.allowed = RUN_NAME_TEXT
RUN_NAME = run_name_value
SEED = integer(0, 2**32 - 1)
PROFILE = None  # stands for choice(*the notebook's profiles) in the definitions below


def model_name(name: str, value: Any) -> Any:
    """Validator: ``None`` (the profile's model), or a name, hub id, local folder or .gguf file
    that ``arrank.common.named_models.model_kind`` accepts."""
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
    return f"a named model ({', '.join(known_names())}), a hub id (owner/name), a local model folder or a .gguf file"


model_name.allowed = lambda: "None (from the profile), " + _model_names_text()
optional_model_name.allowed = lambda: "'' (no model) or " + _model_names_text()


def allowed_text(validator: Validator) -> str:
    """What a validator accepts, in words (its ``allowed`` attribute, a text or a function giving one)."""
    allowed = getattr(validator, "allowed", "see the notebook's parameters cell")
    return allowed() if callable(allowed) else allowed


def registered(kind: str, what: str) -> Validator:
    """Validator: one of the names a stage registered under ``kind`` (``register_name``), e.g. the
    item-weight schemes of ``arrank.training.schemes``: this ground floor never imports a stage."""

    def check(name: str, value: Any) -> Any:
        names = REGISTRIES.get(kind)
        if not names:
            raise ParamError(f"{name}: no {what} are registered; import the stage that registers them first")
        if value not in names:
            raise ParamError(f"{name}={shown(value)} is not allowed; choose one of {list(names)}")
        return value

    check.allowed = lambda: "one of " + ", ".join(repr(n) for n in REGISTRIES.get(kind, ())) + f" ({what})"
    return check


REGISTRIES: dict[str, list[str]] = {}


def register_name(kind: str, name: str) -> None:
    """Add ``name`` to the allowed values of ``registered(kind)`` validators."""
    names = REGISTRIES.setdefault(kind, [])
    if name not in names:
        names.append(name)


@dataclass(frozen=True)
class Param:
    """One notebook parameter: its validator, the literal of the parameters cell, its meaning (that
    line's comment) and the value each profile gives it when left at ``None`` (or a ``ByDataset``, ``SameAs``)."""

    check: Validator | None
    default: Any
    help: str
    profiles: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ByDataset:
    """A profile value that depends on the run's ``dataset`` parameter."""

    wordnet: Any
    esci: Any

    @property
    def custom(self) -> Any:
        """One's own data (``arrank.data.custom``) takes ESCI's value: documents with texts, D.2's prompt."""
        return self.esci

    def pick(self, values: Mapping[str, Any]) -> Any:
        return getattr(self, values.get("dataset") or "wordnet")


@dataclass(frozen=True)
class SameAs:
    """A profile value that is another parameter's value (05's ``data_seed``: the ``seed``)."""

    name: str

    def pick(self, values: Mapping[str, Any]) -> Any:
        return values.get(self.name)


EVERY_PROFILE = ("quick", "pretrained", "paper")


# The prompt template a 05/06 run uses when it names none: the short one for the tiny model of
# the quick profile, Appendix D's word for word (D.1 WordNet, D.2 ESCI) for pretrained and paper.
TEMPLATES = {
    "quick": ByDataset("wordnet_short", "esci_short"),
    "pretrained": ByDataset("wordnet", "esci"),
    "paper": ByDataset("wordnet", "esci"),
}

# Validators that several notebooks share.
SPECS_SUBTREE = text(
    r"[a-z0-9_.'-]+\.n\.\d\d",
    "'' (all nouns) or a noun synset name such as 'animal.n.01'",
    optional=True,
    empty="all nouns",
)
MIN_RELEVANT = integer(1, 30, optional=True)
N_EVAL = integer(1, 10**5, optional=True)
TEMPLATE = choice(None, "wordnet", "wordnet_short", "esci", "esci_short")
PRECISION = choice("auto", "fp32", "bf16")
BACKEND = choice("auto", "unsloth", "transformers")
DATASET = choice("wordnet", "esci", "custom")
DATA_PATH = text(r"[^\x00]{1,4096}", "a JSON Lines file of queries (docs/own-data.md)", empty="none (wordnet, esci)")
CUSTOM_DOCIDS = choice("id", "text", "semantic")
TOKENIZER_VOCAB = integer(300, 100_000)
MODEL_BY_PROFILE = MappingProxyType({"quick": "tiny", "pretrained": "smollm2-135m", "paper": "paper"})  # 05 and 06


def profiled(check: Validator, help: str, profiles: Mapping[str, Any]) -> Param:
    """A parameter the notebook leaves at ``None``, which takes the value of its profile."""
    return Param(check, None, help, profiles)


def wordnet_queries(
    *, subtree_help: str, min_relevant_help: str, n_eval_help: str, profiles: Iterable[str] = EVERY_PROFILE
) -> dict:
    """05, 06 and 07's ``subtree``, ``min_relevant``, ``n_eval`` with their meanings, in ``profiles``."""

    def param(check: Validator, help: str, **values: Any) -> Param:
        return Param(check, None, help, {p: v for p, v in values.items() if p in profiles})

    return {
        "subtree": param(SPECS_SUBTREE, subtree_help, quick="animal.n.01", pretrained="animal.n.01", paper=""),
        "min_relevant": param(MIN_RELEVANT, min_relevant_help, quick=5, pretrained=5, paper=1),
        "n_eval": param(N_EVAL, n_eval_help, quick=300, pretrained=100, paper=5000),
    }


# Per notebook: every parameter, in the order of its parameters cell. Training hyper-parameters
# (05): Appendix B for paper; quick is the tiny model on a CPU; pretrained SmolLM2-135M-Instruct +
# LoRA on a CPU, the paper's recipe at small scale. 07: Appendix B's DE / CE recipe.
NOTEBOOKS: dict[str, dict[str, Param]] = {
    "01_de_capacity": {
        "profile": Param(PROFILE, "quick", '"quick" (laptop CPU, about a minute) or "paper" (k up to 7, more samples)'),
        "seed": Param(SEED, 0, "seeds every random site set and query sample"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/01_de_capacity/; auto: profile and date-time"),
        "k_max_exact": profiled(
            integer(2, 7, optional=True),
            "largest number of sites k for exact LP counts (2..7); None: 6 quick, 7 paper",
            {"quick": 6, "paper": 7},
        ),
        "mc_queries": profiled(
            integer(1, 10**8, optional=True),
            "largest Monte-Carlo sample of query points; None: 20k quick, 500k paper",
            {"quick": 20000, "paper": 500000},
        ),
        "k_max_bound": profiled(
            integer(2, 10**6, optional=True),
            "largest k in the dimension-bound figure; None: 1000",
            {"quick": 1000, "paper": 1000},
        ),
        "site_sets": profiled(
            integer(1, 100, optional=True),
            "random site sets per (k, n); None: 1 quick, 3 paper",
            {"quick": 1, "paper": 3},
        ),
    },
    "02_rank_condition": {
        "profile": Param(
            PROFILE, "quick", '"quick" (laptop CPU, about a minute) or "paper" (|V| up to 7, more targets)'
        ),
        "seed": Param(SEED, 0, "seeds every random matrix and target distribution"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/02_rank_condition/; auto: profile and date-time"),
        "v_max": profiled(
            integer(2, 7, optional=True),
            "largest vocabulary |V| for exact ordering counts (2..7); None: 6 quick, 7 paper",
            {"quick": 6, "paper": 7},
        ),
        "n_targets": profiled(
            integer(1, 10**5, optional=True),
            "random target distributions per case; None: 20 quick, 200 paper",
            {"quick": 20, "paper": 200},
        ),
        "seq_vocab": Param(integer(2, 6), 4, "Corollary: docID tokens |V|"),
        "seq_len": Param(integer(1, 4), 3, "Corollary: docID length L (|V|^L sequences)"),
        "seq_dim": Param(integer(1, 64), 3, "Corollary: model dimension n; full rank(E') needs n of at least |V| - 1"),
        "tokenizer_vocab": profiled(
            integer(300, 100_000, optional=True),
            "BPE vocabulary of the tiny model's tokenizer; None: 2000",
            {"quick": 2000, "paper": 2000},
        ),
        "model_name": Param(
            optional_model_name,
            "smollm2-135m",
            "a pretrained LLM beside the tiny model: a known name, hub id or local folder; '' for none",
        ),
    },
    "03_wordnet_data": {
        "profile": Param(PROFILE, "quick", '"quick" (animal.n.01 subtree, CPU) or "paper" (all 82k noun queries)'),
        "seed": Param(SEED, 0, "seeds the negatives, the prompt shuffles and the train/eval split"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/03_wordnet_data/; auto: profile and date-time"),
        "subtree": profiled(
            SPECS_SUBTREE,
            "'' for all nouns, or a synset whose hyponyms are the queries; None: from profile",
            {"quick": "animal.n.01", "paper": ""},
        ),
        "min_relevant": profiled(
            MIN_RELEVANT,
            "keep queries with at least this many relevant docIDs; None: 5 quick, 1 paper",
            {"quick": 5, "paper": 1},
        ),
        "max_queries": profiled(
            integer(0, 10**6, optional=True), "seeded sample of queries, 0 for all; None: 0", {"quick": 0, "paper": 0}
        ),
        "n_eval": profiled(
            N_EVAL, "held-out evaluation queries; None: 300 quick, 5000 paper (Table 1)", {"quick": 300, "paper": 5000}
        ),
        "path_rule": Param(
            choice("longest", "shortest", "union"),
            "longest",
            "hypernym path of a synset with several: longest, shortest or union",
        ),
        "include_root": Param(choice(True, False), True, "whether entity.n.01 is a relevant docID (all-nouns builds)"),
        "template": Param(
            choice("wordnet", "wordnet_short"),
            "wordnet",
            "prompt: wordnet (Appendix D.1 word for word) or wordnet_short (tiny models)",
        ),
        "tokenizer_name": Param(
            text(what="'tiny' (a BPE trained on the data) or a local tokenizer/model folder"),
            "tiny",
            "docID length statistics: tiny (BPE trained on this data) or a local folder",
        ),
        "tokenizer_vocab": Param(TOKENIZER_VOCAB, 2000, "vocabulary of the tiny BPE tokenizer"),
    },
    "04_esci_data": {
        "profile": Param(
            PROFILE, "quick", '"quick" (the committed fixture, CPU) or "paper" (the real files in data/esci)'
        ),
        "seed": Param(SEED, 0, "seeds the embedder, the dictionary learning and the prompt shuffles"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/04_esci_data/; auto: profile and date-time"),
        "data_dir": profiled(
            text(what="'fixture' or the folder holding the two ESCI parquet files", optional=True),
            "fixture, or the folder of the two ESCI parquet files; None: from profile",
            {"quick": "fixture", "pretrained": "fixture", "paper": "data/esci"},
        ),
        "embedder": Param(
            text(
                r"tfidf(:\d+)?|precomputed:.+|st:.+", "'tfidf', 'tfidf:<dim>', 'precomputed:<folder>' or 'st:<model>'"
            ),
            "tfidf",
            "tfidf, tfidf:DIM, precomputed:FOLDER or st:MODEL (sentence-transformers)",
        ),
        "step": profiled(
            integer(1, 10**5, optional=True),
            "take every step-th title by inner product; None: 5 quick, 100 paper",
            {"quick": 5, "pretrained": 5, "paper": 100},
        ),
        "depth": profiled(
            integer(1, 10**6, optional=True),
            "down to this rank; None: 60 quick, 10000 paper",
            {"quick": 60, "pretrained": 60, "paper": 10000},
        ),
        "n_components": profiled(
            integer(2, 10_000, optional=True),
            "dictionary atoms (docID alphabet); None: 32 quick, 100 paper",
            {"quick": 32, "pretrained": 32, "paper": 100},
        ),
        "nnz": Param(integer(1, 10), 3, "nonzero OMP coefficients, i.e. components of a docID"),
        "collisions": Param(
            choice("keep", "drop", "suffix"),
            "keep",
            "titles sharing a docID: keep (as in Appendix D.2), drop or suffix",
        ),
        "filter_titles": Param(
            choice("before", "after"), "before", "English filter before ranking (default) or after it"
        ),
        "max_queries": Param(integer(0, 10**6), 0, "0 for all queries"),
        "template": Param(
            choice("esci", "esci_short"),
            "esci",
            "prompt: esci (Appendix D.2 word for word) or esci_short (tiny models)",
        ),
        "tokenizer_vocab": Param(
            TOKENIZER_VOCAB, 2000, "vocabulary of the tiny BPE tokenizer for title/docID length statistics"
        ),
    },
    "05_train": {
        "profile": Param(
            PROFILE,
            "quick",
            '"quick" (tiny model, CPU, minutes), "pretrained" (SmolLM2-135M + LoRA, CPU) or "paper" (Mistral-7B + LoRA, GPU)',
        ),
        "seed": Param(
            SEED, 0, "seeds the model initialisation and the item order (and the data, unless data_seed is given)"
        ),
        "data_seed": profiled(
            integer(0, 2**32 - 1, optional=True),
            "seeds the held-out split, the negatives and the prompts' order; None: the seed (fix it to compare seeds on the same queries)",
            {p: SameAs("seed") for p in EVERY_PROFILE},
        ),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/05_train/; give a name to resume an interrupted run"),
        "model_name": profiled(
            model_name,
            "None: the profile's; tiny, smollm2-135m, paper (Mistral-7B), a hub id, a local folder or .gguf file",
            MODEL_BY_PROFILE,
        ),
        "backend": Param(
            BACKEND,
            "auto",
            "auto (Unsloth with CUDA in one process, else transformers + peft), unsloth (one GPU only) or transformers",
        ),
        "scheme": Param(
            registered("scheme", "item-weight schemes of arrank.training.schemes"),
            "indicator",
            "item weight lambda(r): indicator (NTP), fractional or stepwise",
        ),
        "alpha": Param(number(0.0), 2.0, "fractional: lambda(r) is 1 / r**alpha"),
        "targets": Param(choice("onehot", "trie"), "onehot", "token targets y(r, t): onehot or trie"),
        "beta": Param(number(0.0), 2.0, "trie: docID scores mu(r) are 1 / r**beta"),
        "combined": Param(choice(False, True), False, "Appendix F: the trie of rank r holds d_r .. d_nq only"),
        "sampling": Param(
            choice("uniform", "weighted"),
            "weighted",
            "weighted (draw items in proportion to lambda, default) or uniform (weight lambda)",
        ),
        "packing": Param(
            choice("auto", "per_query", "none"),
            "auto",
            "per_query (one sequence per query, shared prompt), none, or auto (per_query where possible)",
        ),
        "steps": profiled(
            integer(0, 10**7, optional=True),
            "optimizer steps, 0 for none (zero-shot); None: 1200 quick, 80 pretrained, 10000 paper",
            {"quick": 1200, "pretrained": 80, "paper": 10000},
        ),
        "eval_steps": Param(
            number_list(1, integers=True, empty=True),
            [],
            "also score the held-out queries after these optimizer steps, e.g. [120, 240, 480]: a budget curve in one run",
        ),
        "lr_schedule": Param(
            choice("auto", "cosine", "constant"),
            "auto",
            "after the warm-up: cosine or constant; auto: constant with eval_steps (each point is the run that stops there), else cosine",
        ),
        "save_steps": profiled(
            integer(1, 10**7, optional=True),
            "optimizer steps between checkpoints (the newest two are kept); None: 300 quick, 50 pretrained, 500 paper",
            {"quick": 300, "pretrained": 50, "paper": 500},
        ),
        "lr": profiled(
            number(0.0, 10.0, optional=True),
            "learning rate; None: 2e-3 quick, 5e-4 pretrained (AdamW), 1e-5 paper (Adafactor)",
            {"quick": 0.002, "pretrained": 0.0005, "paper": 1e-05},
        ),
        "batch_size": profiled(
            integer(1, 4096, optional=True),
            "items per device step; None: 64 quick, 4 pretrained, 8 paper",
            {"quick": 64, "pretrained": 4, "paper": 8},
        ),
        "grad_accum": profiled(
            integer(1, 4096, optional=True),
            "gradient accumulation; None: 1 quick, 8 paper (global batch 64)",
            {"quick": 1, "pretrained": 1, "paper": 8},
        ),
        "max_length": profiled(
            integer(16, 131_072, optional=True),
            "longest prompt + docID in tokens; None: 256 quick, 384 pretrained, 1024 paper",
            {"quick": 256, "pretrained": 384, "paper": 1024},
        ),
        "optimizer": profiled(
            choice(None, "adamw", "adafactor"),
            "adamw or adafactor (Appendix B: beta1 0.9, no relative step); None: adamw quick and pretrained, adafactor paper",
            {"quick": "adamw", "pretrained": "adamw", "paper": "adafactor"},
        ),
        "warmup_steps": profiled(
            integer(0, 10**7, optional=True),
            "linear warm-up steps (then lr_schedule); None: 100 quick, 10 pretrained, 50 paper",
            {"quick": 100, "pretrained": 10, "paper": 50},
        ),
        "weight_decay": profiled(
            number(0.0, 1.0, optional=True),
            "decoupled weight decay; None: 0.01 quick, 0 pretrained and paper",
            {"quick": 0.01, "pretrained": 0.0, "paper": 0.0},
        ),
        "max_grad_norm": profiled(
            number(0.0, 1e6, optional=True),
            "gradient clipping norm; None: 1.0",
            {"quick": 1.0, "pretrained": 1.0, "paper": 1.0},
        ),
        "logging_steps": profiled(
            integer(1, 10**7, optional=True),
            "log the loss every this many steps (at most a tenth of the steps); None: 50 quick, 10 pretrained, 50 paper",
            {"quick": 50, "pretrained": 10, "paper": 50},
        ),
        "lora_r": profiled(
            integer(0, 1024, optional=True),
            "LoRA rank, 0 for full fine-tuning; None: 0 quick, 16 pretrained and paper",
            {"quick": 0, "pretrained": 16, "paper": 16},
        ),
        "lora_alpha": Param(integer(1, 4096), 32, "LoRA scaling"),
        "lora_dropout": Param(number(0.0, 1.0), 0.0, "LoRA dropout"),
        "lora_targets": Param(
            text(what="'all-linear' or comma-separated module names"),
            "all-linear",
            "LoRA target modules: all-linear or a comma-separated list",
        ),
        "load_in_4bit": Param(
            choice(False, True), False, "Unsloth: 4-bit base weights (needs bitsandbytes); False is 16-bit LoRA"
        ),
        "dataset": Param(
            DATASET,
            "wordnet",
            "wordnet (Table 1), esci (Table 2; data and docIDs of notebook 04's profile) or custom (data_path)",
        ),
        "data_path": Param(DATA_PATH, "", "dataset custom: its JSON Lines file of queries (docs/own-data.md)"),
        "custom_docids": Param(
            CUSTOM_DOCIDS, "id", "dataset custom: docIDs from id (atomic), text (title) or semantic (OMP)"
        ),
        **wordnet_queries(
            subtree_help="WordNet subtree of the queries; None: animal.n.01 quick and pretrained, all nouns paper",
            min_relevant_help="queries with at least this many hypernyms; None: 5 quick, 1 paper",
            n_eval_help="held-out queries; None: 300 quick, 100 pretrained, 5000 paper",
        ),
        "template": profiled(
            TEMPLATE,
            "prompt template; None: the short one quick, Appendix D's pretrained and paper (wordnet, esci)",
            TEMPLATES,
        ),
        "tokenizer_vocab": Param(TOKENIZER_VOCAB, 2000, "BPE vocabulary of the tiny model's tokenizer"),
        "eval_queries": Param(integer(0, 10**6), 0, "evaluate on at most this many held-out queries, 0 for all"),
        "train_queries": Param(
            integer(0, 10**6, optional=True),
            None,
            "also score a seeded sample of this many training queries (Figure 3 (a)); None: as many as held out, 0: none",
        ),
        "query_batch": Param(
            integer(0, 4096), 0, "queries scored in one forward pass; 0: auto (32 on a GPU, 1 on a CPU)"
        ),
        "precision": Param(
            PRECISION,
            "auto",
            "auto (bf16 where the CPU or GPU runs it natively and the model is not tiny, else fp32), fp32 or bf16 (mixed: trainable weights, loss and scores in fp32)",
        ),
    },
    "06_evaluate": {
        "profile": Param(
            PROFILE,
            "quick",
            '"quick" (CPU, minutes), "pretrained" (SmolLM2-135M, CPU) or "paper" (the paper\'s scale, GPU)',
        ),
        "seed": Param(SEED, 0, "seeds the untrained model and the random floor"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/06_evaluate/"),
        "train_run": Param(
            text(
                r"none|latest|[A-Za-z0-9][A-Za-z0-9._=-]{0,99}",
                "'latest', 'none' (an untrained model) or the run name of a finished 05_train run",
            ),
            "latest",
            "run name of a finished 05_train run, latest, or none (an untrained model)",
        ),
        "model_name": profiled(
            model_name,
            "train_run none: None (the profile's), tiny (random init), smollm2-135m, a hub id or local folder",
            MODEL_BY_PROFILE,
        ),
        "backend": Param(BACKEND, "auto", "auto, unsloth or transformers (loading a pretrained model or an adapter)"),
        "dataset": Param(
            DATASET, "wordnet", "train_run none: wordnet, esci or custom (a trained run brings its own data)"
        ),
        "data_path": Param(DATA_PATH, "", "train_run none, dataset custom: its JSON Lines file of queries"),
        "custom_docids": Param(CUSTOM_DOCIDS, "id", "train_run none, dataset custom: docIDs from id, text or semantic"),
        **wordnet_queries(
            subtree_help="train_run none: WordNet subtree; None: animal.n.01 quick, all nouns paper",
            min_relevant_help="train_run none: queries with at least this many hypernyms",
            n_eval_help="train_run none: held-out queries; None: 300 quick, 5000 paper",
        ),
        "template": profiled(
            TEMPLATE, "train_run none: prompt template; None: short quick, Appendix D paper", TEMPLATES
        ),
        "tokenizer_vocab": Param(TOKENIZER_VOCAB, 2000, "train_run none: BPE vocabulary of the untrained tiny model"),
        "eval_queries": Param(integer(0, 10**6), 0, "score at most this many held-out queries, 0 for all"),
        "include_eos": Param(
            choice(False, True), False, "count the docID's closing EOS in its mean score (the paper: docID tokens only)"
        ),
        "method": Param(
            choice("prefix_shared", "naive"),
            "prefix_shared",
            "prefix_shared (one prompt pass per query) or naive (one pass per candidate)",
        ),
        "query_batch": Param(
            integer(0, 4096), 0, "queries scored in one forward pass; 0: auto (32 on a GPU, 1 on a CPU)"
        ),
        "beam_k": Param(integer(1, 100), 5, "beam size and top-k of beam search"),
        "decode_queries": profiled(
            integer(0, 10**6, optional=True),
            "decode at most this many held-out queries; None: 50 quick, 500 paper",
            {"quick": 50, "pretrained": 30, "paper": 500},
        ),
        "precision": Param(
            PRECISION,
            "auto",
            "auto (bf16 where the CPU or GPU runs it natively and the model is not tiny, else fp32), fp32 or bf16 (scores from fp32 logits)",
        ),
    },
    "07_de_ce_baselines": {
        "profile": Param(
            PROFILE, "quick", '"quick" (animal.n.01 subtree, 3000 steps) or "paper" (all nouns, Appendix B steps)'
        ),
        "seed": Param(SEED, 0, "seeds the data split and negatives, the tables, the batches and the CE permutations"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/07_de_ce_baselines/; auto: profile and date-time"),
        "model": Param(
            choice("figure3", "de", "ce"),
            "figure3",
            "figure3 (every run of Figure 3), de or ce (one run at n and alpha)",
        ),
        "n": Param(integer(1, 4096), 32, "embedding dimension of a single de or ce run"),
        "alpha": Param(number(0.0), 5.0, "lambda(r) is 1 / r**alpha, for a single run and for panel (a)"),
        "de_dims": Param(number_list(1, integers=True), [4, 8, 16, 32], "panel (a): the DE dimensions"),
        "ce_dim": Param(integer(1, 4096), 32, "panels (a) and (c): the CE dimension"),
        "de_alpha_dim": Param(integer(1, 4096), 8, "panel (b): the DE dimension of the alpha sweep"),
        "alphas": Param(number_list(0.0), [0, 1, 2, 3, 4, 5], "panels (b) and (c): the alpha values"),
        "de_steps": profiled(
            integer(1, 10**7, optional=True), "DE steps; None: 3000 quick, 50000 paper", {"quick": 3000, "paper": 50000}
        ),
        "ce_steps": profiled(
            integer(1, 10**7, optional=True), "CE steps; None: 3000 quick, 20000 paper", {"quick": 3000, "paper": 20000}
        ),
        "batch_size": Param(integer(1, 10**6), 2048, "positive pairs per step (Appendix B: 2k)"),
        "tau": Param(number(1e-6), 0.05, "DE softmax temperature"),
        "de_lr": Param(number(1e-9), 1.0, "DE SGD learning rate"),
        "de_momentum": Param(number(0.0, 0.999), 0.9, "DE SGD momentum"),
        "ce_lr": Param(number(1e-9), 0.001, "CE Adam learning rate"),
        "ce_weight_decay": Param(
            number(0.0), 0.001, "CE weight decay (Appendix B: 0.001), applied as ce_optimizer says"
        ),
        "ce_optimizer": Param(
            choice("adamw", "adam_l2"),
            "adamw",
            "adamw (decoupled decay: keeps the table) or adam_l2 (Adam's L2 term: erodes absent rows)",
        ),
        "ce_table_init_std": Param(
            number(1e-6), 1.0, "CE table rows start N(0, std^2) (the workbook's choice; the paper gives none)"
        ),
        "de_row_updates": Param(
            choice("lazy", "dense"),
            "lazy",
            "DE: lazy (rows in the batch only) or dense (torch.optim SGD on the whole table)",
        ),
        "ce_row_updates": Param(
            choice("lazy", "dense"), "dense", "CE: dense (torch.optim Adam on the whole table, Appendix B) or lazy"
        ),
        "retrieval": Param(
            choice(True, False), True, "DE extra: full-corpus retrieval R@k over every synset of the hierarchy"
        ),
        "arr_runs": Param(
            text(r"[^/]+", "a glob on 05_train run names, e.g. '*' or 'table1_wordnet_quick-*'"),
            "*",
            "05_train runs plotted in panel (a): a glob on their run names",
        ),
        "from_runs": Param(
            text(r"[^/]*", "'' (train) or a glob on 07_de_ce_baselines run names, e.g. 'paper-fig3-*'", empty="train"),
            "",
            "a glob on 07 run names: draw Figure 3 from those single-config runs (a sweep's points), no training",
        ),
        "k_max": Param(integer(1, 50), 10, "R@k for k from 1 to k_max"),
        "on_par_tol": Param(
            number(0.0, 1.0), 0.02, 'findings: two R@k curves are "on par" within this, "above" beyond it'
        ),
        "threads": Param(
            integer(1, 1024),
            2,
            "CPU cores: Figure 3's configs train in this many 1-thread processes at once; a single de or ce run uses this many threads",
        ),
        "precision": Param(
            PRECISION,
            "auto",
            "auto, fp32 or bf16: accepted and recorded; the DE and CE train in fp32 (bf16 does not pay at these sizes)",
        ),
        **wordnet_queries(
            subtree_help="'' for all nouns or a synset; None: animal.n.01 quick, all nouns paper",
            min_relevant_help="queries with at least this many hypernyms; None: 5 quick, 1 paper",
            n_eval_help="evaluation queries; None: 300 quick, 5000 paper",
            profiles=("quick", "paper"),
        ),
    },
    "08_results": {
        "profile": Param(
            PROFILE, "quick", "picks the default sweep: quick is the workbook's Table 1, paper the GPU Table 1"
        ),
        "seed": Param(SEED, 0, "nothing random here; kept by the parameter contract"),
        "run_name": Param(RUN_NAME, "auto", "folder under outputs/08_results/; auto: profile and date-time"),
        "sweep": profiled(
            text(
                r".+\.ya?ml", "the path of a sweep file (.yaml), e.g. 'sweeps/table1_wordnet_quick.yaml'", optional=True
            ),
            "sweep file; None: sweeps/table1_wordnet_workbook.yaml quick, sweeps/table1_wordnet_paper.yaml paper",
            {"quick": "sweeps/table1_wordnet_workbook.yaml", "paper": "sweeps/table1_wordnet_paper.yaml"},
        ),
        "paper_rows": Param(
            choice("auto", "yes", "no"),
            "auto",
            "the paper's numbers beside each row: auto (when the sweep ran the paper profile), yes or no",
        ),
        "curve_sweeps": Param(
            text(r"[^,\s]+\.ya?ml(,[^,\s]+\.ya?ml)*", "'' or comma-separated sweep files (.yaml)", empty="none"),
            "",
            "more sweeps whose budget curves join this sweep's (comma-separated), e.g. the same runs trained longer",
        ),
    },
}


def define(stem: str, checks: Mapping[str, Validator]) -> dict[str, Param]:
    """Register a minimal definition for a notebook made on the fly (a test, an experiment):
    ``profile`` (quick | paper), ``seed``, ``run_name`` and ``checks`` (name -> validator)."""
    NOTEBOOKS[stem] = {
        "profile": Param(PROFILE, "quick", ""),
        "seed": Param(SEED, 0, ""),
        "run_name": Param(RUN_NAME, "auto", ""),
        **{name: Param(check, None, "") for name, check in checks.items()},
    }
    return NOTEBOOKS[stem]


def profiles_of(stem: str) -> list[str]:
    """The profiles a notebook accepts (quick and paper for every notebook; 05, 06 and the ESCI
    build of 04 also ``pretrained``): those its parameters name, in the order first named."""
    found = dict.fromkeys(p for param in definition(stem).values() for p in param.profiles)
    return list(found) or ["quick", "paper"]


def definition(stem: str) -> dict[str, Param]:
    """The parameters of notebook ``stem``, or a clear error naming the known notebooks."""
    if stem not in NOTEBOOKS:
        raise ParamError(f"no parameter spec for notebook {stem!r}; known notebooks: {sorted(NOTEBOOKS)}")
    return NOTEBOOKS[stem]


def spec_for(stem: str) -> dict[str, Validator]:
    """Every parameter's validator (the profile's: one of the notebook's profiles)."""
    profile = choice(*profiles_of(stem))
    return {name: param.check or profile for name, param in definition(stem).items()}


def profile_values(stem: str, profile: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What each parameter left at ``None`` takes in ``profile`` (``ByDataset`` picked by
    ``values['dataset']``, WordNet when none is given; ``SameAs`` from the named value)."""
    given = {name: param.profiles[profile] for name, param in definition(stem).items() if profile in param.profiles}
    return {name: v.pick(values or {}) if isinstance(v, (ByDataset, SameAs)) else v for name, v in given.items()}


def validate(stem: str, values: dict[str, Any]) -> dict[str, Any]:
    """Check names (none unknown, none missing) and values against the notebook's spec; return the
    normalised values, ``None`` left as it is (``resolve_profile`` fills it)."""
    spec = spec_for(stem)
    unknown = sorted(set(values) - set(spec))
    if unknown:
        raise ParamError(f"unknown parameter(s) {unknown} for {stem}; allowed: {sorted(spec)}")
    missing = sorted(set(spec) - set(values))
    if missing:
        raise ParamError(f"{stem} is missing parameter(s) {missing} in its parameters cell")
    return {name: spec[name](name, value) for name, value in values.items()}


def resolve_profile(stem: str, values: dict[str, Any]) -> dict[str, Any]:
    """Fill every parameter that is ``None`` from its profile value (``Param.profiles``)."""
    defaults, spec = profile_values(stem, values["profile"], values), spec_for(stem)
    return {
        name: spec[name](name, defaults[name]) if value is None and name in defaults else value
        for name, value in values.items()
    }


def check_params(stem: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Validate a notebook's parameters, taken by name from its namespace (``globals()``), and
    return them with profile defaults filled in; ``ParamError`` names a bad name or value."""
    names = spec_for(stem)
    missing = sorted(n for n in names if n not in namespace)
    if missing:
        raise ParamError(f"{stem}: parameter(s) {missing} are not defined in the parameters cell")
    return resolve_profile(stem, validate(stem, {n: namespace[n] for n in names}))
