"""DE and CE baselines of section 5.3: losses against hand computations, gradients against the
literal formula, row-sparse optimisers against torch.optim, tiny trees where the answer is known,
bad input, ARR-run pick-up and the findings of Figure 3."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from arrank.baselines import cross_encoder as CE
from arrank.baselines import dual_encoder as DE
from arrank.baselines import figure3 as BL
from arrank.baselines import lookup, panels
from arrank.common import outputs
from arrank.evaluation import metrics
from arrank.results import figure3 as F3


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
    nodes = ["r"] + [f"r{i:0{level}b}" for level in range(1, depth + 1) for i in range(2**level)]
    rows = []
    for x in nodes[1:]:
        rows.append(
            {
                "query": x,
                "relevant": [x[:i] for i in range(len(x) - 1, 0, -1)],
                "negative": "r1" if x[1] == "0" else "r0",
                "split": "eval",
            }
        )
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


def test_a_rank_below_one_is_refused():
    """lambda(r) = 1/r^alpha (section 5.3) is defined for ranks r >= 1: rank 0 would weigh a pair 1/0."""
    with pytest.raises(ValueError, match="ranks must be >= 1, got 0"):
        lookup.rank_weights(torch.tensor([1, 0, 2]), 1.0)


def test_batches_use_every_pair_of_an_epoch_and_are_always_full():
    # 6 pairs, batches of 3: the two batches of an epoch are the 6 pairs, no pair left for the next epoch
    batches = list(lookup.batch_indices(6, 3, 4, torch.Generator().manual_seed(0)))
    assert sorted(torch.cat(batches[:2]).tolist()) == list(range(6)) == sorted(torch.cat(batches[2:]).tolist())
    # 8 pairs, batches of 3: the third batch would hold the 2 pairs left; it comes whole from the next epoch
    assert [len(b) for b in lookup.batch_indices(8, 3, 5, torch.Generator().manual_seed(0))] == [3] * 5


def test_train_steps_logs_the_mean_loss_of_each_block_of_steps_and_refuses_a_divergence():
    """The log holds the mean loss of steps 1..100, 101..200 and 201..250 (LOG_EVERY = 100): with
    loss i at step i, (1 + 100) / 2, (101 + 200) / 2 and (201 + 250) / 2."""
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    table = torch.ones(len(nodes), 2)
    args = (pairs, table, 2, 250, torch.Generator().manual_seed(0), "t", False)
    log, facts = lookup.train_steps(lambda i, idx: float(i), *args, "diverged {loss}")
    assert log.to_dict("list") == {"step": [100, 200, 250], "loss": [50.5, 150.5, 225.5]}
    assert facts["steps"] == 250 and facts["steps_per_s"] == pytest.approx(250 / facts["train_s"])
    assert facts["row_norm_mean"] == pytest.approx(math.sqrt(2))
    with pytest.raises(FloatingPointError, match="^diverged nan"):
        lookup.train_steps(lambda i, idx: float(i) if i < 250 else math.nan, *args, "diverged {loss}")


# --------------------------------------------------------------------------- losses by hand


def test_de_loss_matches_a_hand_computation_on_a_batch_of_3():
    qs = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]
    ds = [[0.8, 0.6], [1.0, 0.0], [0.0, 1.0]]
    q, d = torch.tensor(qs, dtype=torch.float64), torch.tensor(ds, dtype=torch.float64)
    tau, ranks = 0.05, [1, 2, 3]
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))
    # log softmax of the positive, per pair, written out
    ell = [
        dot(qs[i], ds[i]) / tau - math.log(sum(math.exp(dot(qs[i], ds[j]) / tau) for j in range(3))) for i in range(3)
    ]
    for alpha in (0.0, 1.0, 2.0):
        expected = -(1 / 3) * sum(ell[i] / ranks[i] ** alpha for i in range(3))
        lam = lookup.rank_weights(torch.tensor(ranks), alpha, torch.float64)
        assert DE.de_loss(q, d, lam, tau).item() == pytest.approx(expected, rel=1e-12)
    # alpha only rescales each pair's term by 1/r^alpha: L(2) - L(0) is the hand value
    l0 = -(ell[0] + ell[1] + ell[2]) / 3
    l2 = -(ell[0] + ell[1] / 4 + ell[2] / 9) / 3
    diff = (
        DE.de_loss(q, d, lookup.rank_weights(torch.tensor(ranks), 2.0, torch.float64), tau)
        - DE.de_loss(q, d, torch.ones(3, dtype=torch.float64), tau)
    ).item()
    assert diff == pytest.approx(l2 - l0, rel=1e-12) and diff < 0  # every ell < 0: weights < 1 lower L


def test_ce_loss_matches_a_hand_computation_on_a_batch_of_3():
    pos, neg, ranks = [2.0, -1.0, 0.5], [0.3, 1.2, -0.7], [1, 2, 3]
    log_sigmoid = lambda x: math.log(1 / (1 + math.exp(-x)))
    for alpha in (0.0, 1.0, 3.0):
        lam = [1 / r**alpha for r in ranks]
        expected = -sum(lam[i] / sum(lam) * log_sigmoid(pos[i]) + log_sigmoid(-neg[i]) / 3 for i in range(3))
        got = CE.ce_loss(
            torch.tensor(pos, dtype=torch.float64),
            torch.tensor(neg, dtype=torch.float64),
            lookup.rank_weights(torch.tensor(ranks), alpha, torch.float64),
        )
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


def test_de_table_starts_on_the_unit_sphere():
    """Appendix B keeps every DE row on the unit sphere; the initial rows are there too (a row no
    batch touches keeps its initial norm)."""
    table = DE.init_table(50, 3, torch.Generator().manual_seed(0))
    assert torch.allclose(table.norm(dim=1), torch.ones(50), atol=1e-6)
    assert table.std() > 0.3  # i.i.d. directions, not one row repeated: entries spread around 0 (var 1/3)


def test_defaults_are_appendix_b_and_notebook_07s_paper_profile():
    """Appendix B: DE SGD lr 1.0, momentum 0.9, 50k steps, tau = 0.05 (section 5.3); CE Adam lr
    0.001, weight decay 0.001, 20k steps; batch 2k for both. The library's defaults (a direct
    call) and notebook 07's paper profile hold the same values."""
    from arrank.workbook import run

    appendix_b = {
        "tau": (DE.TAU, 0.05),
        "de_lr": (DE.LR, 1.0),
        "de_momentum": (DE.MOMENTUM, 0.9),
        "de_steps": (DE.STEPS, 50_000),
        "ce_lr": (CE.LR, 1e-3),
        "ce_weight_decay": (CE.WEIGHT_DECAY, 1e-3),
        "ce_steps": (CE.STEPS, 20_000),
        "batch_size": (DE.BATCH_SIZE, 2048),
    }
    resolved = run.prepare("07", {"profile": "paper"})[2]
    for name, (library, paper) in appendix_b.items():
        assert library == paper == resolved[name], name
    assert CE.BATCH_SIZE == 2048


