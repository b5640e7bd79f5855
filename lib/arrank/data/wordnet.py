"""WordNet 3.0 as the paper's first ranking dataset (section 5.1, Appendix C and D.1).

A query is a noun synset at depth >= 1; its relevant docIDs are the hypernyms on its path to the
root, most specific first, plus one negative off the path. Deterministic: parents are read once as
sorted names, paths chosen by explicit rules, every draw keyed by (seed, query name). The rules
(``path_rule``, ``include_root``, ``subtree``, ``subtree_root_relevant``, ``negative_pool``) and the
item counts that chose the defaults: docs/design.md, "Datasets"."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from arrank.common import paths
from arrank.common.outputs import write_json_atomic
from arrank.common.params import PATH_RULES, choice
from arrank.common.wordnet_setup import load_wordnet, wordnet_root
from arrank.data import cache as dataset_cache
from arrank.data.prompts import query_rng, wordnet_prompt

ROOT_SYNSET = "entity.n.01"
NEGATIVE_POOLS = ("subtree", "all")
FORMAT_VERSION = 1  # bump when the content of a built dataset changes: old cache folders go stale
QUERY_COLUMNS = ["query", "relevant", "negative", "depth", "n_relevant", "split", "prompt"]
ITEM_COLUMNS = ["query", "docid", "rank", "n_q", "prompt", "split"]


def noun_synset_names() -> list[str]:
    """The names of all noun synsets of WordNet 3.0 (82,115), sorted."""
    return sorted(noun_parents())


def _wordnet_file() -> Path:
    """The file WordNet's nouns are read from (``data.noun``, or NLTK's zip), or WordNetMissingError."""
    if (root := wordnet_root()) is None:
        load_wordnet()  # raises WordNetMissingError, saying how to install WordNet
    return root / "data.noun" if root.is_dir() else next(p for p in (root, *root.parents) if p.is_file())


def noun_cache_path() -> Path:
    """Where ``noun_parents`` keeps WordNet's noun hierarchy: named by the digest of WordNet's noun file."""
    digest = hashlib.sha256(_wordnet_file().read_bytes()).hexdigest()[:16]
    return paths.CACHE / f"wordnet_nouns-{digest}-v{FORMAT_VERSION}.json"


@lru_cache(maxsize=None)
def noun_parents() -> Mapping[str, tuple[str, ...]]:
    """Every noun synset of WordNet 3.0 -> its sorted direct hypernyms, instance hypernyms included
    (entity.n.01 has none). Read from NLTK once (about half a minute), then from the JSON file of
    ``noun_cache_path`` (under a second). Memoised."""
    path = noun_cache_path()
    try:
        parents = json.loads(path.read_text())
        if parents.get(ROOT_SYNSET) != [] or not all(isinstance(ps, list) for ps in parents.values()):
            raise ValueError(f"{path} is not a noun hierarchy")
    except (OSError, ValueError, AttributeError):  # absent or damaged: derived data, built again
        parents = nltk_noun_parents()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, parents)
        except OSError as err:
            print(f"WordNet's noun cache {path} cannot be written ({err.strerror}): each process reads WordNet again")
    return {name: tuple(ps) for name, ps in parents.items()}


def nltk_noun_parents() -> dict[str, list[str]]:
    """``noun_parents`` as NLTK reads it from WordNet's files (the slow way)."""
    return {s.name(): sorted(_hypernym_names(s)) for s in load_wordnet().all_synsets("n")}


# --------------------------------------------------------------------------- the hierarchy


@dataclass(frozen=True)
class Hierarchy:
    """A noun hierarchy (section 5.1): its top synset and every other synset's sorted direct hypernyms."""

    top: str
    parents: Mapping[str, tuple[str, ...]]

    @property
    def nodes(self) -> list[str]:
        """All synset names of the hierarchy, the top included, sorted."""
        return sorted([self.top, *self.parents])


def _hypernym_names(synset: Any) -> set[str]:
    return {p.name() for p in synset.hypernyms() + synset.instance_hypernyms()}


