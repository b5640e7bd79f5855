"""The ESCI ranking dataset of section 5.1, on the committed fixture and on tiny hand-made data."""

import importlib.util
import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pytest

from arrank.common import paths
from arrank.data import embedders, esci

PAPER_SPANISH = (
    "AUKEY USB C Cargador con GAN, Cargador de Pared USB con 60W Power Delivery 3.0, Compatible "
    'con MacBook Pro 13", iPhone 11 Pro, DELL XPS 13, HP Spectre, Lenevo Thinkpad, Nintendo Switch'
)
D2_START = (
    "You are a helpful assistant that can answer questions about the ESCI shopping queries dataset. "
    "You are given a query and a list of product titles for that query. Each product title is "
    "preceded by its docID in square brackets"
)


def cached_folders(cache_dir: Path) -> list[Path]:
    """Finished dataset folders in an ESCI cache (hidden temporary folders and broken-* excluded)."""
    return sorted(
        p for p in cache_dir.glob("[!.]*") if (p / "params.json").is_file() and not p.name.startswith("broken-")
    )


def save_precomputed(folder: Path, kind: str, ids: Sequence[str], X: np.ndarray, fmt: str = "npy") -> Path:
    """Write ``kind`` ("queries" or "titles") embeddings in the ``precomputed:<folder>`` layout (``fmt``
    "npy" or "parquet")."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "npy":
        np.save(folder / f"{kind}.npy", np.asarray(X, dtype=np.float32))
        (folder / f"{kind}_ids.txt").write_text("".join(f"{i}\n" for i in ids))
        return folder / f"{kind}.npy"
    if fmt == "parquet":
        pd.DataFrame({"id": [str(i) for i in ids], "embedding": list(np.asarray(X, np.float32))}).to_parquet(
            folder / f"{kind}.parquet", index=False
        )
        return folder / f"{kind}.parquet"
    raise ValueError(f"unknown embedding file format {fmt!r}; choose 'npy' or 'parquet'")


def fixture_module():
    spec = importlib.util.spec_from_file_location("make_esci_fixture", paths.DATA / "fixtures" / "make_esci_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    tables = esci.build_esci_dataset(esci.FIXTURE_DIR, step=5, depth=60, cache_dir=cache)
    return tables, cache


# --- rank selection -----------------------------------------------------------------------------


def test_rank_positions_are_one_based_and_capped():
    assert esci.rank_positions(100, 10_000).tolist() == [1] + list(range(100, 10_001, 100))
    assert esci.rank_positions(100, 10_000, n_titles=250).tolist() == [1, 100, 200]
    assert esci.rank_positions(100, 10_000, n_titles=50).tolist() == [1]
    assert esci.rank_positions(1, 4).tolist() == [1, 2, 3, 4]
    assert esci.rank_positions(1, 4, n_titles=0).tolist() == []


def exact_scores(n_titles, xs, seed=0):
    """Titles (a_j, b_j) with a, b permutations of 0..n-1; queries (x, 1) with |x| >= n: all
    inner products x*a_j + b_j are distinct integers, so the order is known exactly."""
    rng = np.random.default_rng(seed)
    T = np.stack([rng.permutation(n_titles), rng.permutation(n_titles)], 1).astype(np.float64)
    Q = np.stack([np.asarray(xs, float), np.ones(len(xs))], 1)
    return Q, T


@pytest.mark.parametrize("blocks", [(1, 1), (2, 7), (3, 64), (256, 65_536)])
def test_ranked_titles_pick_exactly_the_positions(blocks):
    n = 1234
    Q, T = exact_scores(n, [n, -n, 3 * n])
    idx, scores, pos = esci.ranked_titles(Q, T, step=100, depth=10_000, query_block=blocks[0], title_block=blocks[1])
    assert pos.tolist() == [1] + list(range(100, 1201, 100))  # depth 10000 capped at 1234 titles
    by_a = np.argsort(T[:, 0])  # title index with a = 0, 1, ..., n-1
    assert idx[0].tolist() == [by_a[n - p] for p in pos]  # largest a first
    assert idx[1].tolist() == [by_a[p - 1] for p in pos]  # smallest a first
    assert idx[2].tolist() == idx[0].tolist()
    assert np.array_equal(scores, np.take_along_axis(Q @ T.T, idx, 1))


@pytest.mark.parametrize("device", ["cpu", "torch:cpu"])
@pytest.mark.parametrize("blocks", [(1, 5), (4, 33), (7, 1000)])
def test_blocked_topk_equals_full_argsort(device, blocks):
    n = 300
    xs = np.random.default_rng(3).choice([-1, 1], 9) * np.arange(n, n + 9)
    Q, T = exact_scores(n, xs, seed=4)
    full = np.argsort(-(Q @ T.T), axis=1, kind="stable")
    for k in (1, 17, n, n + 50):
        idx, scores = esci.topk_inner_products(Q, T, k, query_block=blocks[0], title_block=blocks[1], device=device)
        assert np.array_equal(idx, full[:, : min(k, n)])
    # random floats: same sorted scores as a full sort
    rng = np.random.default_rng(5)
    Qf, Tf = rng.normal(size=(6, 8)).astype(np.float32), rng.normal(size=(500, 8)).astype(np.float32)
    _, s = esci.topk_inner_products(Qf, Tf, 40, query_block=blocks[0], title_block=blocks[1], device=device)
    assert np.allclose(s, -np.sort(-(Qf @ Tf.T), axis=1)[:, :40], atol=1e-5)


# --- English filter ---------------------------------------------------------------------------


def test_english_filter_on_examples():
    fixture = fixture_module()
    assert not esci.is_english(PAPER_SPANISH)
    assert all(esci.is_english(t) for t in fixture.PAPER_TITLES)  # the 12 English titles of App. D.2
    for text in [
        "Anker Cable USB C de Carga Rápida, Paquete de 2, Color Negro",
        "Anker 充電器 USB-C 急速充電 コンパクト",
        "zapatos de mujer",
        "Kabel mit Stecker für Auto und Haus",
    ]:
        assert not esci.is_english(text), text
    for text in [
        "La Roche-Posay Toleriane Double Repair Face Moisturizer with Ceramide",
        "Pokémon Café Mix Plush",
        "de walt drill",
        "100Ω resistor kit",
        "",
        "12345",
        "aukey usb c",
    ]:
        assert esci.is_english(text), text


def test_english_queries_and_title_pool_on_the_fixture():
    examples, products = esci.load_esci(esci.FIXTURE_DIR)
    queries = esci.english_queries(examples)
    assert len(queries) == 30 and set(queries["query"]) >= {"aukey usb c", "yoga mat"}
    assert not {"cargador usb c para iphone", "cargador usb c", "ヨガマット"} & set(queries["query"])
    pool = esci.title_pool(products)
    assert pool["english"].all() and (pool["product_locale"] == "us").all()
    assert PAPER_SPANISH not in set(pool["title"]) and PAPER_SPANISH in set(products["product_title"])
    assert set(fixture_module().PAPER_TITLES) <= set(pool["title"])
    assert pool["title"].is_unique and pool["title_id"].is_unique  # the duplicate title is kept once
    everything = esci.title_pool(products, english_only=False)
    assert set(everything["product_locale"]) == {"us", "es", "jp"} and everything["title_id"].is_unique


# --- the built dataset ------------------------------------------------------------------------


def test_dataset_tables_and_prompts(built):
    tables, _ = built
    q, titles = tables["queries"], tables["titles"]
    assert len(q) == 30 and (q["n_titles"] == 13).all()  # positions 1, 5, 10, ..., 60
    assert q["positions"].iloc[0] == [1] + list(range(5, 61, 5))
    for row in q.itertuples():
        assert row.scores == sorted(row.scores, reverse=True)
        assert row.gold == list(dict.fromkeys(row.docids)) and row.n_collisions == len(row.docids) - len(row.gold)
        assert row.prompt.startswith(D2_START) and row.prompt.endswith("\n\nMost relevant product title:")
        listed = row.prompt.split("Product titles:\n")[1].split("\n\nMost relevant")[0].split(" || ")
        assert sorted(listed) == sorted(f"[{d}] {t}" for d, t in zip(row.docids, row.titles))
        assert f"Query:\n{row.query}\n\n" in row.prompt
    assert not any(PAPER_SPANISH in t for t in q["titles"].sum())
    assert all(len(set(d.split(","))) == 3 for d in titles["docid"])
    assert tables["docid_counts"]["count"].sum() == len(titles)
    assert tables["trie_corpus"]["depth"].tolist() == [1, 2, 3]
    stats = tables["stats"].iloc[0]
    assert stats["queries_kept"] == 30 and stats["us_titles_not_english"] == 6


def test_cache_folder_and_reload(built, tmp_path):
    tables, cache = built
    (folder,) = cached_folders(cache)
    assert sorted(p.name for p in cache.iterdir()) == [folder.name]  # no temporary folder left
    assert {p.name for p in folder.iterdir()} == {f"{n}.parquet" for n in tables} | {"params.json", "manifest.json"}
    meta = json.loads((folder / "params.json").read_text())
    assert meta["params"]["step"] == 5 and meta["files"].keys() == {"examples", "products"}
    again = esci.build_esci_dataset(esci.FIXTURE_DIR, step=5, depth=60, cache_dir=cache)
    for name in tables:
        pd.testing.assert_frame_equal(again[name], tables[name], check_dtype=False)
    fresh = esci.build_esci_dataset(esci.FIXTURE_DIR, step=5, depth=60, cache=False)  # deterministic
    for name in tables:
        pd.testing.assert_frame_equal(fresh[name], tables[name], check_dtype=False)


def test_a_truncated_cache_is_named_set_aside_and_built_again(built, tmp_path, capsys):
    import shutil

    tables, cache = built
    copy = shutil.copytree(cache, tmp_path / "c")
    (folder,) = cached_folders(copy)
    titles = folder / "titles.parquet"
    titles.write_bytes(titles.read_bytes()[:200])
    capsys.readouterr()
    again = esci.build_esci_dataset(esci.FIXTURE_DIR, step=5, depth=60, cache_dir=copy)
    for name in tables:
        pd.testing.assert_frame_equal(again[name], tables[name], check_dtype=False)
    said = capsys.readouterr().out
    assert said.startswith(f"{folder} is unusable: titles.parquet is 200 bytes where the manifest says ")
    assert cached_folders(copy) == [folder] and len(list(copy.glob("broken-*"))) == 1


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    calls = []

    def broken(self, path, *a, **k):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(self, path, *a, **k)

    original = pd.DataFrame.to_parquet
    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        esci.build_esci_dataset(
            esci.FIXTURE_DIR, step=50, depth=100, embedder="tfidf:16", n_components=10, cache_dir=tmp_path / "c"
        )
    assert list((tmp_path / "c").iterdir()) == []


def test_collision_modes_and_short_template(tmp_path):
    kw = dict(step=1, depth=40, embedder="tfidf:16", n_components=8, cache=False)
    keep = esci.build_esci_dataset(esci.FIXTURE_DIR, **kw)["queries"]
    assert keep["n_collisions"].sum() > 0  # 8 atoms, 3 nonzeros: many shared docIDs
    drop = esci.build_esci_dataset(esci.FIXTURE_DIR, collisions="drop", **kw)["queries"]
    assert (drop["n_collisions"] == 0).all() and (drop["n_titles"] == keep["gold"].map(len)).all()
    suffix = esci.build_esci_dataset(esci.FIXTURE_DIR, collisions="suffix", template="esci_short", **kw)
    assert suffix["titles"]["docid"].is_unique and (suffix["queries"]["n_collisions"] == 0).all()
    assert suffix["queries"]["prompt"].str.startswith("query: ").all()


# --- queries with no English titles; precomputed embeddings --------------------------------


def tiny_esci(folder, n_english=12):
    """A hand-made dataset in the real schema: English titles e0..e11 in locale us, the paper's
    Spanish title in us, one Spanish title in es; two English queries."""
    titles = [(f"B00000000{i:02d}", f"Widget number {i} for the kitchen", "us") for i in range(n_english)]
    titles += [("B0SPANISH1", PAPER_SPANISH, "us"), ("B0SPANISH2", "Cargador de pared para el coche", "es")]
    products = pd.DataFrame(
        {
            "product_id": [t[0] for t in titles],
            "product_title": [t[1] for t in titles],
            "product_description": None,
            "product_bullet_point": None,
            "product_brand": "Fixture",
            "product_color": None,
            "product_locale": [t[2] for t in titles],
        }
    )
    examples = pd.DataFrame(
        {
            "example_id": [1, 2],
            "query": ["kitchen widget", "wall charger"],
            "query_id": [10, 20],
            "product_id": ["B0000000000", "B0SPANISH1"],
            "product_locale": "us",
            "esci_label": "E",
            "small_version": 1,
            "large_version": 1,
            "split": "train",
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    examples.to_parquet(folder / esci.EXAMPLES_FILE)
    products.to_parquet(folder / esci.PRODUCTS_FILE)
    rng = np.random.default_rng(0)
    ids = [t[0] if t[2] == "us" else f"es:{t[0]}" for t in titles]
    T = rng.normal(size=(len(ids), 6)) * 0.1
    T[-2:, 0] = 5.0  # the two Spanish titles lie along axis 0
    Q = np.array([[-1.0, 0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0, 0]])  # "wall charger" points at them
    return ids, T, Q


@pytest.mark.parametrize("fmt", ["npy", "parquet"])
def test_queries_without_english_titles_are_dropped(tmp_path, fmt):
    ids, T, Q = tiny_esci(tmp_path / "esci")
    emb = tmp_path / "emb"
    save_precomputed(emb, "titles", ids, T, fmt)
    save_precomputed(emb, "queries", ["10", "20"], Q, fmt)
    kw = dict(embedder=f"precomputed:{emb}", step=1, depth=2, n_components=4, nnz=2, cache=False)
    after = esci.build_esci_dataset(tmp_path / "esci", filter_titles="after", **kw)
    assert after["queries"]["query"].tolist() == ["kitchen widget"]  # "wall charger" had only Spanish titles
    assert after["stats"].iloc[0]["queries_dropped_no_english_titles"] == 1
    before = esci.build_esci_dataset(tmp_path / "esci", filter_titles="before", **kw)
    assert before["queries"]["query"].tolist() == ["kitchen widget", "wall charger"]
    assert all(PAPER_SPANISH not in t for t in before["queries"]["titles"].sum())


# --- bad input --------------------------------------------------------------------------------


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        esci.build_esci_dataset(tmp_path / "nowhere", cache_dir=tmp_path / "c")
    msg = str(err.value)
    for part in (
        esci.EXAMPLES_FILE,
        esci.PRODUCTS_FILE,
        "github.com/amazon-science/esci-data",
        "git lfs",
        str(tmp_path / "nowhere"),
    ):
        assert part in msg
    assert not (tmp_path / "c").exists()


def test_missing_columns(tmp_path):
    folder = tmp_path / "esci"
    tiny_esci(folder)
    pd.read_parquet(folder / esci.EXAMPLES_FILE).drop(columns=["esci_label", "split"]).to_parquet(
        folder / esci.EXAMPLES_FILE
    )
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['esci_label', 'split'\]"):
        esci.build_esci_dataset(folder, cache_dir=tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_git_lfs_pointer_instead_of_parquet_says_so(tmp_path):
    """A clone without git lfs holds pointer files; they are named as such, with the
    command that fetches the real file, instead of pyarrow's 'Parquet magic bytes not found'."""
    folder = tmp_path / "esci"
    tiny_esci(folder)
    real = (folder / esci.PRODUCTS_FILE).read_bytes()
    pointer = (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:" + __import__("hashlib").sha256(real).hexdigest() + f"\nsize {len(real)}\n"
    )
    (folder / esci.PRODUCTS_FILE).write_text(pointer)  # what git checks out without git lfs
    with pytest.raises(
        ValueError,
        match=r"products.parquet is a git-lfs pointer \(\d+ bytes\), not the parquet "
        r"file: run `git lfs install && git lfs pull`",
    ):
        esci.build_esci_dataset(folder, cache_dir=tmp_path / "c")
    (folder / esci.PRODUCTS_FILE).write_bytes(real[: len(real) // 2])  # a truncated download
    with pytest.raises(ValueError, match=r"products.parquet is not a readable parquet file \(\w+") as err:
        esci.load_esci(folder)
    assert str(err.value).endswith(
        f"it is source data, not rebuilt here: fetch it again with `git lfs pull` in your "
        f"clone of {esci.REPOSITORY} (folder shopping_queries_dataset/), then copy "
        f"{esci.PRODUCTS_FILE} into {folder.resolve()}"
    )
    assert esci.restore_command(esci.FIXTURE_DIR / esci.PRODUCTS_FILE) == (
        "restore the committed fixture with `git checkout -- data/fixtures/esci_fixture/" + esci.PRODUCTS_FILE + "`"
    )
    assert not (tmp_path / "c").exists()


def test_embedding_errors(tmp_path):
    ids, T, Q = tiny_esci(tmp_path / "esci")
    emb = tmp_path / "emb"
    save_precomputed(emb, "titles", ids, T)
    save_precomputed(emb, "queries", ["10", "20"], Q)
    (emb / "titles_ids.txt").write_text("".join(f"{i}\n" for i in ids[:-1]))  # one id short
    kw = dict(embedder=f"precomputed:{emb}", cache_dir=tmp_path / "c")
    with pytest.raises(ValueError, match=f"{len(ids)} rows but {len(ids) - 1} ids"):
        esci.build_esci_dataset(tmp_path / "esci", **kw)
    os.remove(emb / "queries.npy")
    with pytest.raises(FileNotFoundError, match="no queries embeddings"):
        esci.build_esci_dataset(tmp_path / "esci", **kw)
    assert not (tmp_path / "c").exists()


def test_build_choices_are_refused_at_the_edge():
    """collisions, filter_titles, template and step / depth are checked once, by notebook 04's
    parameters (the runner before a kernel starts), naming the value and what is allowed."""
    from arrank.common.params import ParamError
    from arrank.workbook import run

    for name, value, message in [
        ("collisions", "merge", r"collisions='merge' is not allowed; choose one of \['keep', 'drop', 'suffix'\]"),
        ("filter_titles", "never", r"filter_titles='never' is not allowed"),
        ("template", "wordnet", r"template='wordnet' is not allowed; choose one of \['esci', 'esci_short'\]"),
        ("step", "0", r"step=0 is out of range"),
        ("embedder", "gecko", r"embedder='gecko' must be 'tfidf'"),
    ]:
        with pytest.raises(ParamError, match=message):
            run.prepare("04", {name: value})


def test_sentence_transformers_missing_is_clear():
    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    with pytest.raises(ImportError, match="needs the sentence-transformers package"):
        embedders.embed("st:all-MiniLM-L6-v2", ["q"], ["t"], ["1"], ["a"])


# --- the fixture itself -------------------------------------------------------------------------


def test_fixture_is_small_deterministic_and_in_the_real_schema(tmp_path):
    files = esci.esci_files(esci.FIXTURE_DIR)
    assert sum(p.stat().st_size for p in files.values()) < 200_000
    examples, products = fixture_module().make_fixture(tmp_path)
    pd.testing.assert_frame_equal(examples, pd.read_parquet(files["examples"]), check_dtype=False)
    pd.testing.assert_frame_equal(products, pd.read_parquet(files["products"]), check_dtype=False)
    assert tuple(examples.columns) == esci.EXAMPLES_COLUMNS and tuple(products.columns) == esci.PRODUCTS_COLUMNS
    assert set(products["product_locale"]) == {"us", "es", "jp"} and 250 <= len(products) <= 400


def test_the_esci_notebook_checks_its_build_against_section_5_1_and_table_2():
    m = {
        "mean_titles_per_query": 7.0,
        "mean_docid_tokens": 4.0,
        "mean_title_tokens": 30.0,
        "docid_colliding_fraction": 0.1,
        "n_queries": 30,
        "n_titles": 200,
    }
    rows = esci.dataset_findings(m, {"step": 5, "depth": 30, "data_dir": "fixture"})
    assert [r.holds for r in rows] == [True, True, None] and "at most 7" in rows[0].numbers
    # the 1st, 100th, ..., 10000th titles are section 5.1's ("ESCI Shopping Queries"); D.2 is the prompt only
    assert rows[0].claim.startswith("section 5.1:") and "Appendix D.2" not in rows[0].claim
    assert (
        esci.dataset_findings({**m, "mean_docid_tokens": 12.0}, {"step": 5, "depth": 30, "data_dir": "x"})[1].holds
        is False
    )


def test_an_unknown_embedder_is_named():
    """A direct call with an embedder spec of no known form fails naming it (not as a missing package)."""
    with pytest.raises(ValueError, match=r"embedder='gecko' is unknown: give 'tfidf', 'tfidf:<dim>'"):
        embedders.embed("gecko", ["a"], ["b"], ["1"], ["2"])


# --- the rules, on hand-made input ------------------------------------------------------------------


def test_the_english_rule_at_its_thresholds():
    """``is_english``: (a) non-Latin letters, 2 or more, make >= 5% of the letters: 3 of 19 in the first
    title, 2 of 75 in the second; (b) foreign >= 2 and foreign > english: a tie (cargador, negro vs for,
    the) stays English; a Spanish mark counts as one foreign word (de + the mark of 'cámara')."""
    assert not esci.is_english("Anker USB C Charger 充電器")  # 3 of 19 letters: 16%
    assert esci.is_english("Greek letters αβ in a long English title about scientific calculator keyboards stickers")
    assert esci.is_english("cargador negro for the iphone")  # 2 foreign, 2 english
    assert not esci.is_english("cargador negro for iphone")  # 2 foreign, 1 english
    assert not esci.is_english("Cámara de fotos") and esci.is_english("Camara de fotos")


def test_english_queries_and_the_title_pool_on_hand_made_rows():
    """A query is small_version where any of its examples is (section 5.1 builds from the us locale);
    the pool keeps one row per exact title, locale us first, and only us titles count as English
    (a Spanish-locale product with an English title is not one of the titles to rank)."""
    examples = pd.DataFrame(
        {
            "query_id": [2, 2, 1, 3],
            "query": ["yoga mat", "yoga mat", "usb cable", "usb cable es"],
            "product_locale": ["us", "us", "us", "es"],
            "small_version": [0, 1, 0, 1],
            "split": ["test", "train", "train", "train"],
        }
    )
    q = esci.english_queries(examples)
    assert q.to_dict("list") == {
        "query_id": [1, 2],
        "query": ["usb cable", "yoga mat"],
        "split": ["train", "test"],
        "small_version": [False, True],
    }
    products = pd.DataFrame(
        {
            "product_id": ["A", "B", "C"],
            "product_locale": ["es", "us", "es"],
            "product_title": ["Yoga mat for home", "Yoga mat for home", " Steel water bottle "],
        }
    )
    pool = esci.title_pool(products, english_only=False)
    assert pool[["title_id", "product_locale", "title", "english"]].values.tolist() == [
        ["B", "us", "Yoga mat for home", True],
        ["es:C", "es", "Steel water bottle", False],
    ]
    assert esci.title_pool(products)["title_id"].tolist() == ["B"]


def test_topk_ties_go_to_the_lower_title_index():
    """``topk_inner_products``: equal inner products are ordered by ascending title index."""
    idx, scores = esci.topk_inner_products(np.array([[1.0]]), np.array([[1.0], [2.0], [2.0], [1.0]]), 4)
    assert idx.tolist() == [[1, 2, 0, 3]] and scores.tolist() == [[2.0, 2.0, 1.0, 1.0]]


def test_query_table_keeps_english_titles_and_drop_keeps_the_best_ranked_title_of_a_docid():
    """Section 5.1: the ranked titles (positions 1, 2, 3: t2, t1, t0) less the non-English ones; with
    ``collisions="drop"`` a docID shared by t2 and t0 keeps t2, the better-ranked; with "keep" both stay,
    the gold list naming the docID once."""
    queries = pd.DataFrame({"query_id": [1], "query": ["q"], "split": ["train"], "small_version": [True]})
    pool = pd.DataFrame({"title": ["t0", "t1", "t2"], "product_id": ["p0", "p1", "p2"], "english": [True] * 3})
    docid = np.array(["1,2", "3,4", "1,2"], dtype=object)
    ranked = (np.array([[2, 1, 0]]), np.array([[3.0, 2.0, 1.0]]), np.array([1, 2, 3]))
    p = {"seed": 0, "template": "esci_short"}
    drop = esci.query_table(queries, pool, docid, ranked, {**p, "collisions": "drop"}).iloc[0]
    assert (drop["titles"], drop["positions"], drop["gold"], drop["n_collisions"]) == (
        ["t2", "t1"], [1, 2], ["1,2", "3,4"], 0
    )  # fmt: skip
    keep = esci.query_table(queries, pool, docid, ranked, {**p, "collisions": "keep"}).iloc[0]
    assert (keep["titles"], keep["gold"], keep["n_collisions"]) == (["t2", "t1", "t0"], ["1,2", "3,4"], 1)
    pool["english"] = [True, False, True]
    english = esci.query_table(queries, pool, docid, ranked, {**p, "collisions": "keep"}).iloc[0]
    assert (english["titles"], english["positions"], english["scores"]) == (["t2", "t0"], [1, 3], [3.0, 1.0])


def test_max_queries_takes_the_first_by_query_id_and_zero_embeddings_are_left_out(tmp_path):
    """``max_queries`` keeps the first English queries by query_id (10 before 20); a title whose
    embedding is all zeros has no direction to rank by and is left out of the pool."""
    ids, T, Q = tiny_esci(tmp_path / "esci")
    T[3] = 0.0  # "Widget number 3 for the kitchen"
    emb = tmp_path / "emb"
    save_precomputed(emb, "titles", ids, T)
    save_precomputed(emb, "queries", ["10", "20"], Q)
    kw = dict(embedder=f"precomputed:{emb}", step=1, depth=20, n_components=4, nnz=2, cache=False)
    built = esci.build_esci_dataset(tmp_path / "esci", max_queries=1, **kw)
    assert built["queries"]["query"].tolist() == ["kitchen widget"]
    assert built["stats"].iloc[0]["zero_embedding_titles"] == 1
    assert "Widget number 3 for the kitchen" not in set(built["titles"]["title"])
    assert len(built["titles"]) == 11  # the 12 English titles less the zero one