def _first_batch_loss(model: str, pairs, n_rows: int, n: int, alpha: float, batch_size: int) -> float:
    """L_DE / L_CE (section 5.3) of the first batch at the initial parameters, the draws replayed in
    train_de's / train_ce's order (table, [MLP,] epoch order, [CE: the permutation rho])."""
    gen = torch.Generator().manual_seed(0)
    table = DE.init_table(n_rows, n, gen) if model == "de" else CE.init_table(n_rows, n, gen)
    net = CE.mlp(n, gen) if model == "ce" else None
    idx = torch.randperm(len(pairs.query), generator=gen)[:batch_size]
    q, d, w = table[pairs.query[idx]], table[pairs.doc[idx]], lookup.rank_weights(pairs.rank[idx], alpha)
    if model == "de":
        return DE.de_loss(q, d, w).item()
    rho = torch.randperm(batch_size, generator=gen)
    with torch.no_grad():
        return CE.ce_loss(CE.pair_logits(net, q, d), CE.pair_logits(net, q, d[rho]), w).item()


def test_the_first_logged_loss_is_the_loss_of_the_first_batch_with_its_own_weights():
    """One step on a batch of 5 of the 34 pairs (ranks 1..3, alpha = 2): the logged loss is the
    section 5.3 loss of those 5 pairs, each weighted by lambda of its own rank."""
    nodes, df = tiny_tree(3)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    kw = dict(steps=1, batch_size=5, progress=False)
    _, de_log, _ = DE.train_de(pairs, len(nodes), 4, 2.0, **kw)
    _, ce_log, _ = CE.train_ce(pairs, len(nodes), 4, 2.0, **kw)
    assert de_log["loss"].item() == pytest.approx(_first_batch_loss("de", pairs, len(nodes), 4, 2.0, 5), rel=1e-5)
    assert ce_log["loss"].item() == pytest.approx(_first_batch_loss("ce", pairs, len(nodes), 4, 2.0, 5), rel=1e-5)


def test_ce_scores_by_blocks_are_the_mlp_of_each_pair():
    """ce_scores = f_MLP(concat(E(q_i), E(d_i))) (section 5.3) for every pair, whatever the block."""
    gen = torch.Generator().manual_seed(0)
    table, net = CE.init_table(6, 2, gen), CE.mlp(2, gen)
    q, d = torch.tensor([0, 1, 2, 3, 4]), torch.tensor([5, 4, 3, 2, 1])
    with torch.no_grad():
        expected = torch.stack([net(torch.cat([table[a], table[b]])).squeeze() for a, b in zip(q, d)])
    assert torch.allclose(CE.ce_scores(table, net, q, d, block=2), expected, atol=1e-6)


# --------------------------------------------------------------------------- optimisers


def test_lazy_momentum_equals_torch_sgd_when_every_row_is_in_every_batch():
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    full = len(pairs.query)  # full batch: every node is a query or a document in every step
    lazy, _, _ = DE.train_de(pairs, len(nodes), 4, 1.0, steps=15, batch_size=full, progress=False)
    dense, _, _ = DE.train_de(pairs, len(nodes), 4, 1.0, steps=15, batch_size=full, row_updates="dense", progress=False)
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


@pytest.mark.parametrize("optimizer", CE.OPTIMIZERS)
def test_lazy_adam_equals_torch_adam_when_every_row_is_in_every_batch(optimizer):
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    full = len(pairs.query)
    kw = dict(steps=12, batch_size=full, lr=0.01, weight_decay=0.1, optimizer=optimizer, progress=False)
    (t_lazy, m_lazy), _, _ = CE.train_ce(pairs, len(nodes), 3, 2.0, row_updates="lazy", **kw)
    (t_dense, m_dense), _, _ = CE.train_ce(pairs, len(nodes), 3, 2.0, row_updates="dense", **kw)
    assert torch.allclose(t_lazy, t_dense, atol=1e-5)
    for a, b in zip(m_lazy.parameters(), m_dense.parameters()):
        assert torch.allclose(a, b, atol=1e-5)


