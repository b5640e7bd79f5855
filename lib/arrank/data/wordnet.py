"""WordNet 3.0 as the paper's first ranking dataset (section 5.1, Appendix C and D.1).

docIDs are synset names such as ``even-toed_ungulate.n.01``. Everything here is deterministic:
NLTK hands synsets back in orders that can depend on PYTHONHASHSEED, so results are sorted.
"""

from __future__ import annotations

from arrank.wordnet_setup import load_wordnet


def noun_synset_names() -> list[str]:
    """The names of all noun synsets of WordNet 3.0 (82,115), sorted."""
    wn = load_wordnet()
    return sorted(s.name() for s in wn.all_synsets("n"))
