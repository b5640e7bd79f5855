"""The two ranking datasets of the paper's section 5.1 (WordNet hypernyms, ESCI shopping queries)."""
