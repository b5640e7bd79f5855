"""The reading-group book: the executed workbook as a static website (``make book``).

``build`` assembles the site under ``outputs/book/`` with Sphinx + MyST-NB + sphinx-book-theme
from the notebooks ``make workbook`` executed (it never executes a notebook itself);
``executed`` prepares an executed notebook for a static page (plotly figures as HTML fragments,
progress bars as their final text); ``pages`` writes the generated pages (the results, from the
run's outputs); ``site/`` holds the hand-written pages and the Sphinx configuration.
"""