def _ce_with_an_absent_row(optimizer: str, steps: int, lr: float, weight_decay: float):
    """A CE trained on the depth-2 tree over a table with one more row (index 7) that no pair
    holds; returns (its row at the start, the trained table, facts)."""
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    start = CE.init_table(len(nodes) + 1, 4, torch.Generator().manual_seed(0))[-1]  # train_ce's first draw
    (table, _), _, facts = CE.train_ce(
        pairs,
        len(nodes) + 1,
        4,
        2.0,
        steps=steps,
        batch_size=len(pairs.query),
        lr=lr,
        weight_decay=weight_decay,
        optimizer=optimizer,
        progress=False,
    )
    return start.double(), table, facts


def test_adamw_only_decays_a_row_that_is_absent_from_every_batch():
    # decoupled decay: gradient 0, so Adam's step is 0 and the row is scaled by (1 - lr * wd) a step
    start, table, facts = _ce_with_an_absent_row("adamw", steps=5, lr=0.1, weight_decay=0.1)
    assert torch.allclose(table[-1].double(), start * (1 - 0.1 * 0.1) ** 5, rtol=1e-6, atol=1e-7)
    assert table[-1].norm() > 0.95 * start.norm()


def test_adam_l2_erodes_a_row_that_is_absent_from_every_batch():
    # coupled L2: the row's gradient is wd * theta, which Adam normalises to a step of ~lr to 0
    start, table, facts = _ce_with_an_absent_row("adam_l2", steps=5, lr=0.1, weight_decay=0.1)
    theta, m, v = start.clone(), torch.zeros_like(start), torch.zeros_like(start)
    b1, b2 = CE.BETAS
    for t in range(1, 6):  # torch.optim.Adam written out for this row
        g = 0.1 * theta
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        theta = theta - 0.1 * (m / (1 - b1**t)) / ((v / (1 - b2**t)).sqrt() + CE.EPS)
    assert torch.allclose(table[-1].double(), theta, atol=1e-5)
    assert table[-1].norm() < start.norm() - 0.5  # 5 steps of ~0.1 on each of its 4 entries


def test_row_norm_stats_and_the_ce_facts():
    table = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]])
    assert lookup.row_norm_stats(table, torch.tensor([0, 2, 0])) == {
        "row_norm_mean": 7.5,
        "row_norm_min": 5.0,
        "row_norm_max": 10.0,
    }  # row 0 counted once
    _, table, facts = _ce_with_an_absent_row("adamw", steps=2, lr=0.01, weight_decay=0.0)
    norms = table[:-1].norm(dim=1)  # the trained rows: the absent row is not among them
    assert facts["row_norm_mean"] == pytest.approx(norms.mean().item(), rel=1e-6)
    assert facts["row_norm_max"] == pytest.approx(norms.max().item(), rel=1e-6)


def test_ce_table_init_std_scales_the_same_draw_and_bad_settings_are_refused():
    a = CE.init_table(5, 3, torch.Generator().manual_seed(2))
    b = CE.init_table(5, 3, torch.Generator().manual_seed(2), std=32**-0.5)
    assert torch.allclose(b, a * 32**-0.5)
    for std in (0.0, -1.0, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="table_init_std=.*finite number > 0"):
            CE.init_table(5, 3, torch.Generator(), std=std)
    nodes, df = tiny_tree(2)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    # a direct call (not through notebook 07's rules) must not fall back to another optimiser silently
    with pytest.raises(ValueError, match=r"optimizer='sgd' is not allowed; choose one of \['adamw', 'adam_l2'\]"):
        CE.train_ce(pairs, len(nodes), 4, 1.0, steps=1, batch_size=2, optimizer="sgd", progress=False)
    with pytest.raises(ValueError, match=r"row_updates='sparse' is not allowed; choose one of \['lazy', 'dense'\]"):
        DE.train_de(pairs, len(nodes), 4, 1.0, steps=1, batch_size=2, row_updates="sparse", progress=False)


def test_de_rows_stay_on_the_unit_sphere_and_the_facts_say_so():
    nodes, df = tiny_tree(3)
    pairs = lookup.positive_pairs(df, lookup.row_index(nodes))
    for updates in DE.ROW_UPDATES:  # batches of 8 of the 34 pairs: most rows are absent from a batch
        table, _, facts = DE.train_de(
            pairs, len(nodes), 4, 2.0, steps=20, batch_size=8, lr=0.5, row_updates=updates, progress=False
        )
        assert torch.allclose(table.norm(dim=1), torch.ones(len(nodes)), atol=1e-6)
        assert abs(facts["row_norm_min"] - 1) < 1e-6 and abs(facts["row_norm_max"] - 1) < 1e-6


def test_ce_mlp_shape_and_initialisation():
    net = CE.mlp(16, torch.Generator().manual_seed(0))
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [tuple(m.weight.shape) for m in linears] == [(32, 32), (32, 32), (32, 32), (1, 32)]
    assert sum(isinstance(m, torch.nn.ReLU) for m in net) == 3
    assert all(m.bias.abs().max() == 0 for m in linears)
    weights = torch.cat([m.weight.flatten() for m in linears[:3]])
    assert weights.var().item() == pytest.approx(1 / 32, rel=0.1)


# --------------------------------------------------------------------------- tiny trees


def _tiny_hyper(batch_size: int, steps: int) -> dict:
    """Appendix B's hyper-parameters with the tiny tree's full batch and ``steps`` steps."""
    return {
        "de_steps": steps,
        "ce_steps": steps,
        "batch_size": batch_size,
        "tau": DE.TAU,
        "de_lr": DE.LR,
        "de_momentum": DE.MOMENTUM,
        "ce_lr": CE.LR,
        "ce_weight_decay": CE.WEIGHT_DECAY,
        "de_row_updates": "lazy",
        "ce_row_updates": "dense",
        "ce_optimizer": CE.OPTIMIZER,
        "ce_table_init_std": CE.TABLE_INIT_STD,
    }


