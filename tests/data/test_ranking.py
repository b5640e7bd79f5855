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
    with pytest.raises(ValueError, match=r"n_dev=12 leaves no test queries: 12 are held out; give n_dev below 12"):
        _wordnet(12)