def _check_noun(name: str, role: str = "subtree") -> None:
    """Nothing if ``name`` names a noun synset, else a ValueError naming it."""
    if isinstance(name, str) and name in noun_parents():
        return
    from nltk.corpus.reader.wordnet import WordNetError

    try:
        synset = load_wordnet().synset(name)
    except (WordNetError, ValueError, AttributeError):
        synset = None
    if synset is not None and synset.pos() == "n":
        raise ValueError(f"{name!r} is a lemma of the synset named {synset.name()!r}: give that name")
    raise ValueError(
        f"unknown synset {name!r} for {role}: WordNet 3.0 has no noun synset of that name (names look like 'animal.n.01')"
    )


@lru_cache(maxsize=None)
def noun_hierarchy(subtree: str | None = None) -> Hierarchy:
    """WordNet's nouns below entity.n.01, or the hyponym closure of ``subtree``. Memoised."""
    all_parents = noun_parents()
    if subtree is None:
        tops = sorted(name for name, ps in all_parents.items() if not ps)
        if tops != [ROOT_SYNSET]:
            raise RuntimeError(f"expected WordNet's nouns to have the single root {ROOT_SYNSET}, got {tops}")
        return Hierarchy(ROOT_SYNSET, {n: ps for n, ps in all_parents.items() if n != ROOT_SYNSET})
    _check_noun(subtree)

    @cache
    def below(node: str) -> bool:  # node is subtree or one of its hyponyms (instance hyponyms included)
        return node == subtree or any(below(p) for p in all_parents[node])

    inside = {name for name in all_parents if below(name)}
    inside_parents = {n: tuple(p for p in all_parents[n] if p in inside) for n in sorted(inside - {subtree})}
    return Hierarchy(subtree, inside_parents)


def _single_paths(h: Hierarchy, longest: bool) -> dict[str, tuple[str, ...]]:
    """Every synset's longest (or shortest) path to the top, itself first; ties by the smallest tuple
    of names (exact by dynamic programming: candidates compare as their parents' best paths do)."""
    sign = -1 if longest else 1

    @cache
    def path(node: str) -> tuple[str, ...]:
        parents = h.parents.get(node, ())  # the top has none
        return (node, *min((path(p) for p in parents), key=lambda t: (sign * len(t), t))) if parents else (node,)

    return {node: path(node) for node in h.nodes}


def _longest_distances(h: Hierarchy) -> dict[str, dict[str, int]]:
    """For every synset, the longest distance (hypernym links) to each of its ancestors, itself 0."""

    @cache
    def dist(node: str) -> dict[str, int]:
        found = {node: 0}
        for parent in h.parents.get(node, ()):
            for anc, d in dist(parent).items():
                found[anc] = max(found.get(anc, 0), d + 1)
        return found

    return {node: dist(node) for node in h.nodes}


@lru_cache(maxsize=None)
def _ranked_table(subtree: str | None, path_rule: str) -> dict[str, tuple[tuple[str, ...], int]]:
    """synset -> (its ancestors, most specific first, top included; its depth under the rule). Memoised."""
    choice(*PATH_RULES)("path_rule", path_rule)
    h = noun_hierarchy(subtree)
    if path_rule == "union":
        table = {}
        for node, dist in _longest_distances(h).items():
            ranked = sorted((d, a) for a, d in dist.items() if a != node)
            table[node] = (tuple(a for _, a in ranked), dist[h.top])
        return table
    return {n: (p[1:], len(p) - 1) for n, p in _single_paths(h, path_rule == "longest").items()}


@lru_cache(maxsize=None)
def _ancestors(subtree: str | None) -> dict[str, frozenset[str]]:
    """synset -> all its ancestors in the hierarchy, over every hypernym path."""
    return {n: frozenset(d) - {n} for n, d in _longest_distances(noun_hierarchy(subtree)).items()}


