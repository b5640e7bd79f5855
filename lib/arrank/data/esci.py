"""The ESCI Shopping Queries ranking dataset of section 5.1 (prompt of Appendix D.2).

The recipe (docs/design.md, "Datasets"): :func:`load_esci`, English queries and titles
(:func:`english_queries`, :func:`title_pool`), embeddings (:mod:`arrank.data.embedders`), the 1st,
100th, ..., 10000th titles per query (:func:`ranked_titles`), OMP docIDs (:mod:`arrank.data.docids`),
the D.2 prompt; :func:`build_esci_dataset` runs and caches it all. The quick profile and the tests
read ``data/fixtures/esci_fixture/`` (``data/fixtures/make_esci_fixture.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from arrank.common import paths
from arrank.data import cache as dataset_cache
from arrank.data import docids as dids
from arrank.data import embedders, prompts

REPOSITORY = "https://github.com/amazon-science/esci-data"
EXAMPLES_FILE = "shopping_queries_dataset_examples.parquet"
PRODUCTS_FILE = "shopping_queries_dataset_products.parquet"
EXAMPLES_COLUMNS = tuple(
    "example_id query query_id product_id product_locale esci_label small_version large_version split".split()
)
PRODUCTS_COLUMNS = tuple(
    "product_id product_title product_description product_bullet_point product_brand product_color product_locale".split()
)
DEFAULT_DIR = paths.DATA / "esci"
FIXTURE_DIR = paths.DATA / "fixtures" / "esci_fixture"
CACHE_VERSION = 1
LIST_COLUMNS = ("product_ids", "titles", "docids", "positions", "scores", "gold", "atoms")
# the columns of query_table, in order
QUERY_TABLE_COLUMNS = (
    "query_id query split small_version product_ids titles docids positions scores gold n_titles n_collisions prompt"
).split()


# --- Loading --------------------------------------------------------------------------------


def esci_files(data_dir: Path | str | None = None) -> dict[str, Path]:
    """Paths of the two dataset files under ``data_dir`` (default ``data/esci``); a FileNotFoundError
    saying where to get a missing one and where to put it."""
    folder = Path(data_dir) if data_dir is not None else DEFAULT_DIR
    files = {"examples": folder / EXAMPLES_FILE, "products": folder / PRODUCTS_FILE}
    if missing := [p.name for p in files.values() if not p.is_file()]:
        raise FileNotFoundError(
            f"ESCI file(s) missing in {folder}: {', '.join(missing)}. The Shopping Queries Dataset "
            f"is in the repository {REPOSITORY} (folder shopping_queries_dataset/, stored with git "
            f"lfs): `git lfs install && git clone {REPOSITORY}`, then copy {EXAMPLES_FILE} and "
            f"{PRODUCTS_FILE} into {folder} (or pass data_dir=<their folder>)."
        )
    return files


def load_esci(data_dir: Path | str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(examples, products) as published (section 5.1); a clear ValueError naming any missing column."""
    files, tables = esci_files(data_dir), []
    for name, cols in (("examples", EXAMPLES_COLUMNS), ("products", PRODUCTS_COLUMNS)):
        tables.append(df := read_parquet_file(files[name]))
        if missing := [c for c in cols if c not in df.columns]:
            raise ValueError(
                f"{files[name]} lacks the column(s) {missing}; the {name} file of {REPOSITORY} has {list(cols)}"
            )
    return tables[0], tables[1]


LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def read_parquet_file(path: Path) -> pd.DataFrame:
    """``pd.read_parquet`` with clear errors for a git-lfs pointer and for any other unreadable file."""
    with open(path, "rb") as fh:
        head = fh.read(len(LFS_POINTER))
    if head == LFS_POINTER:
        raise ValueError(
            f"{path} is a git-lfs pointer ({path.stat().st_size} bytes), not the parquet file: "
            f"run `git lfs install && git lfs pull` in your clone of {REPOSITORY}, then copy "
            f"the fetched file here again"
        )
    try:
        return pd.read_parquet(path)
    except Exception as err:  # pyarrow's errors name neither the file nor what to do
        raise ValueError(
            f"{path} is not a readable parquet file ({type(err).__name__}: {err}); it is source "
            f"data, not rebuilt here: {restore_command(path)}"
        ) from err


