"""Results (notebooks 07 and 08): section 5.2's Tables 1-3 and section 5.3's Figure 3 of arXiv
2601.05588 as the workbook reproduces them.

``paper`` holds the paper's own numbers, ``tables`` lays a sweep's runs out as the paper's
tables and draws them; ``claims`` holds the paper's claims as data (``Claim``: two sides, a metric,
a threshold, a direction) and decides them, ``table1``, ``figure3`` and ``curve`` (the training budget)
list theirs and check them on their runs, ``chosen`` checks the budget's claims at each method's
budget chosen on validation queries, ``reproduction`` makes docs/reproduction.md of them;
``reading`` reads one training run against its paper row. Every check returns
``common.findings.Finding``, decided by ``statistics`` (paired bootstrap intervals of per-query
differences) where the runs saved their per-query metrics.
"""
