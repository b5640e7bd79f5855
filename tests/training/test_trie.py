"""Prefix-tree targets y(r, t) of section 4.2 on the paper's toy example (dog/cat/cats/deer/fish),
with expected rows written by hand as fractions; Appendix F's combined variant; the beta -> inf limit.
"""

import math
from fractions import Fraction as F

import pytest
import torch

from arrank.training import trie

# Token ids of the toy example: d_1 dog = [d, og], d_2 cat = [c, at], d_3 cats = [c, at, s],
# d_4 deer = [d, eer], d_5 fish = [f, ish]; every docID ends with EOS.
PAD, EOS, D, OG, C, AT, S, EER, FF, ISH = range(10)
V = 10
DOG, CAT, CATS, DEER, FISH = [D, OG, EOS], [C, AT, EOS], [C, AT, S, EOS], [D, EER, EOS], [FF, ISH, EOS]
TOY = [DOG, CAT, CATS, DEER, FISH]  # rank order: dog=1, cat=2, cats=3, deer=4, fish=5


def trie_scores(n, beta):
    """mu(r) = 1 / r**beta for r = 1..n (section 4.2); beta = inf gives [1, 0, ..., 0]."""
    return [1.0] + [0.0] * (n - 1) if math.isinf(beta) else [1.0 / r**beta for r in range(1, n + 1)]


def mu_exact(beta):
    return [F(1, r**beta) for r in range(1, 6)]


def expected_rows(beta):
    """Hand-derived targets for every docID path (non-combined), as {token: Fraction} per step."""
    m1, m2, m3, m4, m5 = mu_exact(beta)
    root = {D: m1 + m4, C: m2 + m3, FF: m5}  # step 1: d -> dog+deer, c -> cat+cats, f -> fish
    h = sum(root.values())
    root = {k: v / h for k, v in root.items()}
    after_d = {OG: m1 / (m1 + m4), EER: m4 / (m1 + m4)}
    after_cat = {EOS: m2 / (m2 + m3), S: m3 / (m2 + m3)}  # EOS (finish "cat") competes with "s"
    one = lambda tok: {tok: F(1)}  # noqa: E731
    return {
        tuple(DOG): [root, after_d, one(EOS)],
        tuple(CAT): [root, one(AT), after_cat],
        tuple(CATS): [root, one(AT), after_cat, one(EOS)],
        tuple(DEER): [root, after_d, one(EOS)],
        tuple(FISH): [root, one(ISH), one(EOS)],
    }


def dense(rows):
    out = torch.zeros(len(rows), V, dtype=torch.float64)
    for t, row in enumerate(rows):
        for tok, frac in row.items():
            out[t, tok] = float(frac)
    return out


def test_hand_written_fractions_beta1_and_beta2():
    # The numbers themselves, written out once, so the helper above cannot hide a mistake.
    # beta = 1: root d = (1 + 1/4)/H, c = (1/2 + 1/3)/H, f = (1/5)/H with H = 137/60.
    r1 = expected_rows(1)[tuple(DOG)]
    assert r1[0] == {D: F(75, 137), C: F(50, 137), FF: F(12, 137)}
    assert r1[1] == {OG: F(4, 5), EER: F(1, 5)}
    assert expected_rows(1)[tuple(CAT)][2] == {EOS: F(3, 5), S: F(2, 5)}
    # beta = 2: d = 17/16, c = 1/4 + 1/9 = 13/36, f = 1/25 -> over 5269/3600.
    r2 = expected_rows(2)[tuple(DOG)]
    assert r2[0] == {D: F(3825, 5269), C: F(1300, 5269), FF: F(144, 5269)}
    assert r2[1] == {OG: F(16, 17), EER: F(1, 17)}
    assert expected_rows(2)[tuple(CATS)][2] == {EOS: F(9, 13), S: F(4, 13)}


@pytest.mark.parametrize("beta", [1, 2])
@pytest.mark.parametrize("path", TOY, ids=["dog", "cat", "cats", "deer", "fish"])
def test_target_distributions_toy_example(beta, path):
    mu = trie_scores(5, beta)
    got = trie.target_distributions(TOY, mu, path, V, dtype=torch.float64)
    want = dense(expected_rows(beta)[tuple(path)])
    assert got.shape == (len(path), V)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(got.sum(1), torch.ones(len(path), dtype=torch.float64))


