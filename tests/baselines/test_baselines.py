"""DE and CE baselines of section 5.3: losses against hand computations, gradients against the
literal formula, row-sparse optimisers against torch.optim, tiny trees where the answer is known,
bad input, ARR-run pick-up and the findings of Figure 3."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from arrank.baselines import figure3 as BL, cross_encoder as CE, dual_encoder as DE, lookup


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread (two threads spin badly when other jobs share the two cores)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_tree(depth: int = 3) -> tuple[list[str], pd.DataFrame]:
    """A complete binary tree: "r", "r0", "r1", "r00", ...; each non-root node is a query whose
    relevant docIDs are its ancestors (parent first, root last) and whose negative is the other
    child of the root ("r1" for the queries below "r0", and the reverse): a document of the
    training pairs, so the in-batch softmax does place it (a leaf negative would never be a
    document, and a softmax loss leaves its score free)."""
    nodes = ["r"] + [f"r{i:0{level}b}" for level in range(1, depth + 1) for i in range(2 ** level)]
    rows = []
    for x in nodes[1:]:
        rows.append({"query": x, "relevant": [x[:i] for i in range(len(x) - 1, 0, -1)],
                     "negative": "r1" if x[1] == "0" else "r0", "split": "eval"})
    return nodes, pd.DataFrame(rows)


# --------------------------------------------------------------------------- data view


def test_pairs_and_rank_weights():
    nodes, df = tiny_tree(2)
    rows = lookup.row_index(nodes)
    pairs = lookup.positive_pairs(df, rows)
    # r0, r1: (q, r, 1); r00..r11: (q, parent, 1), (q, r, 2)
    assert len(pairs.query) == 2 + 4 * 2
    got = [(nodes[q], nodes[d], int(r)) for q, d, r in zip(*pairs)]
    assert got[:4] == [("r0", "r", 1), ("r1", "r", 1), ("r00", "r0", 1), ("r00", "r", 2)]
    assert lookup.rank_weights(torch.tensor([1, 2, 3]), 2.0).tolist() == pytest.approx([1, 1 / 4, 1 / 9])
    assert lookup.rank_weights(torch.tensor([1, 5]), 0.0).tolist() == [1.0, 1.0]


def test_batches_cover_each_epoch_without_repeats():
    gen = torch.Generator().manual_seed(0)
    batches = list(lookup.batch_indices(10, 3, 6, gen))
    assert all(len(b) == 3 and len(set(b.tolist())) == 3 for b in batches)
    assert len(set(torch.cat(batches[:3]).tolist())) == 9  # one epoch: 3 batches, 9 distinct pairs


# --------------------------------------------------------------------------- losses by hand


def test_de_loss_matches_a_hand_computation_on_a_batch_of_3():
    qs = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]
    ds = [[0.8, 0.6], [1.0, 0.0], [0.0, 1.0]]
    q, d = torch.tensor(qs, dtype=torch.float64), torch.tensor(ds, dtype=torch.float64)
    tau, ranks = 0.05, [1, 2, 3]
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))
    # log softmax of the positive, per pair, written out
    ell = [dot(qs[i], ds[i]) / tau - math.log(sum(math.exp(dot(qs[i], ds[j]) / tau) for j in range(3)))
           for i in range(3)]
    for alpha in (0.0, 1.0, 2.0):
        expected = -(1 / 3) * sum(ell[i] / ranks[i] ** alpha for i in range(3))
        lam = lookup.rank_weights(torch.tensor(ranks), alpha, torch.float64)
        assert DE.de_loss(q, d, lam, tau).item() == pytest.approx(expected, rel=1e-12)
    # alpha only rescales each pair's term by 1/r^alpha: L(2) - L(0) is the hand value
    l0 = -(ell[0] + ell[1] + ell[2]) / 3
    l2 = -(ell[0] + ell[1] / 4 + ell[2] / 9) / 3
    diff = (DE.de_loss(q, d, lookup.rank_weights(torch.tensor(ranks), 2.0, torch.float64), tau)
            - DE.de_loss(q, d, torch.ones(3, dtype=torch.float64), tau)).item()
    assert diff == pytest.approx(l2 - l0, rel=1e-12) and diff < 0  # every ell < 0: weights < 1 lower L


def test_ce_loss_matches_a_hand_computation_on_a_batch_of_3():
    pos, neg, ranks = [2.0, -1.0, 0.5], [0.3, 1.2, -0.7], [1, 2, 3]
    log_sigmoid = lambda x: math.log(1 / (1 + math.exp(-x)))
    for alpha in (0.0, 1.0, 3.0):
        lam = [1 / r ** alpha for r in ranks]
        expected = -sum(lam[i] / sum(lam) * log_sigmoid(pos[i]) + log_sigmoid(-neg[i]) / 3 for i in range(3))
        got = CE.ce_loss(torch.tensor(pos, dtype=torch.float64), torch.tensor(neg, dtype=torch.float64),
                         lookup.rank_weights(torch.tensor(ranks), alpha, torch.float64))
        assert got.item() == pytest.approx(expected, rel=1e-12)


def test_deduplicated_de_loss_and_gradient_equal_the_literal_formula():
    gen = torch.Generator().manual_seed(3)
    table = DE.init_table(14, 5, gen).double()
    # repeated documents, repeated queries, and rows that are both a query and a document
    q = torch.tensor([0, 1, 2, 2, 3, 4, 5, 5, 6, 7])
    d = torch.tensor([8, 8, 9, 8, 2, 9, 10, 11, 8, 0])
    w = lookup.rank_weights(torch.tensor([1, 1, 2, 3, 1, 2, 1, 2, 4, 1]), 2.5, torch.float64)
    loss, rows, grad = DE.de_loss_and_grad(table, q, d, w)
    leaf = table.clone().requires_grad_()
    literal = DE.de_loss(leaf[q], leaf[d], w)
    literal.backward()
    assert loss == pytest.approx(literal.item(), rel=1e-12)
    touched = sorted(set(q.tolist()) | set(d.tolist()))
    assert rows.tolist() == touched
    assert torch.allclose(grad, leaf.grad[rows], atol=1e-12)
    assert leaf.grad[[12, 13]].abs().max() == 0  # rows 12, 13 are not in the batch


# --------------------------------------------------------------------------- optimisers


def test_lazy_momentum_equals_torch_sgd_when_every_row_is_in_every_batch():
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    full = len(pairs.query)  # full batch: every node is a query or a document in every step
    lazy, _, _ = DE.train_de(pairs, len(nodes), 4, 1.0, steps=15, batch_size=full, progress=False)
    dense, _, _ = DE.train_de(pairs, len(nodes), 4, 1.0, steps=15, batch_size=full, row_updates="dense",
                              progress=False)
    assert torch.allclose(lazy, dense, atol=1e-5)
    assert torch.allclose(lazy.norm(dim=1), torch.ones(len(nodes)), atol=1e-6)  # projected rows


def test_lazy_momentum_leaves_untouched_rows_alone():
    table = DE.init_table(6, 3, torch.Generator().manual_seed(0))
    before, buffer = table.clone(), torch.zeros_like(table)
    rows = torch.tensor([1, 4])
    DE.lazy_momentum_step(table, buffer, rows, torch.ones(2, 3), lr=0.1, momentum=0.9)
    assert torch.equal(table[[0, 2, 3, 5]], before[[0, 2, 3, 5]]) and buffer[[0, 2, 3, 5]].abs().max() == 0
    expected = before[1] - 0.1
    assert torch.allclose(table[1], expected / expected.norm())
    DE.lazy_momentum_step(table, buffer, rows, torch.ones(2, 3), lr=0.1, momentum=0.9)
    assert torch.allclose(buffer[1], torch.full((3,), 1.9))  # 0.9 * 1 + 1


def test_lazy_adam_equals_torch_adam_when_every_row_is_in_every_batch():
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    full = len(pairs.query)
    (t_lazy, m_lazy), _, _ = CE.train_ce(pairs, len(nodes), 3, 2.0, steps=12, batch_size=full, lr=0.01,
                                         weight_decay=0.01, row_updates="lazy", progress=False)
    (t_dense, m_dense), _, _ = CE.train_ce(pairs, len(nodes), 3, 2.0, steps=12, batch_size=full, lr=0.01,
                                           weight_decay=0.01, row_updates="dense", progress=False)
    assert torch.allclose(t_lazy, t_dense, atol=1e-5)
    for a, b in zip(m_lazy.parameters(), m_dense.parameters()):
        assert torch.allclose(a, b, atol=1e-5)


def test_ce_mlp_shape_and_initialisation():
    net = CE.mlp(16, torch.Generator().manual_seed(0))
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [tuple(m.weight.shape) for m in linears] == [(32, 32), (32, 32), (32, 32), (1, 32)]
    assert sum(isinstance(m, torch.nn.ReLU) for m in net) == 3
    assert all(m.bias.abs().max() == 0 for m in linears)
    weights = torch.cat([m.weight.flatten() for m in linears[:3]])
    assert weights.var().item() == pytest.approx(1 / 32, rel=0.1)


# --------------------------------------------------------------------------- tiny trees


def _fit_tiny_tree(model: str, n: int, alpha: float, steps: int, de_lr: float = DE.LR, seed: int = 0):
    nodes, df = tiny_tree(3)
    rows = lookup.row_index(nodes)
    pairs = lookup.positive_pairs(df, rows)
    hyper = {"de_steps": steps, "ce_steps": steps, "batch_size": len(pairs.query), "tau": DE.TAU,
             "de_lr": de_lr, "de_momentum": DE.MOMENTUM, "ce_lr": CE.LR, "ce_weight_decay": CE.WEIGHT_DECAY,
             "de_row_updates": "lazy", "ce_row_updates": "dense"}
    results, logs = BL.run_configs(BL.single_config(model, n, alpha), pairs, len(nodes), df, rows, hyper,
                                   [1, 2, 3], seed=seed, corpus=nodes, progress=False)
    return results.iloc[0], logs


@pytest.mark.parametrize("seed", [0, 1])
def test_dual_encoder_ranks_the_parent_first_on_a_tiny_tree(seed):
    # lr 0.03, not Appendix B's 1.0: each pair's gradient is scaled by 1/B, and 1.0 is tuned for
    # B = 2048; with the tiny tree's full batch of 34 pairs it makes SGD + momentum oscillate.
    row, logs = _fit_tiny_tree("de", 16, 5.0, 300, de_lr=0.03, seed=seed)
    assert row["n_queries"] == 14 and row["recall@1"] == 1.0 and row["cvr"] == 0.0
    assert logs["loss"].iloc[-1] < logs["loss"].iloc[0]
    assert 0.0 <= row["retrieval_recall@1"] <= 1.0  # over all 15 nodes: children and siblings compete


def test_cross_encoder_ranks_the_parent_first_on_a_tiny_tree():
    row, logs = _fit_tiny_tree("ce", 16, 5.0, 1000)
    assert row["n_queries"] == 14 and row["recall@1"] == 1.0
    assert logs["loss"].iloc[-1] < logs["loss"].iloc[0]


def test_retrieve_equals_brute_force():
    gen = torch.Generator().manual_seed(1)
    table = DE.init_table(40, 3, gen)
    corpus = torch.arange(5, 40)
    q = torch.tensor([0, 7, 12])
    found, scores = DE.retrieve(table, q, corpus, 4, block=2)
    for i, row in enumerate(q.tolist()):
        s = {c: float(table[row] @ table[c]) for c in corpus.tolist() if c != row}
        best = sorted(s, key=lambda c: -s[c])[:4]
        assert found[i][:4].tolist() == best


def test_retrieval_recall_equals_brute_force():
    nodes, df = tiny_tree(3)
    rows = lookup.row_index(nodes)
    table = DE.init_table(len(nodes), 3, torch.Generator().manual_seed(5))
    got = BL.retrieval_recall(table, df, rows, nodes, [1, 2, 3])
    for k in (1, 2, 3):
        values = []
        for query, rel in zip(df["query"], df["relevant"]):
            if len(rel) < k:
                continue
            s = {x: float(table[rows[query]] @ table[rows[x]]) for x in nodes if x != query}
            top = sorted(s, key=lambda x: (-s[x], x))[:k]
            values.append(len(set(top) & set(rel[:k])) / k)
        assert got[f"retrieval_recall@{k}"] == pytest.approx(np.mean(values))


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_bad_dimension_is_refused(n):
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    with pytest.raises(ValueError, match=r"embedding dimension n=.*integer >= 1"):
        DE.train_de(pairs, len(nodes), n, 1.0, steps=1, batch_size=2, progress=False)
    with pytest.raises(ValueError, match=r"embedding dimension n="):
        CE.train_ce(pairs, len(nodes), n, 1.0, steps=1, batch_size=2, progress=False)


@pytest.mark.parametrize("alpha", [-1.0, -0.01, float("nan"), "2"])
def test_bad_alpha_is_refused(alpha):
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    with pytest.raises(ValueError, match=r"alpha=.*>= 0"):
        DE.train_de(pairs, len(nodes), 4, alpha, steps=1, batch_size=2, progress=False)
    with pytest.raises(ValueError, match=r"alpha=.*>= 0"):
        CE.train_ce(pairs, len(nodes), 4, alpha, steps=1, batch_size=2, progress=False)


def test_batch_larger_than_the_pairs_is_refused():
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    for train in (DE.train_de, CE.train_ce):
        with pytest.raises(ValueError, match=r"batch_size=11 is larger than the number of training pairs \(10\)"):
            train(pairs, len(nodes), 4, 1.0, steps=1, batch_size=11, progress=False)
        with pytest.raises(ValueError, match=r"batch_size=0"):
            train(pairs, len(nodes), 4, 1.0, steps=1, batch_size=0, progress=False)


def test_unknown_synset_and_model_are_refused():
    nodes, df = tiny_tree(2)
    with pytest.raises(ValueError, match=r"'r00' has no row"):
        lookup.positive_pairs(df, lookup.row_index(["r", "r0", "r1"]))
    with pytest.raises(ValueError, match=r"model='mlp'"):
        BL.single_config("mlp", 4, 1.0)


# --------------------------------------------------------------------------- Figure 3 plumbing


def test_figure3_configs_share_runs_between_panels():
    configs = BL.figure3_configs([4, 8, 16, 32], 32, 5.0, 8, [0, 1, 5])
    keys = [BL.config_key(c["model"], c["n"], c["alpha"]) for c in configs]
    assert len(keys) == len(set(keys)) == 4 + 1 + 2 + 2  # de n8 a5 and ce n32 a5 are shared
    shared = {BL.config_key(c["model"], c["n"], c["alpha"]): c["panels"] for c in configs}
    assert shared["de_n8_alpha5"] == ["a", "b"] and shared["ce_n32_alpha5"] == ["a", "c"]


def test_arr_runs_are_picked_up_on_the_same_evaluation_queries(tmp_path):
    def write(name, params, n_queries):
        folder = tmp_path / "05_train" / name
        folder.mkdir(parents=True)
        metrics = {"n_queries": n_queries, "cvr": 0.1, "ndcg": 0.9, "recall@1": 0.7, "recall@2": 0.6}
        (folder / "results.json").write_text(json.dumps({"params": params, "metrics": metrics}))

    same = {"subtree": "animal.n.01", "min_relevant": 5, "n_eval": 300, "seed": 0}
    write("frac", {**same, "scheme": "fractional", "alpha": 2.0, "targets": "onehot", "beta": 2.0}, 300)
    write("other-data", {**same, "subtree": "canine.n.02", "scheme": "indicator", "targets": "onehot"}, 300)
    write("fewer-queries", {**same, "scheme": "indicator", "targets": "onehot"}, 50)
    write(".staging", {**same, "scheme": "indicator", "targets": "onehot"}, 300)
    arr = BL.arr_runs(same, 300, root=tmp_path)
    assert arr["run"].tolist() == ["frac"] and arr["label"].iloc[0] == "ARR fractional a=2, onehot [frac]"
    assert BL.arr_runs({**same, "seed": 1}, 300, root=tmp_path).empty
    assert BL.arr_runs(same, 300, root=tmp_path, pattern="fewer*").empty  # matches, but 50 queries
    with pytest.raises(ValueError, match="glob on run names"):
        BL.arr_runs(same, 300, root=tmp_path, pattern="../x")


def _results(rows):
    frame = pd.DataFrame(rows)
    frame["config"] = [BL.config_key(m, n, a) for m, n, a in zip(frame["model"], frame["n"], frame["alpha"])]
    return frame.set_index("config")


def test_findings_and_flat_metrics():
    r = lambda model, n, alpha, *rec: {"model": model, "n": n, "alpha": float(alpha), "panels": "a", "ndcg": 0.9,
                                       **{f"recall@{k + 1}": v for k, v in enumerate(rec)}}
    results = _results([r("de", 4, 5, .1, .1, .1, .1, .1), r("de", 8, 5, .3, .2, .2, .2, .2),
                        r("ce", 8, 5, .5, .4, .1, .1, .1), r("de", 8, 0, .2, .3, .3, .3, .3)])
    f = BL.findings(results, [4, 8], 8, 5.0, 8, [0.0, 5.0])
    assert f["finding_de_grows_with_n"] is True and f["finding_ce_above_de_small_k"] is True
    assert f["finding_alpha_raises_de_small_k"] is False  # R@2: 0.2 at alpha 5 < 0.3 at alpha 0
    assert f["de_n4_mean_recall@1-5"] == pytest.approx(0.1)
    flat = BL.flat_metrics(results)
    assert flat["de_n8_alpha5_recall@1"] == 0.3 and flat["ce_n8_alpha5_ndcg"] == 0.9 and "recall@1" not in flat
    single = BL.flat_metrics(results.iloc[:1])
    assert single["recall@1"] == 0.1 and single["de_n4_alpha5_recall@1"] == 0.1


def test_panel_tables_and_figure():
    results = _results([{"model": "de", "n": 8, "alpha": a, "panels": "b", "recall@1": a / 10, "recall@2": 0.5}
                        for a in (0.0, 2.0)])
    table = BL.panel_table(results, "b", [1, 2])
    assert table["curve"].unique().tolist() == ["DE n=8 alpha=0", "DE n=8 alpha=2"]
    assert table.loc[(table["curve"] == "DE n=8 alpha=2") & (table["k"] == 1), "recall"].item() == 0.2
    assert BL.panel_table(results, "a", [1, 2]).empty
    fig = BL.recall_figure(table, "b")
    assert len(fig.data) == 2 and list(fig.data[1].y) == [0.2, 0.5]