def _fit_tiny_tree(model: str, n: int, alpha: float, steps: int, de_lr: float = DE.LR, seed: int = 0):
    nodes, df = tiny_tree(3)
    rows = lookup.row_index(nodes)
    pairs = lookup.positive_pairs(df, rows)
    hyper = {**_tiny_hyper(len(pairs.query), steps), "de_lr": de_lr}
    results, logs, _ = BL.run_configs(
        BL.single_config(model, n, alpha),
        pairs,
        len(nodes),
        df,
        rows,
        hyper,
        [1, 2, 3],
        seed=seed,
        corpus=nodes,
        progress=False,
    )
    return results.iloc[0], logs


def test_configs_in_worker_processes_give_the_results_of_one_process_in_config_order():
    """workers=2 runs each config in a spawned 1-thread process; a config is seeded by the seed
    alone, so its metrics and loss curve are those of the in-process run (losses within 1e-4 of
    their scale: 1-thread and n-thread reductions round differently), in the configs' order."""
    nodes, df = tiny_tree(3)
    rows = lookup.row_index(nodes)
    pairs = lookup.positive_pairs(df, rows)
    hyper = {**_tiny_hyper(len(pairs.query), 40), "de_lr": 0.03}
    configs = BL.figure3_configs([2, 4], 4, 5.0, 2, [0.0])
    args = (configs, pairs, len(nodes), df, rows, hyper, [1, 2])
    one, logs_one, pq_one = BL.run_configs(*args, seed=0, progress=False)
    two, logs_two, pq_two = BL.run_configs(*args, seed=0, progress=False, workers=2)
    assert two.index.tolist() == one.index.tolist() == [BL.config_key(c["model"], c["n"], c["alpha"]) for c in configs]
    scale = logs_one["loss"].abs().max()
    assert (logs_two["loss"] - logs_one["loss"]).abs().max() <= 1e-4 * scale
    assert logs_two["config"].tolist() == logs_one["config"].tolist()
    assert pq_two["config"].tolist() == pq_one["config"].tolist()


@pytest.mark.parametrize("seed", [0, 1])
def test_dual_encoder_ranks_the_parent_first_on_a_tiny_tree(seed):
    # lr 0.03, not Appendix B's 1.0: each pair's gradient is scaled by 1/B, and 1.0 is tuned for
    # B = 2048; with the tiny tree's full batch of 34 pairs it makes SGD + momentum oscillate.
    row, logs = _fit_tiny_tree("de", 16, 5.0, 300, de_lr=0.03, seed=seed)
    assert row["n_queries"] == 14 and row["recall@1"] == 1.0 and row["cvr"] == 0.0
    assert logs["loss"].iloc[-1] < logs["loss"].iloc[0] and row["final_loss"] == logs["loss"].iloc[-1]
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


def test_bad_settings_are_refused_at_the_edge():
    """Dimensions, the model, the optimiser and its settings, steps, batch size, workers and the run
    globs are checked once, by notebook 07's parameters (the runner before a kernel starts)."""
    from arrank.common.params import ParamError
    from arrank.workbook import run

    for name, value, message in [
        ("n", "0", r"n=0 is out of range: allowed in \[1, 4096\]"),
        ("n", "2.5", r"n=2.5 must be an integer"),
        ("ce_dim", "-3", r"ce_dim=-3 is out of range"),
        ("de_dims", "4,0", r"de_dims='4,0' must be a non-empty list of integers >= 1"),
        ("de_alpha_dim", "0", r"de_alpha_dim=0 is out of range"),
        ("alphas", "", r"alphas='' must be a non-empty list of numbers >= 0.0"),
        ("model", "mlp", r"model='mlp' is not allowed; choose one of \['figure3', 'de', 'ce'\]"),
        ("ce_optimizer", "sgd", r"ce_optimizer='sgd' is not allowed; choose one of \['adamw', 'adam_l2'\]"),
        ("de_row_updates", "sparse", r"de_row_updates='sparse' is not allowed"),
        ("tau", "0", r"tau=0 is out of range"),
        ("de_momentum", "1", r"de_momentum=1 is out of range"),
        ("ce_weight_decay", "-1", r"ce_weight_decay=-1 is out of range"),
        ("de_steps", "0", r"de_steps=0 is out of range"),
        ("batch_size", "0", r"batch_size=0 is out of range"),
        ("threads", "0", r"threads=0 is out of range"),
        ("arr_runs", "../x", r"arr_runs='../x' must be a glob on 05_train run names"),
        ("from_runs", "a/b", r"from_runs='a/b' must be '' \(train\) or a glob on 07_de_ce_baselines run names"),
    ]:
        with pytest.raises(ParamError, match=message):
            run.prepare("07", {name: value})


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


def test_unknown_synset_is_refused():
    nodes, df = tiny_tree(2)
    with pytest.raises(ValueError, match=r"'r00' has no row"):
        lookup.positive_pairs(df, lookup.row_index(["r", "r0", "r1"]))


# --------------------------------------------------------------------------- Figure 3 plumbing


def test_figure3_configs_share_runs_between_panels():
    configs = BL.figure3_configs([4, 8, 16, 32], 32, 5.0, 8, [0, 1, 5])
    keys = [BL.config_key(c["model"], c["n"], c["alpha"]) for c in configs]
    assert len(keys) == len(set(keys)) == 4 + 1 + 2 + 2  # de n8 a5 and ce n32 a5 are shared
    shared = {BL.config_key(c["model"], c["n"], c["alpha"]): c["panels"] for c in configs}
    assert shared["de_n8_alpha5"] == ["a", "b"] and shared["ce_n32_alpha5"] == ["a", "c"]


