"""Evaluation (notebooks 05 and 06): the metrics and decoding of section 5.1 of arXiv 2601.05588.

``scoring`` computes log p(d | q) of candidate docIDs with a shared prompt, ``decoding`` greedy
and trie-constrained beam search, ``metrics`` CVR, nDCG and R@k per query, ``evaluate`` the
held-out evaluation of a run beside the random floor, ``budgets`` that evaluation at several steps
of one training run, ``trec`` a run as TREC run and qrels files, and ``plots`` its figures.
"""