def ranked_hypernyms(
    name: str,
    path_rule: str = "longest",
    include_root: bool = True,
    subtree: str | None = None,
    subtree_root_relevant: bool = False,
) -> list[str]:
    """The relevant docIDs of query ``name`` (section 5.1), most specific first: deer.n.01 gives
    ruminant.n.01, even-toed_ungulate.n.01, ..., physical_entity.n.01 [, entity.n.01]. One lookup in
    the memoised table of the whole hierarchy (``_ranked_table``)."""
    _check_noun(name, "query")
    table, top = _ranked_table(subtree, path_rule), subtree or ROOT_SYNSET
    if name == top or name not in table:
        raise ValueError(f"{name!r} is not a query of the hierarchy below {top}")
    keep_top = include_root if subtree is None else subtree_root_relevant
    return [a for a in table[name][0] if keep_top or a != top]


# --------------------------------------------------------------------------- the dataset


def _keyed_order(names: Sequence[str], seed: int, purpose: str) -> list[str]:
    """``names`` in a seeded order that depends only on (seed, purpose, name): sorted by a keyed BLAKE2 hash."""
    key = f"{purpose}:{seed}".encode()[:64]
    return sorted(names, key=lambda n: hashlib.blake2b(n.encode(), key=key, digest_size=16).digest())


def _select_queries(p: dict[str, Any]) -> tuple[list[str], dict[str, list[str]], dict[str, int]]:
    """(queries kept by the filters, sorted; relevant docIDs; depths), or a ValueError naming the filter."""
    h, rules = noun_hierarchy(p["subtree"]), [p[k] for k in ("path_rule", "include_root", "subtree")]
    relevant = {q: ranked_hypernyms(q, *rules, p["subtree_root_relevant"]) for q in h.parents}
    if not (kept := sorted(q for q, docs in relevant.items() if len(docs) >= p["min_relevant"])):
        most = max((len(d) for d in relevant.values()), default=0)
        raise ValueError(
            f"no queries left after filtering: the hierarchy below {h.top} has {len(relevant)} "
            f"queries, and min_relevant={p['min_relevant']} keeps none (the most relevant docs any "
            f"has is {most}; path_rule={p['path_rule']!r}, include_root={p['include_root']}, "
            f"subtree_root_relevant={p['subtree_root_relevant']})"
        )
    if p["max_queries"] is not None:
        kept = sorted(_keyed_order(kept, p["seed"], "sample")[: p["max_queries"]])
    table = _ranked_table(p["subtree"], p["path_rule"])
    return kept, relevant, {q: table[q][1] for q in kept}


def _eval_queries(queries: list[str], n_eval: int | float, seed: int) -> set[str]:
    """The held-out evaluation queries (Table 1 uses 5000): a seeded sample, by query."""
    count = round(n_eval * len(queries)) if isinstance(n_eval, float) else n_eval
    if count >= len(queries):
        raise ValueError(
            f"n_eval={n_eval} leaves no training queries: only {len(queries)} queries "
            f"pass the filters; give n_eval below {len(queries)}"
        )
    return set(_keyed_order(queries, seed, "split")[:count])


def _draw_negative(
    query: str, excluded: frozenset[str], pool: Sequence[str], pool_set: frozenset[str], seed: int
) -> str:
    """Section 5.1's negative: a synset of ``pool`` off the query's path, drawn keyed by (seed, query)."""
    if len(pool) - len((excluded | {query}) & pool_set) <= 0:
        raise ValueError(
            f"no negative can be drawn for {query!r}: every synset of the pool is "
            "the query or one of its hypernyms; use a larger subtree"
        )
    rng = query_rng(seed, f"negative:{query}")
    while True:
        candidate = pool[int(rng.integers(len(pool)))]
        if candidate != query and candidate not in excluded:
            return candidate


