"""The machinery every notebook shares (the workbook's contracts, not the paper's science).

``paths`` and ``params`` (parameter specs and profiles), ``outputs`` (run folders, results.json,
figures), ``run`` (one notebook through papermill: ``python -m arrank.workbook.run``), ``sweep``
(YAML sweeps: ``python -m arrank.workbook.sweep``), ``report`` (sweeps -> the paper's Tables 1-3),
``bootstrap`` and ``wordnet_setup`` (offline set-up: ``python -m arrank.workbook.bootstrap``) and
``whole`` (every notebook in order: ``python -m arrank.workbook``); ``processes`` (which of
several torchrun processes this is, and what they cannot share).
"""
