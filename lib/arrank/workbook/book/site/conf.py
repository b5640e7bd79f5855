# Sphinx configuration of the reading-group book (copied into outputs/book/src/ by
# arrank.workbook.book.build). The notebooks are already executed: MyST-NB only renders them.
from importlib.metadata import distribution
from pathlib import Path

import plotly

project = "Autoregressive Ranking: the workbook"
author = "the workbook's authors"
copyright = "the workbook's authors; the paper: arXiv 2601.05588"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

nb_execution_mode = "off"  # never execute: the pages show the workbook's own run
nb_ipywidgets_js = {}  # no widget JavaScript (from a CDN): progress bars are text here
nb_merge_streams = True
nb_mime_priority_overrides = [("html", "application/vnd.plotly.v1+json", None)]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "html_image"]
myst_heading_anchors = 3
myst_dmath_double_inline = True  # $$...$$ inside a paragraph, as the notebooks write it (JupyterLab reads it so)

html_theme = "sphinx_book_theme"
html_title = "Autoregressive Ranking: the workbook"
# the site loads nothing from outside itself: plotly.min.js from the installed plotly, and MathJax 3
# from the PyPI package sphinx-mathjax-offline (TeX to SVG in one file, no web fonts, no CDN)
html_static_path = [
    str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"),
    str(distribution("sphinx-mathjax-offline").locate_file("sphinx-mathjax-offline/static/mathjax/tex-svg-full.js")),
]
html_js_files = ["plotly.min.js"]  # one copy of plotly.js for every figure, in each page's head
mathjax_path = "tex-svg-full.js"
html_extra_path = ["extra"]  # each notebook as it ran, beside its page (the file its download link names)
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "use_download_button": False,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    "navbar_persistent": [],  # no second search box in a header bar (the sidebar has one)
}
html_context = {"default_mode": "light"}  # else the theme logs an error on a first visit (empty stored mode)
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]
