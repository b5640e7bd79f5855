"""The ground floor: pieces every stage and the runner share, importing no other part of arrank.

``paths`` (where things live), ``params`` (notebook parameters: validators, specs, profiles),
``outputs`` (run folders, atomic writes, results.json, figures and tables), ``display`` (how
numbers and figures are shown), ``findings`` (the ``Finding`` every check returns), ``processes``
(torchrun processes and threads), ``wordnet_setup`` (WordNet 3.0 for NLTK), ``named_models``
(the model names a run accepts).
"""