def test_target_distributions_accepts_any_mu_and_default_dtype():
    # Unnormalised scores: only ratios matter (the row is normalised).
    got = trie.target_distributions(TOY, [10, 5, 10 / 3, 2.5, 2], DOG, V)
    assert got.dtype == torch.get_default_dtype()
    assert got[0, D].item() == pytest.approx(75 / 137, abs=1e-7)
    assert got[0, C].item() == pytest.approx(50 / 137, abs=1e-7)


def test_sparse_targets_sorted_pairs_and_query_helper():
    rows = trie.sparse_targets(TOY, trie_scores(5, 1), CATS)
    assert [[tok for tok, _ in row] for row in rows] == [[D, C, FF], [AT], [EOS, S], [EOS]]
    assert rows[2][0][1] == pytest.approx(3 / 5, abs=1e-12) and rows[2][1][1] == pytest.approx(2 / 5, abs=1e-12)
    per_rank = trie.query_sparse_targets(TOY, 1)
    assert len(per_rank) == 5
    for r, path in enumerate(TOY):
        want = trie.sparse_targets(TOY, trie_scores(5, 1), path)
        assert [[t for t, _ in row] for row in per_rank[r]] == [[t for t, _ in row] for row in want]
        for a, b in zip(per_rank[r], want):
            assert [m for _, m in a] == pytest.approx([m for _, m in b], abs=1e-12)


def test_combined_variant_drops_higher_ranked_docids():
    # Appendix F: the tree for rank r uses d_r..d_5 only.
    mu = trie_scores(5, 1)
    cats = trie.target_distributions(TOY, mu, CATS, V, combined=True, dtype=torch.float64)
    # root over cats (1/3), deer (1/4), fish (1/5): H = 47/60; cat is gone, so "s" gets everything.
    want = dense([{C: F(20, 47), D: F(15, 47), FF: F(12, 47)}, {AT: F(1)}, {S: F(1)}, {EOS: F(1)}])
    torch.testing.assert_close(cats, want, rtol=0, atol=1e-12)
    cat = trie.target_distributions(TOY, mu, CAT, V, combined=True, dtype=torch.float64)
    # root over cat, cats, deer, fish: c = 5/6, d = 1/4, f = 1/5 -> 50, 15, 12 over 77.
    want = dense([{C: F(50, 77), D: F(15, 77), FF: F(12, 77)}, {AT: F(1)}, {EOS: F(3, 5), S: F(2, 5)}])
    torch.testing.assert_close(cat, want, rtol=0, atol=1e-12)
    deer = trie.target_distributions(TOY, mu, DEER, V, combined=True, dtype=torch.float64)
    want = dense([{D: F(5, 9), FF: F(4, 9)}, {EER: F(1)}, {EOS: F(1)}])  # dog dropped
    torch.testing.assert_close(deer, want, rtol=0, atol=1e-12)
    # rank 1: combined == plain
    torch.testing.assert_close(
        trie.target_distributions(TOY, mu, DOG, V, combined=True), trie.target_distributions(TOY, mu, DOG, V)
    )
    # the query helper agrees
    per_rank = trie.query_sparse_targets(TOY, 1, combined=True)
    assert [[t for t, _ in row] for row in per_rank[2]] == [[D, C, FF], [AT], [S], [EOS]]
    assert dict(per_rank[2][0])[C] == pytest.approx(20 / 47, abs=1e-12)


def onehot(path):
    out = torch.zeros(len(path), V, dtype=torch.float64)
    out[torch.arange(len(path)), torch.tensor(path)] = 1.0
    return out


def rows_dense(rows):
    return dense([{t: F(m) for t, m in row} for row in rows])


