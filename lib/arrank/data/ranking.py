"""One table format for both ranking datasets of section 5.1, as notebooks 05 and 06 read them: one
row per query with ``query, prompt, relevant`` (gold docIDs, rank 1 first), ``n_relevant``,
``negative`` (None for ESCI) and ``split`` ("train" | "eval" | ``common.outputs.DEV``: the validation queries that
``carve_dev`` takes out of the held-out ones, never trained on and never reported as test queries).

WordNet is :func:`arrank.data.wordnet.build_wordnet_dataset` as it is. ESCI is the ``queries`` table
of :func:`arrank.data.esci.build_esci_dataset`: at most ``n_eval`` of its "test" queries are held
out (the paper evaluates 310), the rest of "test" dropped, "train" trains; its build parameters
are notebook 04's profile values, so notebooks 04, 05 and 06 share one cached build per profile."""

from __future__ import annotations

from typing import Any

import pandas as pd

from arrank.common import params, paths
from arrank.common.outputs import DEV

COLUMNS = ["query", "prompt", "relevant", "n_relevant", "negative", "split"]
# The R@k cutoffs each dataset reports: Table 1 (WordNet) R@1-5, Table 2 (ESCI) R@1, 2, 5, 10, 25, 50.
WORDNET_KS: tuple[int, ...] = (1, 2, 3, 4, 5)
ESCI_KS: tuple[int, ...] = (1, 2, 5, 10, 25, 50)


def esci_ranking_frame(queries: pd.DataFrame, n_eval: int) -> pd.DataFrame:
    """ESCI's ``queries`` table in the common format (see the module docstring)."""
    test = queries[queries["split"] == "test"].sort_values("query_id").head(n_eval)
    train = queries[queries["split"] == "train"]
    frame = pd.concat([train.assign(split="train"), test.assign(split="eval")], ignore_index=True)
    relevant = frame["gold"].map(list)
    query = frame["query_id"].astype(str) + ": " + frame["query"]
    return frame.assign(query=query, relevant=relevant, n_relevant=relevant.map(len), negative=None)[COLUMNS]


def esci_build_params(profile: str) -> dict[str, Any]:
    """Notebook 04's ESCI build parameters of ``profile`` (its parameters cell and profile values)."""
    from arrank.data import esci

    p = params.profile_values("04_esci_data", profile)
    data_dir = esci.FIXTURE_DIR if p["data_dir"] == "fixture" else paths.ROOT / p["data_dir"]
    return {"data_dir": data_dir, "step": p["step"], "depth": p["depth"], "n_components": p["n_components"]}


def ranking_dataset(
    dataset: str,
    profile: str,
    seed: int,
    n_eval: int,
    template: str | None = None,
    subtree: str | None = None,
    min_relevant: int = 1,
    data_path: str | None = None,
    custom_docids: str = "id",
    n_dev: int = 0,
    with_ids: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, tuple[dict, dict] | None]:
    """The ``dataset`` ("wordnet" | "esci" | "custom") in the common format; ``template`` None is the
    one notebook 05 takes in ``profile`` for ``dataset``; ``subtree``/``min_relevant``: WordNet only;
    ``data_path``/``custom_docids``: custom only (:func:`arrank.data.custom.custom_frame`, its prompt
    Appendix D.2's, as ESCI's); ``n_dev`` validation queries carved out of the held-out ones
    (``carve_dev``). ``with_ids``: (the table, the ids its TREC files name queries and documents by:
    one's own ``query_id`` and document ``id`` for custom, built with the table
    (:func:`arrank.data.custom.trec_ids`); None, the table's own, else)."""
    params.choice(*params.DATASETS)("dataset", dataset)
    template = template or params.profile_template(profile, dataset)
    if error := params.template_fits(template, dataset) or params.custom_data_path(dataset, data_path or ""):
        raise ValueError(error)  # the runner's agreements (params.AGREEMENTS), for a direct call
    ids = None  # the table's own TREC ids
    if dataset == "custom":
        from arrank.data import custom

        df, ids = custom.custom_frame(paths.ROOT / data_path, template, seed, n_eval, custom_docids)
    elif dataset == "wordnet":
        from arrank.data import wordnet

        df = wordnet.build_wordnet_dataset(
            subtree=subtree or None, min_relevant=min_relevant, n_eval=n_eval, template=template, seed=seed
        )
    else:
        from arrank.data import esci

        tables = esci.build_esci_dataset(**esci_build_params(profile), template=template, seed=seed)
        df = esci_ranking_frame(tables["queries"], n_eval)
    df = carve_dev(df, n_dev, seed)
    return (df, ids) if with_ids else df


def carve_dev(df: pd.DataFrame, n_dev: int, seed: int) -> pd.DataFrame:
    """``df`` with a seeded sample of ``n_dev`` of its held-out queries relabelled ``split == "dev"``: a
    validation split disjoint from training and test, for choosing a budget or a learning rate without
    reading the test queries. The training queries stay as they are, so runs with and without one train
    alike, and the test queries are the other held-out ones, in their order."""
    if not n_dev:
        return df
    held = df.index[df["split"] == "eval"]
    if n_dev >= len(held):
        raise ValueError(f"n_dev={n_dev} leaves no test queries: {len(held)} held out; give n_dev below {len(held)}")
    out = df.copy()
    out.loc[pd.Series(held).sample(n=n_dev, random_state=seed).to_numpy(), "split"] = DEV
    return out


def ks_for(dataset: str) -> tuple[int, ...]:
    """The R@k cut-offs each table reports: 1-5 for WordNet (Table 1) and custom data, 1, 2, 5, 10,
    25, 50 for ESCI (Table 2)."""
    return ESCI_KS if dataset == "esci" else WORDNET_KS
