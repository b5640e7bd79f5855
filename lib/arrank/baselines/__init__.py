"""Baselines (notebook 07): the dual and cross encoders of section 5.3 and Figure 3 of arXiv 2601.05588.

``lookup`` holds the lookup-table set-up both share (Appendix B: one free embedding per query
and per document), ``dual_encoder`` the inner-product DE with the weighted batch softmax,
``cross_encoder`` the MLP CE on concatenated rows, ``figure3`` their runs and evaluation with
the ARR metrics, and ``panels`` the Figure 3 panels beside notebook 05's ARR runs (the findings
checks: ``arrank.results.figure3``).
"""