def _build(p: dict[str, Any]) -> pd.DataFrame:
    """The query table of section 5.1 for validated parameters ``p`` (no cache)."""
    queries, relevant, depth = _select_queries(p)
    held_out = _eval_queries(queries, p["n_eval"], p["seed"])
    pool_tree = p["subtree"] if p["negative_pool"] == "subtree" else None
    pool = noun_hierarchy(pool_tree).nodes
    pool_set, ancestors = frozenset(pool), _ancestors(pool_tree)
    return pd.DataFrame(
        {
            "query": queries,
            "relevant": [relevant[q] for q in queries],
            "negative": [_draw_negative(q, ancestors[q], pool, pool_set, p["seed"]) for q in queries],
            "depth": np.array([depth[q] for q in queries], dtype=np.int64),
            "n_relevant": np.array([len(relevant[q]) for q in queries], dtype=np.int64),
            "split": ["eval" if q in held_out else "train" for q in queries],
            "prompt": [wordnet_prompt(q, relevant[q], query_rng(p["seed"], q), name=p["template"]) for q in queries],
        }
    )


def build_wordnet_dataset(
    path_rule: str = "longest",
    include_root: bool = True,
    subtree: str | None = None,
    max_queries: int | None = None,
    min_relevant: int = 1,
    n_eval: int | float = 5000,
    template: str = "wordnet",
    seed: int = 0,
    cache: bool = True,
    *,
    subtree_root_relevant: bool = False,
    negative_pool: str = "subtree",
    cache_dir: Path | None = None,
) -> pd.DataFrame:
    """The WordNet ranking dataset of section 5.1: one row per query (sorted by name) with the
    columns ``query, relevant (list, rank 1 first), negative, depth, n_relevant, split, prompt``;
    ``depth`` counts the hypernym links to the top along the rule's path (docs/design.md, "Datasets").

    Filters in order: ``subtree``, ``min_relevant``, ``max_queries`` (seeded sample); then ``n_eval``
    queries (an int, or a fraction in (0, 1)) are held out as ``split == "eval"`` (Table 1: 5000).
    ``prompt``: Appendix D.1 or the short template, docIDs shuffled by ``query_rng(seed, query)``.
    With ``cache`` the table is saved as ``<cache_dir or data/cache/wordnet>/<params_hash>/`` and
    reused; ``df.attrs["params"]`` holds the parameters and ``df.attrs["hash"]`` their hash."""
    params = {
        "format_version": FORMAT_VERSION,
        **{k: v for k, v in locals().items() if k not in ("cache", "cache_dir")},
    }
    if negative_pool not in NEGATIVE_POOLS:  # the other values are checked at the edge (notebook 03's RULES)
        raise ValueError(f"unknown negative_pool {negative_pool!r}; choose one of {list(NEGATIVE_POOLS)}")
    folder = Path(cache_dir or paths.CACHE / "wordnet") / dataset_cache.params_hash(params)
    tables = dataset_cache.cached_tables(folder, ["relevant"], ["queries"]) if cache else None
    if tables is not None:
        df = tables["queries"][QUERY_COLUMNS]
    else:
        df = _build(params)
        if cache:
            dataset_cache.save_tables(folder, {"queries": df}, {**params, "hash": folder.name, "n_queries": len(df)})
    df.attrs.update(params=params, hash=folder.name)
    return df


# --------------------------------------------------------------------------- training views


def top1_view(df: pd.DataFrame) -> pd.DataFrame:
    """One item per query, docID = the rank-1 hypernym: the ~84k view trained with lambda(r) = 1[r = 1]
    (Appendix B). Columns ``query, docid, rank, n_q, prompt, split``."""
    top1 = df.assign(docid=df["relevant"].str[0].astype(str), rank=1, n_q=df["n_relevant"])
    return top1.reset_index(drop=True)[ITEM_COLUMNS]


