"""embedders: the embedder spec's dispatch, the offline TF-IDF + SVD embeddings (section 5.1's
stand-in for Gecko), and precomputed embeddings read by id, with their one-line refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arrank.data import embedders


def test_the_spec_names_the_embedder_its_dimension_and_seed(monkeypatch):
    calls = []
    monkeypatch.setattr(embedders, "tfidf_embeddings", lambda q, t, dim, seed: calls.append((dim, seed)))
    embedders.embed("tfidf", ["q"], ["t"], ["1"], ["a"], seed=7)
    embedders.embed("tfidf:16", ["q"], ["t"], ["1"], ["a"])
    assert calls == [(256, 7), (16, 0)]
    with pytest.raises(ValueError, match=r"^embedder='st:' is unknown: give 'tfidf'"):
        embedders.embed("st:", ["q"], ["t"], ["1"], ["a"])


def test_tfidf_cosines_are_sublinear_tf_idf_cosines_of_words_of_any_length():
    """With ``dim`` covering the matrix's rank the SVD keeps the rows' inner products: the cosine of
    'red red red red shoe boot' and 'red shoe boot' is that of tf (1 + ln 4, 1, 1) and (1, 1, 1)
    (every word in both: one idf); a one-letter word counts; an empty text stays a zero row."""
    Q, T = embedders.tfidf_embeddings(["red red red red shoe boot", "c"], ["red shoe boot", "c d", ""])
    assert Q.dtype == T.dtype == np.float32 and (Q.shape, T.shape) == ((2, 4), (3, 4))  # 5 texts, 5 words: 4
    tf = 1 + math.log(4)
    assert float(Q[0] @ T[0]) == pytest.approx((tf + 2) / math.sqrt((tf * tf + 2) * 3), abs=1e-5)
    assert np.linalg.norm(Q[1]) == pytest.approx(1.0, abs=1e-5) and not T[2].any()
    assert embedders.tfidf_embeddings(["a b"], ["c d"], dim=8)[0].shape == (1, 1)  # 2 texts: 1 dimension
    assert embedders.tfidf_embeddings(["a", "b"], ["a b", "b a"], dim=8)[0].shape == (2, 1)  # 2 words: 1


def test_tfidf_rows_are_unit_length_after_a_lossy_projection():
    words = "usb charger cable hdmi adapter kitchen widget wall plug lamp".split()
    texts = [" ".join(words[i : i + 3]) for i in range(8)]
    Q, T = embedders.tfidf_embeddings(texts[:3], texts[3:], dim=2)
    assert Q.shape == (3, 2) and T.shape == (5, 2)
    assert np.allclose(np.linalg.norm(np.vstack([Q, T]), axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("fmt", ["npy", "parquet"])
def test_precomputed_rows_follow_the_wanted_ids(tmp_path, fmt):
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    if fmt == "npy":
        np.save(tmp_path / "titles.npy", X)
        (tmp_path / "titles_ids.txt").write_text("7\n8\n9\n")
    else:
        pd.DataFrame({"id": [7, 8, 9], "embedding": list(X)}).to_parquet(tmp_path / "titles.parquet")
    got = embedders.load_precomputed(tmp_path, "titles", ["9", "7"])
    assert got.dtype == np.float32 and got.tolist() == [[2.0, 2.0], [1.0, 0.0]]


def test_precomputed_embeddings_that_do_not_fit_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    emb = Path("emb")
    emb.mkdir()
    with pytest.raises(FileNotFoundError, match=r"^no queries embeddings in emb: expected queries\.parquet, or "):
        embedders.load_precomputed(emb, "queries", ["1"])
    np.save(emb / "queries.npy", np.eye(7))
    message = r"^no queries embeddings in emb: expected queries\.parquet, or queries\.npy with queries_ids\.txt \(one"
    with pytest.raises(FileNotFoundError, match=message):  # the ids' file is missing
        embedders.load_precomputed(emb, "queries", ["1"])
    pd.DataFrame({"id": ["1"], "vec": [[1.0]]}).to_parquet(emb / "queries.parquet")
    message = r"^emb/queries\.parquet needs the columns 'id' and 'embedding'; it has \['id', 'vec'\]$"
    with pytest.raises(ValueError, match=message):
        embedders.load_precomputed(emb, "queries", ["1"])
    (emb / "queries.parquet").unlink()
    (emb / "queries_ids.txt").write_text("".join(f"{i}\n" for i in [1, 2, 3, 4, 5, 6, 1]))
    with pytest.raises(ValueError, match=r"^precomputed queries embeddings in emb: duplicate ids$"):
        embedders.load_precomputed(emb, "queries", ["1"])
    (emb / "queries_ids.txt").write_text("".join(f"{i}\n" for i in range(7)))
    message = r"^precomputed queries embeddings in emb lack 6 of the 7 ids needed, e\.g\. \['x1', .*'x5'\]$"
    with pytest.raises(ValueError, match=message):
        embedders.load_precomputed(emb, "queries", ["0"] + [f"x{i}" for i in range(1, 7)])


def test_a_precomputed_embedders_fingerprint_is_its_files_sizes(tmp_path):
    (tmp_path / "queries.npy").write_bytes(b"\0" * 152)
    (tmp_path / "queries_ids.txt").write_text("a\n")
    (tmp_path / "old").mkdir()
    assert embedders.fingerprint(f"precomputed:{tmp_path}") == {"queries.npy": 152, "queries_ids.txt": 2}
    assert embedders.fingerprint("tfidf:16") == {}
