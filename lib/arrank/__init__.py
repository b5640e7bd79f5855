"""arrank: the shared package of the Autoregressive Ranking (ARR) / STOICaL research workbook.

The paper is arXiv 2601.05588 ("Autoregressive Ranking: Bridging the Gap Between Dual and Cross
Encoders"). The folders follow its stages and the workbook's notebooks; a stage imports only the
stages before it and the shared machinery:

    theory/      notebooks 01-02  section 3 (DE capacity, the rank(E') condition)
    data/        notebooks 03-04  section 5.1 and Appendices C, D (WordNet, ESCI, prompts)
    training/    notebook 05      section 4 and Appendices B, F (trie targets, STOICaL, Trainer)
    evaluation/  notebook 06      section 5.1 metrics, scoring and decoding
    baselines/   notebook 07      section 5.3 and Figure 3 (dual and cross encoders)
    workbook/    every notebook   parameters, outputs, runner, sweeps, report, set-up

Commands: ``python -m arrank.workbook`` (the whole workbook), ``python -m arrank.workbook.run``,
``python -m arrank.workbook.sweep``, ``python -m arrank.workbook.bootstrap``.
"""

__version__ = "0.1.0"