def per_docid_view(df: pd.DataFrame) -> pd.DataFrame:
    """One item (q, d_r, r, n_q) per relevant docID: the ~700k view trained with item-level
    reweighting lambda(r) (section 4, Appendix B); a query's rows are consecutive, rank 1 first, and
    share its prompt string (object columns: one string object, not a copy a row)."""
    items = df.reset_index(drop=True).astype({"query": object, "prompt": object, "split": object})
    items = (
        items.explode("relevant")
        .astype({"relevant": object})
        .rename(columns={"relevant": "docid", "n_relevant": "n_q"})
    )
    return items.assign(rank=items.groupby(level=0).cumcount() + 1).reset_index(drop=True)[ITEM_COLUMNS]


# --------------------------------------------------------------------------- statistics (Appendix C)


def query_distribution(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Appendix C: how many queries have each value of ``column`` (``n_relevant``: relevant docIDs;
    ``depth``: how deep the query sits), as columns <column>, queries, fraction."""
    counts = df[column].value_counts().sort_index().rename_axis(column).reset_index(name="queries")
    return counts.assign(fraction=counts["queries"] / max(len(df), 1))


def docid_token_lengths(df: pd.DataFrame, tokenizer) -> pd.DataFrame:
    """Appendix C: columns docid (sorted), n_tokens (tokenised alone by ``tokenizer``, called like a
    transformers tokenizer, without special tokens), occurrences (items it is relevant in)."""
    counts = df["relevant"].explode().value_counts().sort_index()
    n_tokens = [len(tokenizer(d, add_special_tokens=False)["input_ids"]) for d in counts.index]
    return pd.DataFrame({"docid": counts.index, "n_tokens": n_tokens, "occurrences": counts.to_numpy()})


def token_length_distribution(lengths: pd.DataFrame) -> pd.DataFrame:
    """From ``docid_token_lengths``: per token length, the number of docIDs and of items."""
    grouped = lengths.groupby("n_tokens")
    return pd.DataFrame({"docids": grouped.size(), "items": grouped["occurrences"].sum()}).reset_index()


def dataset_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per split and overall: queries, per-docID items, mean / max relevant docIDs, mean depth."""
    agg = dict(queries=("n_relevant", "size"), items=("n_relevant", "sum"), mean_relevant=("n_relevant", "mean"))
    agg |= dict(max_relevant=("n_relevant", "max"), mean_depth=("depth", "mean"))
    parts = [df.groupby("split").agg(**agg), df.assign(split="all").groupby("split").agg(**agg)]
    return pd.concat(parts).rename_axis(None)


PAPER_QUERIES, PAPER_PER_DOCID_ITEMS = 82_114, 700_000  # section 5.1, Appendix B


def dataset_findings(m: dict, p: dict) -> list[dict]:
    """Notebook 03's metrics ``m`` (parameters ``p``) against section 5.1 and Appendix B: ``Finding`` rows."""
    from arrank.common.findings import finding

    whole = not p.get("subtree") and (p.get("min_relevant") or 1) == 1 and not p.get("max_queries")
    scale = (
        f"{m['n_queries']:,} queries, {m['n_items_top1']:,} top-1 and {m['n_items_per_docid']:,} per-docID items"
        f"{'' if whole else ' in the ' + repr(p.get('subtree')) + ' subtree, min_relevant ' + str(p.get('min_relevant'))}"
    )
    near = lambda ours, theirs: abs(ours - theirs) <= 0.05 * theirs
    return [
        finding(
            "section 5.1's example: the ranked hypernyms of deer.n.01 (ruminant, even-toed ungulate, ..., entity)",
            m["deer_matches_paper"],
            "computed over all of WordNet",
        ),
        finding(
            "held-out queries never appear in training (either view)",
            m["eval_queries_in_training"] == 0,
            f"{m['n_eval_queries']:,} held out, {m['eval_queries_in_training']} of them in training items",
        ),
        finding(
            f"the paper's scale: all {PAPER_QUERIES:,} noun queries, about 84k top-1 and 700k per-docID items",
            (near(m["n_queries"], PAPER_QUERIES) and near(m["n_items_per_docid"], PAPER_PER_DOCID_ITEMS))
            if whole
            else None,
            scale,
        ),
    ]