def test_arr_runs_are_picked_up_on_the_same_evaluation_queries(tmp_path):
    def write(name, params, n_queries, train=None):
        folder = tmp_path / "05_train" / name
        folder.mkdir(parents=True)
        metrics = {
            "n_queries": n_queries,
            "cvr": 0.1,
            "ndcg": 0.9,
            "recall@1": 0.7,
            "recall@2": 0.6,
            **{f"train_{k}": v for k, v in (train or {}).items()},
            "final_loss": 1.0,
        }
        outputs.write_results(folder, "05_train", params, metrics, {})

    same = {"subtree": "animal.n.01", "min_relevant": 5, "n_eval": 300, "seed": 0}
    frac = {**same, "scheme": "fractional", "alpha": 2.0, "targets": "onehot", "beta": 2.0}
    write("frac", frac, 300)  # a run made before 05 scored training queries: the held-out curve only
    write("other-data", {**same, "subtree": "canine.n.02", "scheme": "indicator", "targets": "onehot"}, 300)
    write("fewer-queries", {**same, "scheme": "indicator", "targets": "onehot"}, 50)
    write(".staging", {**same, "scheme": "indicator", "targets": "onehot"}, 300)
    arr = panels.arr_runs(same, 300, root=tmp_path)
    assert arr["run"].tolist() == ["frac"] and arr["label"].iloc[0] == "ARR Fractional α=2"
    assert "train_recall@1" not in arr.columns and "final_loss" not in arr.columns
    assert panels.arr_runs({**same, "seed": 1}, 300, root=tmp_path).empty
    assert panels.arr_runs(same, 300, root=tmp_path, pattern="fewer*").empty  # matches, but 50 queries
    # a newer run of the same variant with training-query metrics: labels told apart by what differs
    write("frac-long", {**frac, "steps": 1200}, 300, {"recall@1": 0.9, "recall@2": 0.8, "n_queries": 300})
    arr = panels.arr_runs(same, 300, root=tmp_path, pattern="frac*")
    assert arr["label"].tolist() == ["ARR Fractional α=2 (steps=None)", "ARR Fractional α=2 (steps=1200)"]
    write("ntp", {**frac, "scheme": "indicator"}, 300)  # the paper's row order: NTP before fractional
    assert panels.arr_runs(same, 300, root=tmp_path)["label"].tolist()[0] == "ARR NTP"
    assert arr["train_recall@1"].tolist()[1] == 0.9 and pd.isna(arr["train_recall@1"].tolist()[0])
    only_b = _results([{"model": "de", "n": 8, "alpha": 0.0, "panels": "b", "recall@1": 0.5, "recall@2": 0.5}])
    curves = panels.panel_table(only_b, "a", [1, 2], arr)
    assert curves["curve"].unique().tolist() == [
        "ARR Fractional α=2 (steps=None) (held-out queries)",
        "ARR Fractional α=2 (steps=1200) (training queries)",
        "ARR Fractional α=2 (steps=1200) (held-out queries)",
    ]
    assert curves.groupby("scored_on")["recall"].sum().to_dict() == pytest.approx(
        {"held-out queries": 2 * (0.7 + 0.6), "training queries": 0.9 + 0.8}
    )


def _results(rows):
    frame = pd.DataFrame(rows)
    frame["config"] = [BL.config_key(m, n, a) for m, n, a in zip(frame["model"], frame["n"], frame["alpha"])]
    return frame.set_index("config")


def test_findings_and_flat_metrics():
    r = lambda model, n, alpha, *rec: {
        "model": model,
        "n": n,
        "alpha": float(alpha),
        "panels": "a",
        "ndcg": 0.9,
        **{f"recall@{k + 1}": v for k, v in enumerate(rec)},
    }
    results = _results(
        [
            r("de", 4, 5, 0.1, 0.1, 0.1, 0.1, 0.1),
            r("de", 8, 5, 0.3, 0.2, 0.2, 0.2, 0.2),
            r("ce", 8, 5, 0.5, 0.4, 0.1, 0.1, 0.1),
            r("de", 8, 0, 0.2, 0.3, 0.3, 0.3, 0.3),
        ]
    )
    f = F3.findings(results, [4, 8], 8, 5.0, 8, [0.0, 5.0])
    assert f["finding_de_grows_with_n"] is True and f["finding_ce_above_de"] is False  # CE R@3-5 below
    assert f["finding_ce_above_de_numbers"] == (
        "R@1..5 (%): CE n=8 α=5 50.0 40.0 10.0 10.0 10.0; DE n=8 α=5 30.0 20.0 20.0 20.0 20.0"
    )
    assert f["finding_de_grows_with_n_numbers"] == "mean R@1..5 (%) 10.0 / 22.0 (n = 4 / 8, α = 5)"
    assert f["finding_alpha_raises_de_small_k_numbers"] == "DE n=8, R@1,2 (%): α 0 20.0 30.0 -> α 5 30.0 20.0"
    assert f["finding_alpha_raises_de_small_k"] is False  # R@2: 0.2 at alpha 5 < 0.3 at alpha 0
    assert f["finding_arr_on_par_with_ce"] is None and f["finding_arr_above_de"] is None  # no ARR runs
    assert f["de_n4_mean_recall@1-5"] == pytest.approx(0.1) and f["on_par_tol"] == 0.02
    flat = BL.flat_metrics(results)
    assert flat["de_n8_alpha5_recall@1"] == 0.3 and flat["ce_n8_alpha5_ndcg"] == 0.9 and "recall@1" not in flat
    logs = pd.DataFrame(
        {
            "step": [1, 2] * 3,
            "loss": [1.0, 0.5] * 3,
            "config": ["de_n8_alpha5"] * 2 + ["ce_n8_alpha5"] * 2 + ["de_n8_alpha0"] * 2,
        }
    )
    assert [t.name for t in panels.loss_figure(logs).data] == ["DE n=8 α=0", "DE n=8 α=5", "CE n=8 α=5"]
    single = BL.flat_metrics(results.iloc[:1])
    assert single["recall@1"] == 0.1 and single["de_n4_alpha5_recall@1"] == 0.1


