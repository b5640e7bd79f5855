"""Query and product-title embeddings for the ESCI dataset (section 5.1); the paper's Gecko is not
public. The embedder is a ``spec``: ``"tfidf"`` or ``"tfidf:<dim>"`` (default, offline, dim 256),
``"precomputed:<folder>"`` (computed elsewhere, used as given: :func:`load_precomputed`; query ids
``str(query_id)``, title ids ``title_pool``'s ``title_id``) or ``"st:<model name or path>"``
(sentence-transformers, not a dependency). docs/design.md, "Datasets"."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd


def embed(
    spec: str,
    queries: Sequence[str],
    titles: Sequence[str],
    query_ids: Sequence[str],
    title_ids: Sequence[str],
    seed: int = 0,
    device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray]:
    """(query, title) embeddings as float32 arrays, rows in the order given, from the ``spec`` embedder
    (its form is checked once, by notebook 04's parameters)."""
    kind, _, arg = spec.partition(":")
    if kind == "tfidf":
        return tfidf_embeddings(queries, titles, dim=int(arg or 256), seed=seed)
    if kind == "precomputed":
        return (load_precomputed(Path(arg), "queries", query_ids), load_precomputed(Path(arg), "titles", title_ids))
    if kind == "st" and arg:
        return sentence_transformer_embeddings(arg, queries, titles, device=device)
    raise ValueError(f"embedder={spec!r} is unknown: give 'tfidf', 'tfidf:<dim>', 'precomputed:<folder>', 'st:<model>'")


def fingerprint(spec: str) -> dict[str, int]:
    """File sizes of a precomputed embedder's files (part of the ESCI cache key); else empty."""
    kind, _, arg = spec.partition(":")
    files = sorted(Path(arg).glob("*")) if kind == "precomputed" else []
    return {p.name: p.stat().st_size for p in files if p.is_file()}


def tfidf_embeddings(
    queries: Sequence[str], titles: Sequence[str], dim: int = 256, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The offline default standing in for Gecko (section 5.1): sublinear TF-IDF over lower-cased
    words (the 262,144 most frequent) fitted on queries + titles together, TruncatedSVD to ``dim``
    (capped by the vocabulary and row counts, ``random_state=seed``), rows L2-normalised (an all-zero
    row stays zero): (query, title) float32 arrays."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    texts = list(queries) + list(titles)
    tfidf = TfidfVectorizer(
        token_pattern=r"(?u)\b\w+\b", sublinear_tf=True, dtype=np.float32, max_features=262_144
    ).fit_transform(texts)
    k = max(1, min(dim, tfidf.shape[1] - 1, len(texts) - 1))
    X = normalize(TruncatedSVD(n_components=k, random_state=seed).fit_transform(tfidf)).astype(np.float32)
    return X[: len(queries)], X[len(queries) :]


def sentence_transformer_embeddings(
    model: str, queries: Sequence[str], titles: Sequence[str], device: str = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """Normalised sentence-transformers embeddings (batches of 256), (query, title) float32 arrays;
    an ImportError saying what to do without the package."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ImportError(
            f"embedder 'st:{model}' needs the sentence-transformers package, which is not "
            "installed: `pip install sentence-transformers`, or use embedder='tfidf' (offline) or "
            "'precomputed:<folder>' (e.g. Gecko embeddings computed elsewhere)"
        ) from err
    st = SentenceTransformer(model, device=device)
    kwargs = dict(batch_size=256, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return tuple(st.encode(list(texts), **kwargs).astype(np.float32) for texts in (queries, titles))


def load_precomputed(folder: Path, kind: str, wanted: Sequence[str]) -> np.ndarray:
    """Rows of ``folder``'s ``kind`` embeddings for the ids ``wanted``, in that order; clear errors for
    no file, ids and rows that do not match one to one, duplicate ids, missing ids."""
    pq, npy, txt = folder / f"{kind}.parquet", folder / f"{kind}.npy", folder / f"{kind}_ids.txt"
    if pq.exists():
        df = pd.read_parquet(pq)
        if not {"id", "embedding"} <= set(df.columns):
            raise ValueError(f"{pq} needs the columns 'id' and 'embedding'; it has {list(df.columns)}")
        ids, X = [str(i) for i in df["id"]], np.stack(df["embedding"].to_numpy()) if len(df) else np.zeros((0, 0))
    elif npy.exists() and txt.exists():
        ids, X = txt.read_text().splitlines(), np.load(npy)
    else:
        raise FileNotFoundError(
            f"no {kind} embeddings in {folder}: expected {pq.name}, or {npy.name} with {txt.name} (one id per line)"
        )
    if len(ids) != len(X):
        raise ValueError(
            f"precomputed {kind} embeddings in {folder}: {len(X)} rows but {len(ids)} ids; they must match one to one"
        )
    index = {i: n for n, i in enumerate(ids)}
    if len(index) != len(ids):
        raise ValueError(f"precomputed {kind} embeddings in {folder}: duplicate ids")
    if missing := [w for w in wanted if w not in index]:
        raise ValueError(
            f"precomputed {kind} embeddings in {folder} lack {len(missing)} of the "
            f"{len(wanted)} ids needed, e.g. {missing[:5]}"
        )
    return np.asarray(X, dtype=np.float32)[[index[w] for w in wanted]]
