"""Data (notebooks 03 and 04): the two ranking datasets of section 5.1 of arXiv 2601.05588.

``wordnet`` builds the WordNet hypernym ranking (Appendix C), ``esci`` the Amazon shopping-query
ranking with ``docids`` (OMP docIDs of section 5.1) and ``embedders`` (the retrieval stage),
``prompts`` holds Appendix D's augmented-query templates, ``ranking`` the one table view both
datasets share for training and evaluation, and ``cache`` the atomic dataset cache.
"""