def restore_command(path: Path) -> str:
    """How to get a damaged ESCI source file back: the fixture from git, the real files by git lfs."""
    path = Path(path).resolve()
    if path.is_relative_to(FIXTURE_DIR.resolve()):
        return f"restore the committed fixture with `git checkout -- {path.relative_to(paths.ROOT.resolve())}`"
    return (
        f"fetch it again with `git lfs pull` in your clone of {REPOSITORY} (folder shopping_queries_dataset/), "
        f"then copy {path.name} into {path.parent}"
    )


# --- English filter (section 5.1: "we filter out all non-English queries and product titles") --

WORD = re.compile(r"[^\W\d_]+")
NON_LATIN = re.compile(r"[^\W\d_\x00-\u024f\u1e00-\u1eff]")  # letters of non-Latin scripts
# Frequent words of the other languages met in ESCI-like titles (Spanish above all: the es
# locale), chosen not to be common English words.
FOREIGN_WORDS = frozenset(
    """
de del la las los el con para por y sin una unos unas al su sus que más muy tu pared cargador
carga negro negra blanco blanca rojo roja azul verde hombre hombres mujer mujeres niño niños niña
niñas juego paquete tamaño piezas pieza funda teléfono accesorios batería inalámbrico inalámbrica
auriculares ratón teclado pantalla estuche bolsa cocina agua botella zapatos zapatillas mochila
lámpara escritorio cafetera cargadores cables juguete juguetes
und mit für der das ein eine zum avec pour et les des du une sur com não em
""".split()
)
ENGLISH_WORDS = frozenset(
    """
the and for with of to in on by from your this that or is are set pack black white men women kids
charger case cover holder home office kitchen
""".split()
)
SPANISH_MARKS = frozenset("ñáéíóúü¿¡")


def is_english(text: str | None) -> bool:
    """Deterministic language check standing in for a language detector (none is installed).

    Not English when (a) >= 2 letters of non-Latin scripts make >= 5% of its letters, or (b) foreign
    >= 2 and foreign > english, foreign counting words of ``FOREIGN_WORDS`` plus 1 for any Spanish
    mark (``SPANISH_MARKS``), english counting words of ``ENGLISH_WORDS`` (words: lower-cased runs of
    letters). Text without letters is English. Known misses: short foreign texts with < 2 marker
    words, English titles dense in Spanish brand words ("El Paso ... La Costeña ...")."""
    low = (text or "").lower()
    words = WORD.findall(low)
    other = len(NON_LATIN.findall(low))
    if other >= 2 and other >= 0.05 * sum(map(len, words)):
        return False
    foreign = sum(w in FOREIGN_WORDS for w in words) + (not SPANISH_MARKS.isdisjoint(low))
    english = sum(w in ENGLISH_WORDS for w in words)
    return not (foreign >= 2 and foreign > english)


def english_queries(examples: pd.DataFrame) -> pd.DataFrame:
    """One row per English query (locale ``us`` and :func:`is_english`), sorted by query_id: query_id,
    query, split (first seen), small_version (any of its examples)."""
    us = examples[examples["product_locale"] == "us"]
    q = (
        us.groupby("query_id", sort=True)
        .agg(query=("query", "first"), split=("split", "first"), small_version=("small_version", "max"))
        .reset_index()
    )
    q["small_version"] = q["small_version"].astype(bool)
    return q[q["query"].map(is_english)].reset_index(drop=True)


