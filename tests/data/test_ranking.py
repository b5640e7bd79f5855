"""The table both ranking datasets share (``arrank.data.ranking``): its validation split."""

import pytest

from arrank.data import ranking


def _wordnet(n_dev: int, seed: int = 0):
    return ranking.ranking_dataset("wordnet", "quick", seed, 12, None, "canine.n.02", 1, n_dev=n_dev)


def test_the_validation_split_comes_out_of_the_held_out_queries_seeded_and_leaves_training_alone():
    plain, carved = _wordnet(0), _wordnet(4)
    assert carved["split"].value_counts().to_dict() == {"train": (plain["split"] == "train").sum(), "eval": 8, "dev": 4}
    held = set(plain.loc[plain["split"] == "eval", "query"])
    dev, test = (set(carved.loc[carved["split"] == s, "query"]) for s in ("dev", "eval"))
    assert dev | test == held and not dev & test  # disjoint, and out of the held-out pool
    assert (
        carved.loc[carved["split"] == "train", "query"].tolist()
        == plain.loc[plain["split"] == "train", "query"].tolist()
    )
    assert set(_wordnet(4)["query"][_wordnet(4)["split"] == "dev"]) == dev  # the same seed, the same queries
    other = ranking.carve_dev(plain, 4, seed=1)  # another seed, another sample of the same held-out queries
    assert (
        set(other.loc[other["split"] == "dev", "query"]) <= held
        and set(other.loc[other["split"] == "dev", "query"]) != dev
    )
    with pytest.raises(ValueError, match=r"n_dev=12 leaves no test queries: 12 held out; give n_dev below 12"):
        _wordnet(12)


def test_each_dataset_reports_its_tables_recall_cutoffs():
    """Table 1 (WordNet) reports R@1-5, Table 2 (ESCI) R@1, 2, 5, 10, 25, 50; one's own data reads as
    WordNet's table."""
    assert ranking.ks_for("wordnet") == (1, 2, 3, 4, 5) == ranking.ks_for("custom")
    assert ranking.ks_for("esci") == (1, 2, 5, 10, 25, 50)


def test_esci_build_params_are_notebook_04s_profile_values():
    """The quick build is the committed fixture, every 5th title down to rank 60, 32 atoms; the paper
    profile reads data/esci, every 100th title down to rank 10,000, 100 atoms (section 5.1, App. C)."""
    from arrank.common import paths
    from arrank.data import esci

    assert ranking.esci_build_params("quick") == {
        "data_dir": esci.FIXTURE_DIR,
        "step": 5,
        "depth": 60,
        "n_components": 32,
    }
    assert ranking.esci_build_params("paper") == {
        "data_dir": paths.ROOT / "data/esci",
        "step": 100,
        "depth": 10_000,
        "n_components": 100,
    }