def test_train_config_passes_every_hyper_parameter_to_its_model(monkeypatch):
    """Each of notebook 07's de_* / ce_* settings, batch_size and (DE only) tau reaches train_de /
    train_ce under its own name: a setting dropped on the way would train with the default."""
    seen = {}
    monkeypatch.setattr(DE, "train_de", lambda *args, **kw: seen.setdefault("de", kw))
    monkeypatch.setattr(CE, "train_ce", lambda *args, **kw: seen.setdefault("ce", kw))
    hyper = {**_tiny_hyper(7, 11), "tau": 0.3, "de_momentum": 0.5, "ce_table_init_std": 0.25, "de_lr": 0.2}
    for model in ("de", "ce"):
        BL.train_config(BL.single_config(model, 4, 1.0)[0], None, 9, hyper, seed=3, progress=False)
    common = {"seed": 3, "progress": False, "steps": 11, "batch_size": 7}
    assert seen["de"] == {**common, "lr": 0.2, "momentum": 0.5, "row_updates": "lazy", "tau": 0.3}
    assert seen["ce"] == {
        **common,
        "lr": CE.LR,
        "weight_decay": CE.WEIGHT_DECAY,
        "row_updates": "dense",
        "optimizer": CE.OPTIMIZER,
        "table_init_std": 0.25,
    }


def test_flat_metrics_give_retrieval_to_the_de_only_and_per_query_rows_keep_r1_to_r5():
    """Full-corpus retrieval is a DE metric (section 5.3's inner products): a CE row's empty
    retrieval columns are not flattened. per_query.csv keeps R@1..5, the k Figure 3's findings compare."""
    results = _results(
        [
            {"model": "de", "n": 8, "alpha": 5.0, "panels": "a", "recall@1": 0.5, "retrieval_recall@1": 0.25},
            {"model": "ce", "n": 8, "alpha": 5.0, "panels": "a", "recall@1": 0.75, "retrieval_recall@1": np.nan},
        ]
    )
    flat = BL.flat_metrics(results)
    assert flat == {
        "de_n8_alpha5_recall@1": 0.5,
        "de_n8_alpha5_retrieval_recall@1": 0.25,
        "ce_n8_alpha5_recall@1": 0.75,
    }
    rel = ["a", "b", "c", "d", "e", "f"]
    scores = {x: -i for i, x in enumerate(rel)} | {"neg": -0.5}  # the negative below "a" only
    frame = metrics.per_query_metrics(
        [{"query": "q", "relevant": rel, "negative": "neg", "scores": scores}], range(1, 7)
    )
    rows = BL.per_query_rows(frame, "de_n8_alpha5")
    assert rows.columns.tolist() == ["config", "query", "cvr", "ndcg", "r1", "r2", "r3", "r4", "r5"]
    # ranking a, neg, b, c, ...: R@k = (k - 1) / k for k >= 2, R@1 = 1; a violation
    assert rows.iloc[0, 4:].tolist() == pytest.approx([1.0, 1 / 2, 2 / 3, 3 / 4, 4 / 5]) and rows["cvr"].item() == 1.0


def test_panel_tables_and_figure():
    results = _results(
        [{"model": "de", "n": 8, "alpha": a, "panels": "b", "recall@1": a / 10, "recall@2": 0.5} for a in (2.0, 0.0)]
    )
    table = panels.panel_table(results, "b", [1, 2])
    assert table["curve"].unique().tolist() == ["DE n=8 α=0", "DE n=8 α=2"]  # alpha order
    assert table.loc[(table["curve"] == "DE n=8 α=2") & (table["k"] == 1), "recall"].item() == 0.2  # fractions
    assert set(table["scored_on"]) == {"training queries"}  # the lookup tables score queries they trained on
    assert panels.panel_table(results, "a", [1, 2]).empty
    fig = panels.recall_figure(table, "b")
    assert len(fig.data) == 2 and list(fig.data[1].y) == [20.0, 50.0]  # percent
    assert fig.data[0].line.color != fig.data[1].line.color and fig.data[0].line.dash == "solid"


def test_panel_a_names_what_each_curve_is_scored_on():
    r = lambda model, n: {"model": model, "n": n, "alpha": 5.0, "panels": "a", "recall@1": n / 40, "recall@2": 0.5}
    results = _results([r("de", 32), r("ce", 32), r("de", 4)])
    arr = pd.DataFrame(
        [
            {
                "label": "ARR NTP",
                "alpha": 2.0,
                "recall@1": 0.7,
                "recall@2": 0.6,
                "train_recall@1": 0.95,
                "train_recall@2": 0.9,
            }
        ]
    )
    drawn = panels.figure3_panels(results, [1, 2], arr, True, [32, 4], 32, 5.0, 8)
    table, fig = drawn["figure3a"]
    assert table["curve"].unique().tolist() == [
        "DE n=4",
        "DE n=32",
        "CE n=32 α=5",
        "ARR NTP (training queries)",
        "ARR NTP (held-out queries)",
    ]  # parameter order
    dashes = {t.name: t.line.dash for t in fig.data}
    assert dashes["ARR NTP (training queries)"] == "dash" and dashes["ARR NTP (held-out queries)"] == "dot"
    assert dashes["DE n=4"] == "solid" and fig.data[3].line.color == fig.data[4].line.color  # one variant, one colour
    assert [t.legendgrouptitle.text for t in fig.data] == [
        panels.BASELINE_GROUP,
        None,
        None,
        panels.ARR_GROUPS["training"],
        panels.ARR_GROUPS["held-out"],
    ]
    title = fig.layout.title.text
    assert "α = 5" in title and "trained and scored on the same queries" in title and "held-out" in title
    assert list(fig.data[4].y) == [70.0, 60.0] and fig.layout.yaxis.title.text == "R@k (%)"