def title_pool(products: pd.DataFrame, english_only: bool = True) -> pd.DataFrame:
    """The titles to rank (section 5.1): title_id, product_id, product_locale, title, english.

    Titles stripped, empty ones dropped, one row per (product_id, locale), exact duplicates kept once
    (locale ``us`` first, then product_id). ``english`` = locale ``us`` and :func:`is_english`;
    ``english_only`` keeps those rows. ``title_id`` (the id of precomputed title embeddings) is the
    product_id for ``us``, else ``<locale>:<product_id>``."""
    df = products[["product_id", "product_locale", "product_title"]].copy()
    df["title"] = df.pop("product_title").fillna("").astype(str).str.strip()
    df = df[df["title"] != ""]
    df["english"] = (df["product_locale"] == "us") & df["title"].map(is_english)
    if english_only:
        df = df[df["english"]]
    df = df.assign(_us=df["product_locale"] != "us").sort_values(["_us", "product_locale", "product_id"])
    df = df.drop_duplicates(["product_id", "product_locale"]).drop_duplicates("title").drop(columns="_us")
    us = df["product_locale"] == "us"
    df.insert(0, "title_id", df["product_id"].where(us, df["product_locale"] + ":" + df["product_id"]))
    return df.reset_index(drop=True)


# --- Rank selection (section 5.1: "the 1st, 100th, 200th, ..., 10000th product titles") ------


def rank_positions(step: int = 100, depth: int = 10_000, n_titles: int | None = None) -> np.ndarray:
    """1-based rank positions 1, step, 2*step, ..., up to min(depth, n_titles): position p is the p-th
    largest inner product; ``step=100, depth=10000`` gives the paper's 101 positions (``step``, ``depth``
    >= 1: notebook 04's parameters)."""
    last = depth if n_titles is None else min(depth, n_titles)
    return np.array(sorted({1, *range(step, last + 1, step)}) if last >= 1 else [], dtype=np.int64)


