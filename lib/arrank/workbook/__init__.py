"""The top floor: what runs notebooks and sweeps (imported by nothing below it).

``run`` (one notebook through papermill: ``python -m arrank.workbook.run``), ``sweep`` and
``sweep_jobs`` (YAML sweeps: ``python -m arrank.workbook.sweep``), ``report`` (a sweep's runs
collected for ``arrank.results``), ``whole`` (every notebook in order: ``python -m arrank.workbook``),
``bootstrap`` (offline set-up), ``lab`` (JupyterLab), ``param_help`` (``--help``).
"""
