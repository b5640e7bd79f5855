"""Sparse-code docIDs of section 5.1 (ESCI) and their collision / trie statistics."""

import numpy as np
import pytest

from arrank.data import docids

# The docIDs of the paper's Appendix D.2 prompt, in its order ("25,36,39" appears twice).
PAPER_DOCIDS = [
    "25,36,39",
    "25,69,59",
    "25,36,26",
    "25,59,45",
    "25,59,2",
    "25,39,59",
    "26,2,77",
    "25,2,46",
    "25,36,97",
    "36,25,31",
    "25,26,46",
    "25,36,45",
    "25,36,39",
]


def test_atoms_sorted_by_abs_coefficient_ties_by_index():
    codes = np.array([[0.0, -0.5, 0.0, 2.0, 0.1], [0.3, 0.0, -0.3, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    assert docids.docid_atoms(codes) == [[3, 1, 4], [0, 2], []]
    assert [docids.format_docid(a) for a in docids.docid_atoms(codes)] == ["3,1,4", "0,2", ""]


def test_sparse_docids_match_their_codes():
    X = np.random.default_rng(0).normal(size=(80, 16))
    ids, codes = docids.sparse_docids(X, n_components=20, nnz=3, seed=0)
    assert codes.shape == (80, 20) and (np.count_nonzero(codes, axis=1) == 3).all()
    for d, row in zip(ids, codes):
        atoms = [int(a) for a in d.split(",")]
        assert len(set(atoms)) == 3 and sorted(atoms) == sorted(np.flatnonzero(row))
        mags = np.abs(row[atoms])
        assert (np.diff(mags) <= 0).all()  # descending |coefficient|
    assert docids.sparse_docids(X, n_components=20, nnz=3, seed=0)[0] == ids  # seeded


def test_dictionary_follows_the_papers_footnote():
    X = np.random.default_rng(1).normal(size=(120, 8))
    model = docids.learn_dictionary(X, seed=0, max_iter=2)
    assert (model.n_components, model.transform_algorithm, model.transform_n_nonzero_coefs) == (100, "omp", 3)
    with pytest.raises(ValueError, match="nnz=4 must be in"):
        docids.learn_dictionary(X, n_components=3, nnz=4)


def test_collision_table_summary_and_suffixes():
    counts = docids.docid_counts(PAPER_DOCIDS)
    assert counts.iloc[0].to_dict() == {"docid": "25,36,39", "count": 2} and counts["count"].sum() == 13
    summary = docids.collision_summary(PAPER_DOCIDS)
    # 13 items, "25,36,39" twice: 12 distinct, 2 items share 1 docID, 2 / 13 of the items collide
    assert summary == {
        "n_items": 13,
        "n_distinct": 12,
        "n_colliding_items": 2,
        "n_colliding_docids": 1,
        "max_share": 2,
        "colliding_fraction": pytest.approx(2 / 13),
    }
    ties = docids.docid_counts(["9", "5,1", "9", "7", "5,1"])  # most shared first, a tie by docID
    assert list(zip(ties["docid"], ties["count"])) == [("5,1", 2), ("9", 2), ("7", 1)]
    unique = docids.disambiguate_docids(PAPER_DOCIDS)
    assert unique[0] == "25,36,39,0" and unique[-1] == "25,36,39,1" and unique[1:-1] == PAPER_DOCIDS[1:-1]
    assert len(set(unique)) == len(unique)


def test_trie_branching_of_the_paper_prompt():
    table = docids.trie_branching(PAPER_DOCIDS).set_index("depth")
    # depth 1: {25, 26, 36}; depth 2: 25 -> {36, 69, 59, 39, 2, 26}, 26 -> {2}, 36 -> {25}
    assert table.loc[1, "prefixes"] == 3 and table.loc[1, "mean_children"] == 3
    assert table.loc[2, "prefixes"] == 8 and table.loc[2, "parents"] == 3 and table.loc[2, "max_children"] == 6
    assert table.loc[3, "prefixes"] == 12  # distinct docIDs
    per_query = docids.query_trie_branching([PAPER_DOCIDS, ["1,2,3", "1,2,4"]]).set_index("depth")
    assert per_query.loc[1, "queries"] == 2
    assert per_query.loc[1, "mean_prefix_ratio"] == pytest.approx((3 / 12 + 1 / 2) / 2)
    # depth 3, children per depth-2 node: the prompt's 12 / 8, the second query's 2 / 1; their mean
    assert per_query.loc[3, "mean_children"] == pytest.approx((12 / 8 + 2) / 2)


def test_an_empty_docid_is_no_trie_node_and_random_docids_have_distinct_atoms():
    """An all-zero code's docID "" has no component: the trie of ["1,2", "", "1,3"] is 1 -> {2, 3}.
    A random stand-in docID holds nnz distinct atoms, as an OMP code's nonzeros are (section 5.1)."""
    table = docids.trie_branching(["1,2", "", "1,3"]).set_index("depth")
    assert table["prefixes"].tolist() == [1, 2] and table["max_children"].tolist() == [1, 2]
    for d in docids.random_numeric_docids(20, n_components=5, nnz=5, seed=0):
        assert sorted(int(a) for a in d.split(",")) == [0, 1, 2, 3, 4]