def topk_inner_products(
    Q: np.ndarray,
    T: np.ndarray,
    k: int,
    query_block: int = 256,
    title_block: int = 65_536,
    device: str = "cpu",
    keep: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` titles per query by inner product ``Q @ T.T``, best first: (title indices,
    scores), each n_queries x k (k capped by the number of titles); ties by ascending title index.
    Exact ties at the k-th place are broken by the selection routine (reproducibly for fixed inputs
    and blocks).

    Blocked over queries and titles (memory O(query_block * (k + title_block))): a running top-k
    merged with each title block by numpy, or by torch for ``device`` "cuda[:n]", "torch:<device>"
    or "auto" (CUDA when available). ``keep`` (0-based sorted positions < k) returns only those
    columns, computed per query block."""
    Q, T = np.asarray(Q), np.asarray(T)
    k = min(int(k), len(T))
    cols = np.arange(k) if keep is None else np.asarray(keep, dtype=np.int64)
    if k < 1 or len(Q) == 0:
        return np.zeros((len(Q), len(cols)), np.int64), np.zeros((len(Q), len(cols)), Q.dtype)
    backend = _backend(device)
    T_dev = T if backend is None else _to_torch(T, backend)
    block = _topk_block if backend is None else _topk_block_torch
    parts = [block(Q[i : i + query_block], T_dev, k, title_block, backend) for i in range(0, len(Q), query_block)]
    return (np.vstack([p[0][:, cols] for p in parts]).astype(np.int64), np.vstack([p[1][:, cols] for p in parts]))


def _backend(device: str):
    """None for numpy; else a torch.device."""
    if device == "cpu":
        return None
    import torch

    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else None
    return torch.device(device.removeprefix("torch:"))


def _to_torch(X: np.ndarray, device):
    import torch

    return torch.as_tensor(np.ascontiguousarray(X), device=device)


def _topk_block(q: np.ndarray, T, k: int, title_block: int, backend) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of one query block against all titles (running merge, numpy), sorted."""
    itype = np.int32 if len(T) < 2**31 else np.int64
    best_s, best_i = np.zeros((len(q), 0), q.dtype), np.zeros((len(q), 0), itype)
    for t0 in range(0, len(T), title_block):
        s = q @ T[t0 : t0 + title_block].T
        idx = np.broadcast_to(np.arange(t0, t0 + s.shape[1], dtype=itype), s.shape)
        best_s, best_i = np.hstack([best_s, s]), np.hstack([best_i, idx])
        if best_s.shape[1] > k:
            top = np.argpartition(-best_s, k - 1, axis=1)[:, :k]
            best_s, best_i = np.take_along_axis(best_s, top, 1), np.take_along_axis(best_i, top, 1)
    return _sort_desc(best_s, best_i)


def _topk_block_torch(q: np.ndarray, T, k: int, title_block: int, device) -> tuple[np.ndarray, np.ndarray]:
    import torch

    qt = _to_torch(q, device)
    best_s, best_i = qt.new_zeros((len(q), 0)), qt.new_zeros((len(q), 0), dtype=torch.long)
    for t0 in range(0, len(T), title_block):
        s = qt @ T[t0 : t0 + title_block].T
        idx = torch.arange(t0, t0 + s.shape[1], device=device).expand_as(s)
        best_s, best_i = torch.cat([best_s, s], 1), torch.cat([best_i, idx], 1)
        if best_s.shape[1] > k:
            top = torch.topk(best_s, k, dim=1, sorted=False)
            best_s, best_i = top.values, torch.gather(best_i, 1, top.indices)
    return _sort_desc(best_s.cpu().numpy(), best_i.cpu().numpy())


def _sort_desc(scores: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((idx, -scores), axis=-1)
    return np.take_along_axis(idx, order, 1), np.take_along_axis(scores, order, 1)


def ranked_titles(
    Q: np.ndarray, T: np.ndarray, step: int = 100, depth: int = 10_000, **topk_kw: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Section 5.1: (title indices, scores) at :func:`rank_positions` per query, best first; positions."""
    pos = rank_positions(step, depth, len(T))  # empty for no titles: then k = 0, (n_queries x 0) arrays
    idx, scores = topk_inner_products(Q, T, pos[-1] if len(pos) else 0, keep=pos - 1, **topk_kw)
    return idx, scores, pos


# --- docIDs and the query table ----------------------------------------------------------------


def query_table(
    queries: pd.DataFrame, pool: pd.DataFrame, docid: np.ndarray, ranked: tuple, p: Mapping[str, Any]
) -> pd.DataFrame:
    """One row per query with at least one English title among its ranked titles (section 5.1):
    ``queries`` (:func:`english_queries`), the ``pool`` and ``docid`` of each title, ``ranked`` =
    (title indices, scores, positions) of :func:`ranked_titles`, the build parameters ``p``.

    Columns: query_id, query, split, small_version, product_ids, titles, docids, positions (1-based
    ranks in the pool), scores, gold (the distinct docIDs, best rank first: the target ranking),
    n_titles, n_collisions (titles whose docID appeared higher in the list), prompt (Appendix D.2
    ``p["template"]``, titles shuffled with ``query_rng(p["seed"], query)``). ``p["collisions"]``:
    "keep" keeps every title, ``gold`` listing each docID once; "drop" keeps the best-ranked title
    of each docID; "suffix": docIDs are unique already."""
    idx, scores, positions = ranked
    english = pool["english"].to_numpy()
    titles, pids = pool["title"].to_numpy(), pool["product_id"].to_numpy()
    rows = []
    for r, q in enumerate(queries.itertuples(index=False)):
        sel = np.flatnonzero(english[idx[r]])
        cols = idx[r][sel]
        if p["collisions"] == "drop":
            first = pd.Index(docid[cols]).duplicated(keep="first")
            sel, cols = sel[~first], cols[~first]
        if len(cols) == 0:
            continue
        docs = [str(d) for d in docid[cols]]
        gold = list(dict.fromkeys(docs))
        rng = prompts.query_rng(p["seed"], q.query)
        prompt = prompts.esci_prompt(q.query, list(zip(docs, titles[cols])), rng, p["template"])
        ranks = positions[sel].tolist(), scores[r][sel].astype(float).tolist()
        # q: query_id, query, split, small_version (english_queries), then the ranked titles' columns
        rows.append(
            [*q, list(pids[cols]), list(titles[cols]), docs, *ranks, gold, len(docs), len(docs) - len(gold), prompt]
        )
    return pd.DataFrame(rows, columns=QUERY_TABLE_COLUMNS)


# --- Entry point -----------------------------------------------------------------------------


def build_esci_dataset(
    data_dir: Path | str | None = None,
    embedder: str = "tfidf",
    step: int = 100,
    depth: int = 10_000,
    n_components: int = 100,
    nnz: int = 3,
    template: str = "esci",
    seed: int = 0,
    max_queries: int | None = None,
    collisions: str = "keep",
    filter_titles: str = "before",
    device: str = "cpu",
    cache: bool = True,
    cache_dir: Path | str | None = None,
) -> dict[str, pd.DataFrame]:
    """The ESCI ranking dataset of section 5.1, as tables: ``queries`` (:func:`query_table`),
    ``titles`` (product_id, title, docid, sparse_docid, atoms), ``docid_counts`` (titles per sparse
    docID), ``trie_corpus`` / ``trie_queries`` (:func:`arrank.data.docids.trie_branching` over all
    docIDs / :func:`arrank.data.docids.query_trie_branching` over the gold lists), ``stats`` (one row
    of counts).

    ``embedder``: :mod:`arrank.data.embedders`. ``step``/``depth``: :func:`rank_positions`.
    ``n_components``/``nnz``: dictionary size and OMP nonzeros (the paper: 100 and 3). ``template``:
    "esci" (Appendix D.2) or "esci_short". ``max_queries``: the first English queries by query_id.
    ``collisions``: :func:`query_table`. ``filter_titles``: "before" ranks English titles only;
    "after" ranks every locale's titles, then drops the non-English ones (the paper's order of
    steps; a query left without titles is dropped). ``device``: "cpu", "cuda", "auto". With ``cache``
    the tables are saved atomically under ``<cache_dir or data/cache/esci>/<hash of the parameters
    and input file sizes>/`` and read back by a later call with the same inputs."""
    params = {k: v for k, v in locals().items() if k not in ("data_dir", "cache", "cache_dir", "device")}  # JSON-able
    files = esci_files(data_dir)
    meta = {
        "version": CACHE_VERSION,
        "params": params,
        "files": {n: p.stat().st_size for n, p in files.items()},
        "embedder_files": embedders.fingerprint(embedder),
    }
    target = (Path(cache_dir) if cache_dir is not None else paths.CACHE / "esci") / dataset_cache.params_hash(meta)
    cached = dataset_cache.cached_tables(target, LIST_COLUMNS, ["queries", "titles", "stats"]) if cache else None
    if cached is not None:
        return cached
    tables = _build(data_dir, params, device)
    if cache:
        meta["stats"] = tables["stats"].iloc[0].to_dict()
        dataset_cache.save_tables(target, tables, meta)
    return tables


def _build(data_dir: Path | str | None, p: dict[str, Any], device: str = "cpu") -> dict[str, pd.DataFrame]:
    """The pipeline of section 5.1 (see the module docstring)."""
    examples, products = load_esci(data_dir)
    backend = _backend(device)
    queries = english_queries(examples)
    n_english_queries = len(queries)
    if p["max_queries"] is not None:
        queries = queries.head(p["max_queries"])
    pool = title_pool(products, english_only=p["filter_titles"] == "before")
    Q, T = embedders.embed(
        p["embedder"],
        queries["query"].tolist(),
        pool["title"].tolist(),
        queries["query_id"].astype(str).tolist(),
        pool["title_id"].tolist(),
        seed=p["seed"],
        device=str(backend or "cpu"),
    )
    nonzero = np.linalg.norm(T, axis=1) > 0
    pool, T = pool[nonzero].reset_index(drop=True), T[nonzero]
    english = pool["english"].to_numpy()
    # section 5.1 docIDs of the English titles: titles whose codes coincide share a sparse docID (as in
    # the paper's own D.2 prompt); collisions="suffix" makes the used docIDs unique by appending ",k"
    # (docids.disambiguate_docids), "keep" and "drop" use the sparse docID (query_table)
    sparse, codes = dids.sparse_docids(T[english], p["n_components"], p["nnz"], p["seed"])
    used = dids.disambiguate_docids(sparse) if p["collisions"] == "suffix" else list(sparse)
    docid = np.full(len(pool), "", dtype=object)
    docid[english] = used
    ranked = ranked_titles(Q, T, p["step"], p["depth"], device=device, query_block=256 if backend is None else 4096)
    table = query_table(queries, pool, docid, ranked, p)
    us_titles = products.loc[products["product_locale"] == "us", "product_title"].fillna("")
    stats = {  # what the filters and docIDs did
        "us_queries": int(examples.loc[examples["product_locale"] == "us", "query_id"].nunique()),
        "english_queries": n_english_queries,
        "queries_considered": len(queries),
        "queries_kept": len(table),
        "queries_dropped_no_english_titles": len(queries) - len(table),
        "us_titles": len(us_titles),
        "us_titles_not_english": int((~us_titles.map(is_english)).sum()),
        "pool_titles": len(pool),
        "zero_embedding_titles": int((~nonzero).sum()),
        "english_titles": int(english.sum()),
        "short_docids": sum(len(d.split(",")) < p["nnz"] for d in sparse),
        **{f"docid_{k}": v for k, v in dids.collision_summary(sparse).items()},
        "mean_titles_per_query": float(table["n_titles"].mean()) if len(table) else 0.0,
        "queries_with_collisions": int((table["n_collisions"] > 0).sum()),
        "within_query_collisions": int(table["n_collisions"].sum()),
    }
    titles = pool.loc[english, ["product_id", "title"]].reset_index(drop=True)
    titles = titles.assign(docid=used, sparse_docid=sparse, atoms=dids.docid_atoms(codes))
    return {
        "queries": table,
        "titles": titles,
        "docid_counts": dids.docid_counts(sparse),
        "trie_corpus": dids.trie_branching(used),
        "trie_queries": dids.query_trie_branching(table["gold"]),
        "stats": pd.DataFrame([stats]),
    }


PAPER_STEP, PAPER_DEPTH, PAPER_HELD_OUT = 100, 10_000, 310  # section 5.1, Table 2


def dataset_findings(m: dict, p: dict) -> list[dict]:
    """Notebook 04's metrics ``m`` (parameters ``p``) against section 5.1 and Table 2: ``Finding`` rows."""
    from arrank.common.findings import finding

    step, depth = p["step"], p["depth"]
    most = 1 + depth // step  # the 1st, step-th, 2*step-th, ..., depth-th titles
    fixture = p.get("data_dir") == "fixture"
    return [
        finding(
            f"section 5.1: a query's relevant titles are the 1st, {PAPER_STEP}th, ..., {PAPER_DEPTH:,}th by inner "
            f"product ({1 + PAPER_DEPTH // PAPER_STEP} per query); here step {step}, depth {depth}",
            m["mean_titles_per_query"] <= most,
            f"mean {m['mean_titles_per_query']:.1f} titles per query, at most {most} (fewer where English titles run out)",
        ),
        finding(
            "docIDs exist because titles are long: a docID takes a few tokens, a title dozens",
            m["mean_docid_tokens"] * 3 < m["mean_title_tokens"],
            f"mean {m['mean_docid_tokens']:.1f} tokens per docID, {m['mean_title_tokens']:.1f} per title; "
            f"{m['docid_colliding_fraction']:.0%} of titles share a docID (the paper's own D.2 prompt shows one such pair)",
        ),
        finding(
            f"the paper's data: the real Shopping Queries files, {PAPER_HELD_OUT} held-out queries in Table 2",
            None if fixture else m["n_queries"] > PAPER_HELD_OUT,
            f"{'the committed fixture (the real schema, a stand-in): ' if fixture else ''}{m['n_queries']} queries, "
            f"{m['n_titles']} titles",
        ),
    ]