def test_beta_large_gives_one_hot_rows():
    # top-ranked path: one-hot on its own tokens, for beta = inf and (to 1e-6) beta = 40
    for beta in (math.inf, 40):
        got = trie.target_distributions(TOY, trie_scores(5, beta), DOG, V, dtype=torch.float64)
        torch.testing.assert_close(got, onehot(DOG), rtol=0, atol=1e-6)
    # combined (Appendix F): every rank's rows tend to its own one-hot (item-level limit)
    for beta in (math.inf, 100, 1000):  # (4/5)**100 ~ 2e-10; 1000: no underflow (log-space)
        for path, rows in zip(TOY, trie.query_sparse_targets(TOY, beta, combined=True)):
            torch.testing.assert_close(rows_dense(rows), onehot(path), rtol=0, atol=1e-6)
    # plain trie: the limit puts all mass on the way to the best-ranked docID below the prefix,
    # e.g. for "cats" step 1 -> d (dog is rank 1), step 3 -> EOS (cat is rank 2 < 3)
    want_cats = dense([{D: F(1)}, {AT: F(1)}, {EOS: F(1)}, {EOS: F(1)}])
    for beta in (math.inf, 40, 1000):
        torch.testing.assert_close(rows_dense(trie.query_sparse_targets(TOY, beta)[2]), want_cats, rtol=0, atol=1e-6)


def test_beta_zero_counts_docids():
    got = trie.target_distributions(TOY, trie_scores(5, 0), CAT, V, dtype=torch.float64)
    assert got[0, D].item() == pytest.approx(2 / 5) and got[0, C].item() == pytest.approx(2 / 5)
    assert got[2, EOS].item() == pytest.approx(1 / 2) and got[2, S].item() == pytest.approx(1 / 2)
    # beta = 0 is allowed by the query helper too (mu(r) = 1/r**0 = 1): d 2/5, c 2/5, f 1/5 at the root
    root = dict(trie.query_sparse_targets(TOY, 0)[1][0])
    assert root == pytest.approx({D: 2 / 5, C: 2 / 5, FF: 1 / 5}, abs=1e-12)


def test_step_pairs_sorted_by_token_id_not_by_rank():
    """A step's (token, mass) pairs are sorted by token id: rank 1 fish (f) before rank 2 dog (d);
    beta = 1 gives f 1 / (1 + 1/2) = 2/3 and d 1/3 (section 4.2)."""
    rows = trie.query_sparse_targets([[FF, EOS], [D, EOS]], 1)[0]
    assert [t for t, _ in rows[0]] == [D, FF] and [m for _, m in rows[0]] == pytest.approx([1 / 3, 2 / 3])


def test_build_trie_structure():
    t = trie.build_trie(TOY)
    assert t[()] == {D: (0, 3), C: (1, 2), FF: (4,)}
    assert t[(C, AT)] == {EOS: (1,), S: (2,)}
    assert tuple(DOG) not in t  # full docIDs are leaves


@pytest.mark.parametrize(
    "docids, match",
    [
        ([], "non-empty"),
        ([DOG, CAT, DOG], "duplicate"),
        ([DOG, [C, AT]], "EOS"),
        ([DOG, [C, EOS, AT, EOS]], "before its end"),
        ([DOG, []], "empty"),
        ([DOG, [-1, EOS]], "negative token id"),
    ],
)
def test_bad_docids_raise(docids, match):
    with pytest.raises(ValueError, match=match):
        trie.sparse_targets(docids, [1.0] * len(docids), DOG)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="not one of the docids"):
        trie.target_distributions(TOY, trie_scores(5, 1), [C, OG, EOS], V)
    with pytest.raises(ValueError, match="beta=-0.5"):
        trie.query_sparse_targets(TOY, -0.5)
    with pytest.raises(ValueError, match="4 scores"):
        trie.sparse_targets(TOY, [1, 2, 3, 4], DOG)
    with pytest.raises(ValueError, match=r"mu\[1\]"):
        trie.sparse_targets(TOY, [1, -2, 3, 4, 5], DOG)
    with pytest.raises(ValueError, match=r"mu\[1\]=inf"):
        trie.sparse_targets(TOY, [1, math.inf, 3, 4, 5], DOG)
    with pytest.raises(ValueError, match="mu is 0"):  # inf limit via explicit mu: use the query helper
        trie.sparse_targets(TOY, trie_scores(5, math.inf), CATS)
