"""Theory (notebooks 01 and 02): section 3, "The Capacity for Ranking", of arXiv 2601.05588.

``capacity`` is section 3.1 (Proposition 3.1, DE Insufficiency for Complete Ranking: a dual
encoder of dimension n realises at most Skala's count of the k! rankings), ``rank_condition``
section 3.2 (Proposition 3.2, Arbitrary Distributions over Tokens; Corollary 3.1, Arbitrary
Distributions over Sequences; Proposition 3.3, Arbitrary Permutations over Tokens: all orderings
iff rank(E') = |V|; with one shared theorem counter the last two would read Corollary 3.3 and
Proposition 3.4), ``orderings`` the exact LP enumeration both share, ``tables`` the notebooks'
experiments. The proofs are in Appendix A. The public functions are importable from here.
"""

from arrank.theory.capacity import (
    count_distance_permutations,
    exact_min_dimension,
    log10_de_fraction_realisable,
    monte_carlo_distance_permutations,
    observed_inner_product_count,
    paper_dimension_bound,
    realisable_distance_permutations,
    skala_count,
)
from arrank.theory.rank_condition import (
    affine_counterexample,
    augmented_rank,
    count_token_permutations,
    docid_token_ids,
    docid_token_rank,
    null_vector_h,
    realisable_token_permutations,
    sequence_distribution_fit,
    solve_phi_for_distribution,
    unrealisable_permutation,
)
