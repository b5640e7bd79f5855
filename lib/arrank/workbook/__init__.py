"""The top floor: what runs notebooks and sweeps (imported by nothing below it; DEVELOPERS.md):
``run`` (one notebook), ``sweep`` with its executors ``sweep_jobs``, ``report`` (a sweep's runs
collected), ``whole`` (the whole workbook), ``bootstrap`` (set-up), ``lab`` (JupyterLab) and
``book`` (the static site)."""