def test_on_par_and_above_use_the_tolerance_and_a_tie_at_one_is_not_a_failure():
    assert F3.on_par([0.90, 0.80], [0.92, 0.79]) and not F3.on_par([0.90, 0.80], [0.93, 0.80])
    assert F3.above([0.95, 0.80], [0.90, 0.79]) and not F3.above([0.91, 0.80], [0.90, 0.79])  # within tol
    assert not F3.above([1.0, 0.99], [0.9, 0.999], tol=0.005)  # below at k = 2
    assert F3.above([1.0, 1.0], [1.0, 0.995], tol=0.01)  # both at 1.000: a tie, not a failure
    assert not F3.above([1.0, 0.97], [1.0, 0.98], tol=0.02)  # a tie below the ceiling shows nothing


def test_findings_compare_the_best_arr_run_with_the_ce_and_the_de():
    r = lambda model, n, alpha, *rec: {
        "model": model,
        "n": n,
        "alpha": float(alpha),
        "panels": "a",
        **{f"recall@{k + 1}": v for k, v in enumerate(rec)},
    }
    results = _results(
        [
            r("de", 16, 5, 1.0, 0.90, 0.80),
            r("de", 32, 5, 1.0, 0.95, 0.85),
            r("ce", 32, 5, 1.0, 0.97, 0.95),
            r("de", 8, 0, 0.80, 0.80, 0.80),
            r("de", 8, 5, 1.0, 0.79, 0.70),
        ]
    )
    curve = lambda prefix, *rec: {f"{prefix}recall@{k + 1}": v for k, v in enumerate(rec)}
    # the best ARR run on its training queries is compared; on held-out queries it is the weaker one
    arr = pd.DataFrame(
        [
            {"label": "ARR weak", **curve("", 0.9, 0.9, 0.9), **curve("train_", 0.5, 0.5, 0.5)},
            {"label": "ARR best", **curve("", 0.5, 0.4, 0.3), **curve("train_", 1.0, 0.96, 0.94)},
        ]
    )
    f = F3.findings(results, [16, 32], 32, 5.0, 8, [0.0, 5.0], arr=arr)
    assert f["finding_ce_above_de"] is True  # tie at R@1 = 1.000, above at R@3 (0.95 vs 0.85)
    assert f["finding_arr_on_par_with_ce"] is True  # ARR best: within 0.02 of the CE at every k
    assert f["finding_arr_above_de"] is True
    assert f["finding_arr_above_de_numbers"] == (
        "R@1..3 (%): ARR best 100.0 96.0 94.0 (its training queries); "
        "DE n=32 α=5 100.0 95.0 85.0; beside it, on held-out "
        "queries: ARR best 50.0 40.0 30.0"
    )
    assert f["finding_alpha_raises_de_small_k"] is True  # R@1 0.80 -> 1.00; R@2 0.80 -> 0.79 is on par
    assert (
        F3.findings(results, [16, 32], 32, 5.0, 8, [0.0, 5.0], arr=arr, tol=0.005)["finding_arr_on_par_with_ce"]
        is False
    )
    # runs made before 05 scored training queries: named with their held-out curve, not compared
    old = F3.findings(
        results, [16, 32], 32, 5.0, 8, [0.0, 5.0], arr=arr.drop(columns=[c for c in arr if "train_" in c])
    )
    assert old["finding_arr_on_par_with_ce"] is None and old["finding_arr_above_de"] is None
    assert old["finding_arr_above_de_numbers"].startswith("no ARR run scored on its training queries")
    assert old["finding_arr_above_de_numbers"].endswith("best on held-out queries: ARR weak 90.0 90.0 90.0")


