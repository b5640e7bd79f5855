"""arrank: the shared package of the Autoregressive Ranking (ARR) / STOICaL research workbook.

The paper is ``shared/paper/autoregressive_ranking.tex`` (arXiv 2601.05588). Modules are named after
its concepts: ``theory`` (section 3), ``wordnet`` set-up, ``params`` / ``outputs`` / ``run``
(the notebook contracts of DESIGN.md). Notebooks stay thin and call these functions.
"""

__version__ = "0.1.0"
