"""Data (notebooks 03 and 04): the two ranking datasets of section 5.1 of arXiv 2601.05588,
``wordnet`` and ``esci`` (with ``docids``, ``embedders``), the Appendix D ``prompts``, the common
``ranking`` table both share, one's own data in it (``custom``), and the atomic dataset ``cache``.
"""