def test_figure3_is_drawn_from_single_configuration_runs(tmp_path):
    nodes, df = tiny_tree(2)
    rows = lookup.row_index(nodes)
    pairs = lookup.positive_pairs(df, rows)
    hyper = {
        "de_steps": 5,
        "ce_steps": 5,
        "batch_size": len(pairs.query),
        "tau": DE.TAU,
        "de_lr": 0.03,
        "de_momentum": DE.MOMENTUM,
        "ce_lr": CE.LR,
        "ce_weight_decay": CE.WEIGHT_DECAY,
        "de_row_updates": "lazy",
        "ce_row_updates": "dense",
        "ce_optimizer": "adamw",
        "ce_table_init_std": 1.0,
    }
    data = {"subtree": "", "min_relevant": 1, "n_eval": 6, "seed": 0}

    def point(name, model, n, alpha, **params):
        params = {"ce_optimizer": "adamw", **params}
        results, logs, per_query = BL.run_configs(
            BL.single_config(model, n, alpha), pairs, len(nodes), df, rows, hyper, [1, 2], seed=0, progress=False
        )
        folder = tmp_path / BL.STEM / name
        folder.mkdir(parents=True)
        results.to_csv(folder / "results.csv")
        if name != "p-de-n2-a0":  # a run made before per_query.csv was written
            per_query.to_csv(folder / "per_query.csv", index=False)
        logs.to_csv(folder / "training_log.csv", index=False)
        outputs.write_results(folder, BL.STEM, {**data, "model": model, **params}, BL.flat_metrics(results), {})
        return results

    de = point("p-de-n2", "de", 2, 5.0)
    point("p-ce-n4", "ce", 4, 5.0)
    point("p-de-n2-a0", "de", 2, 0.0)
    point("p-other-data", "de", 4, 5.0, seed=1)  # other data: left out
    point("q-de-n4", "de", 4, 5.0)  # name does not match the glob
    point("p-ce-n4-adam", "ce", 4, 5.0, ce_optimizer="adam_l2")  # other training settings: left out
    configs = BL.figure3_configs([2, 4], 4, 5.0, 2, [0.0, 5.0])
    results, logs, per_query, used = BL.point_results({**data, "ce_optimizer": "adamw"}, "p-*", configs, root=tmp_path)
    assert used == ["p-ce-n4", "p-de-n2", "p-de-n2-a0"]
    assert results.index.tolist() == ["de_n2_alpha5", "ce_n4_alpha5", "de_n2_alpha0"]  # no de n4: not run
    assert results.loc["de_n2_alpha5", "panels"] == "a,b" and results.loc["ce_n4_alpha5", "panels"] == "a,c"
    assert results.loc["de_n2_alpha5", "recall@1"] == de.loc["de_n2_alpha5", "recall@1"]
    assert results["n"].dtype.kind == "i" and set(logs["config"]) == set(results.index)
    assert panels.panel_table(results, "b", [1])["curve"].tolist() == ["DE n=2 α=0", "DE n=2 α=5"]  # alpha order
    f = F3.findings(results, [2, 4], 4, 5.0, 2, [0.0, 5.0])
    assert f["finding_de_grows_with_n"] is None and f["finding_alpha_raises_de_small_k"] in (True, False)
    assert per_query["config"].unique().tolist() == ["de_n2_alpha5", "ce_n4_alpha5"]  # not the run without the file
    assert len(per_query) == 2 * len(df[df["split"] == "eval"]) and {"cvr", "ndcg", "r1", "r2"} <= set(per_query)
    with pytest.raises(ValueError, match=r"no finished 07_de_ce_baselines run named like 'z\*'"):
        BL.point_results(data, "z*", configs, root=tmp_path)
    # each file checked against its results.json: cut short, a query twice, a value edited are named
    for name, damage, why in [
        ("per_query.csv", lambda t: t + t.splitlines()[-1] + "\n", "7 rows at config de_n2_alpha5 where its run"),
        ("per_query.csv", lambda t: t[:-3], "a row is cut short"),
        ("results.csv", lambda t: t.replace(f",{float(de.loc['de_n2_alpha5', 'ndcg'])},", ",0.5,"), "the mean ndcg"),
        ("training_log.csv", lambda t: t.splitlines()[0] + "\n", "no rows"),
    ]:
        path = tmp_path / BL.STEM / "p-de-n2" / name
        text = path.read_text()
        path.write_text(damage(text))
        with pytest.raises(
            outputs.DamagedResultsError, match=rf"p-de-n2/{name} is damaged \({why}.*\): delete its run"
        ):
            BL.point_results({**data, "ce_optimizer": "adamw"}, "p-*", configs, root=tmp_path)
        path.write_text(text)


def test_findings_in_words_name_the_papers_claims():
    found = {
        "finding_de_grows_with_n": True,
        "finding_de_grows_with_n_numbers": "mean R@1..5 (%) 80.0 / 90.0",
        "finding_arr_above_de": None,
        "finding_arr_above_de_numbers": "no ARR run on these evaluation queries",
    }
    rows = F3.findings_rows(found)
    assert [(r.claim, r.holds) for r in rows] == [
        ("Figure 3 (a): the DE's recall grows with its dimension n", True),
        ("section 5.3: ARR is significantly more powerful than the DEs (on its training queries)", None),
    ]
    assert rows[1].numbers == "no ARR run on these evaluation queries" and F3.findings_rows({}) == []


def test_arr_runs_sort_in_the_papers_row_order():
    """Tables 1 and 3: zero-shot, NTP, Fractional by α, Stepwise, Trie by β, the combined losses by β last."""
    from arrank.training.schemes import loss_label

    one = {"targets": "onehot", "combined": False, "steps": 10}
    trie = {"scheme": "indicator", "targets": "trie", "combined": False, "steps": 10}
    combined = {"scheme": "fractional", "alpha": 2.0, "targets": "trie", "combined": True, "steps": 10}
    runs = [
        {**combined, "beta": 25.0},
        {**trie, "beta": 5.0},
        {**one, "scheme": "stepwise"},
        {**one, "scheme": "fractional", "alpha": 3.0},
        {**combined, "beta": 2.0},
        {**trie, "beta": 1.0},
        {**one, "scheme": "fractional", "alpha": 1.0},
        {**one, "scheme": "indicator", "alpha": 5.0},
        {**one, "scheme": "indicator", "steps": 0},
    ]
    assert [loss_label(p) for p in sorted(runs, key=panels.variant_order)] == [
        "Zero-shot",
        "NTP",
        "Fractional α=1",
        "Fractional α=3",
        "Stepwise",
        "Trie β=1",
        "Trie β=5",
        "Combined α=2, β=2",
        "Combined α=2, β=25",
    ]


def test_panel_a_names_the_dashed_arr_curves_only_where_a_run_has_them():
    held_out_only = pd.DataFrame([{"label": "ARR NTP", "recall@1": 0.7, "train_recall@1": None}])
    assert "training queries" not in panels.panel_a_note(held_out_only)
    assert "held-out queries it never trained on" in panels.panel_a_note(held_out_only)
    assert "on a sample of its training queries" in panels.panel_a_note(held_out_only.assign(**{"train_recall@1": 0.9}))
