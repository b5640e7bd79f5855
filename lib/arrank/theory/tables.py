"""The experiments of notebooks 01 and 02 as tables (pandas DataFrames) built from ``arrank.theory``.

Each function is one table of a notebook; the notebooks only call them, print and plot.
Random matrices are Gaussian and seeded, so every table is reproducible.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from arrank import theory
from arrank.common.findings import Finding, finding


def closed_form_table(k_max: int) -> pd.DataFrame:
    """skala_count(n, k) for 2 <= k <= k_max, 1 <= n <= k-1, beside k! (Proposition 3.1)."""
    rows = [(k, n, theory.skala_count(n, k), math.factorial(k)) for k in range(2, k_max + 1) for n in range(1, k)]
    return pd.DataFrame(rows, columns=["k", "n", "skala_count", "k_factorial"])


def exact_distance_counts(k_max: int, site_sets: int, seed: int) -> pd.DataFrame:
    """Exact LP counts of distance permutations of random Gaussian sites, for every
    2 <= k <= k_max and 1 <= n <= k-1, beside the closed form (``site_sets`` draws each)."""
    rng = np.random.default_rng(seed)
    grid = [(k, n, s) for k in range(2, k_max + 1) for n in range(1, k) for s in range(site_sets)]
    rows = []
    for k, n, s in tqdm(grid, desc="exact distance-permutation counts"):
        sites = rng.standard_normal((k, n))
        start = time.perf_counter()
        exact = theory.count_distance_permutations(sites)
        rows.append((k, n, s, exact, theory.skala_count(n, k), round(time.perf_counter() - start, 3)))
    return pd.DataFrame(rows, columns=["k", "n", "site_set", "exact", "closed_form", "seconds"])


def monte_carlo_curve(k: int, n: int, max_queries: int, seed: int, points: int = 12) -> pd.DataFrame:
    """Distinct permutations seen from growing numbers of random query points (one site set),
    beside the exact LP count and the closed form: the sampled count approaches, never exceeds."""
    sites = np.random.default_rng(seed).standard_normal((k, n))
    exact = theory.count_distance_permutations(sites)
    sizes = np.unique(np.geomspace(10, max_queries, points).astype(int))
    rows = [
        (int(q), theory.monte_carlo_distance_permutations(sites, int(q), seed), exact, theory.skala_count(n, k))
        for q in tqdm(sizes, desc=f"Monte-Carlo k={k}, n={n}")
    ]
    return pd.DataFrame(rows, columns=["queries", "monte_carlo", "exact", "closed_form"])


def dimension_bound_table(k_max: int, points: int = 60) -> pd.DataFrame:
    """For k on a log grid up to k_max: the paper's bound ln(k!)/(2 ln k) under which no n-dim DE
    solves the complete ranking task, and the exact smallest n at which skala_count(n, k) = k!."""
    ks = np.unique(np.geomspace(2, k_max, points).astype(int))
    rows = [(int(k), theory.paper_dimension_bound(int(k)), theory.exact_min_dimension(int(k))) for k in ks]
    return pd.DataFrame(rows, columns=["k", "paper_bound", "exact_min_dimension"])


def inner_product_counts(k_max: int, site_sets: int, seed: int) -> pd.DataFrame:
    """Exact number of orderings of <q, d_i> over q in R^n for random documents d_i (the score
    of the paper's experiments), beside the Euclidean closed form, for 1 <= n <= k."""
    rng = np.random.default_rng(seed)
    grid = [(k, n, s) for k in range(2, k_max + 1) for n in range(1, k + 1) for s in range(site_sets)]
    rows = []
    for k, n, s in tqdm(grid, desc="exact inner-product orderings"):
        count = theory.count_token_permutations(rng.standard_normal((k, n)))
        rows.append(
            (k, n, s, count, theory.observed_inner_product_count(n, k), theory.skala_count(n, k), math.factorial(k))
        )
    return pd.DataFrame(
        rows,
        columns=["k", "n", "site_set", "inner_product", "observed_formula", "euclidean_closed_form", "k_factorial"],
    )


def token_permutation_table(v_max: int, seed: int) -> pd.DataFrame:
    """For random E (|V| x n), 2 <= |V| <= v_max and 1 <= n <= |V|: rank(E') and the exact
    number of realisable orderings of E phi (Propositions 3.2 / 3.3: all |V|! iff rank(E') = |V|)."""
    rng = np.random.default_rng(seed)
    grid = [(v, n) for v in range(2, v_max + 1) for n in range(1, v + 1)]
    rows = []
    for v, n in tqdm(grid, desc="token orderings"):
        E = rng.standard_normal((v, n))
        count, rank = theory.count_token_permutations(E), theory.augmented_rank(E)
        rows.append((v, n, rank, count, math.factorial(v), count == math.factorial(v), rank == v))
    return pd.DataFrame(
        rows, columns=["V", "n", "rank_E_prime", "orderings", "V_factorial", "all_orderings", "full_rank"]
    )


def distribution_fit_table(v_max: int, n_targets: int, seed: int) -> pd.DataFrame:
    """Max error |softmax(E phi) - p| for random target distributions p, random E with
    rank(E') = |V| (n = |V| - 1) and the affine counterexample (rank(E') < |V| although n >= |V|)."""
    rng = np.random.default_rng(seed)
    cases = [(f"random E, |V|={v}, n={v - 1}", rng.standard_normal((v, v - 1))) for v in range(2, v_max + 1)]
    cases.append(("affine counterexample, |V|=4, n=4", theory.affine_counterexample(4)))
    rows = []
    for label, E in cases:
        v = E.shape[0]
        errors = [theory.solve_phi_for_distribution(E, rng.dirichlet(np.ones(v)))[1] for _ in range(n_targets)]
        rank = theory.augmented_rank(E)
        spread = float(np.max(errors)), float(np.median(errors)), float(np.min(errors))
        rows.append((label, v, E.shape[1], rank, rank == v, n_targets, *spread))
    return pd.DataFrame(
        rows,
        columns=["case", "V", "n", "rank_E_prime", "full_rank", "targets", "max_error", "median_error", "min_error"],
    )


def docid_rank_table(E: np.ndarray, tokenizer, docid_sets: dict[str, list[str]]) -> pd.DataFrame:
    """The paper's remark in practice (section 3.2): for each set of docIDs, |V_docids| (the
    distinct tokens they use, EOS included), the model dimension n and rank(E'_docids)."""
    info = {label: theory.docid_token_rank(E, theory.docid_token_ids(tokenizer, d)) for label, d in docid_sets.items()}
    keys = ["n_docid_tokens", "n", "rank_e_prime", "full_rank"]
    rows = [(label, len(docid_sets[label]), *(i[k] for k in keys)) for label, i in info.items()]
    return pd.DataFrame(rows, columns=["docids", "count", "V_docids", "n", "rank_E_prime", "full_rank"])


def docid_rank_metrics(frame: pd.DataFrame) -> dict[str, int]:
    """The rows of :func:`docid_rank_table` (with a ``model`` column) as flat results.json metrics:
    ``<model>_<wordnet|numeric>_{v_docids,n,rank_e_prime}``, the model named by its first word
    (``tiny``, ``smollm2-135m``, ...)."""
    out = {}
    for row in frame.itertuples(index=False):
        model = str(row.model).split()[0].replace("-", "_").replace("/", "_").replace(".", "_")
        kind = "wordnet" if str(row.docids).startswith("WordNet") else "numeric"
        values = {"v_docids": row.V_docids, "n": row.n, "rank_e_prime": row.rank_E_prime}
        out |= {f"{model}_{kind}_{name}": int(v) for name, v in values.items()}
    return out


def capacity_findings(m: dict, k_top: int) -> list[Finding]:
    """Notebook 01's results.json metrics ``m`` against section 3.1 (Proposition 3.1), in words:
    ``arrank.common.findings.Finding`` rows; ``k_top`` is the largest k of the bound table."""
    exact, bound = m[f"exact_min_dimension_k{k_top}"], m[f"paper_bound_k{k_top}"]
    return [
        finding(
            "Skala's closed form counts the distance permutations of k sites in general position "
            "(what Proposition 3.1 rests on)",
            m["exact_equals_closed_form"] == 1.0 and m["max_exact_over_closed_form"] == 1.0,
            f"exact LP count = closed form in {m['exact_equals_closed_form']:.0%} of the cases",
        ),
        finding(
            "sampling query points finds no more rankings than that count",
            m["max_monte_carlo_over_exact"] <= 1.0,
            f"largest sampled / exact = {m['max_monte_carlo_over_exact']:.3f}",
        ),
        finding(
            "Proposition 3.1: a DE needs a dimension growing linearly with k to produce every ranking "
            "(none below ln k!/(2 ln k))",
            exact >= bound,
            f"k = {k_top}: the paper's bound {bound:.1f}; the exact smallest n from the closed form is {exact} = k - 1",
        ),
        finding(
            "the inner-product score of the experiments behaves alike: all k! orderings only from n = k - 1",
            m["inner_product_all_orderings_at_n_k_minus_1"] and m["inner_product_fewer_below_k_minus_1"],
            "exact LP counts for random documents",
        ),
    ]


def rank_condition_findings(m: dict) -> list[Finding]:
    """Notebook 02's results.json metrics ``m`` against section 3.2 (the rank(E') propositions and
    the remark on real tokenizers), in words: ``arrank.common.findings.Finding`` rows."""
    rows = [
        finding(
            "Arbitrary Permutations over Tokens: all |V|! orderings of the logits exactly when rank(E') = |V|",
            m["rank_rule_holds"],
            "exact LP counts, random E, every |V| and n of this run",
        ),
        finding(
            "the condition is rank(E'), not n >= |V|: the affine counterexample misses an ordering",
            m["counterexample_rank_e_prime"] == 3 and not m["counterexample_order_realisable"],
            f"n = |V| = 4, rank(E') = {m['counterexample_rank_e_prime']}, "
            f"{m['counterexample_orderings']} of 24 orderings realisable",
        ),
        finding(
            "Arbitrary Distributions over Tokens: any strictly positive target is reached when rank(E') = |V|",
            m["full_rank_max_distribution_error"] < 1e-6 < m["counterexample_adversarial_error"],
            f"largest error {m['full_rank_max_distribution_error']:.1e} at full rank, "
            f"{m['counterexample_adversarial_error']:.3f} for the counterexample's target",
        ),
        finding(
            "Arbitrary Distributions over Sequences: the chain rule reaches any distribution over docIDs",
            m["sequence_max_error"] < 1e-6,
            f"largest error {m['sequence_max_error']:.1e}; a DE of the same dimension realises a fraction "
            f"10^{m['de_log10_fraction_of_rankings']:.1f} of the rankings",
        ),
    ]
    for key in sorted(k for k in m if k.endswith("_wordnet_rank_e_prime")):
        model = key.removesuffix("_wordnet_rank_e_prime")
        v = m[f"{model}_wordnet_v_docids"]
        rows.append(
            finding(
                f"the paper's remark on real models: WordNet's docID tokens outnumber n + 1, so "
                f"rank(E') < |V_docids| ({model})",
                m[key] < v,
                f"|V_docids| = {v:,}, rank(E') = {m[key]} (n = {m[f'{model}_wordnet_n']}); numeric docIDs: "
                f"|V_docids| = {m.get(f'{model}_numeric_v_docids')}, rank {m.get(f'{model}_numeric_rank_e_prime')}",
            )
        )
    return rows
