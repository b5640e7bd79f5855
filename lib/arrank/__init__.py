"""arrank: the shared package of the Autoregressive Ranking (ARR) / STOICaL research workbook.

The paper is arXiv 2601.05588 ("Autoregressive Ranking: Bridging the Gap Between Dual and Cross
Encoders"). The folders follow its stages and the workbook's notebooks; a stage imports only the
stages before it and the shared machinery:

    common/      every notebook   the ground floor: paths, parameters, outputs, display, findings
    theory/      notebooks 01-02  section 3 (DE capacity, the rank(E') condition)
    data/        notebooks 03-04  section 5.1 and Appendices C, D (WordNet, ESCI, prompts, own data)
    training/    notebook 05      section 4 and Appendices B, F (trie targets, STOICaL, Trainer)
    evaluation/  notebooks 05-06  section 5.1 metrics, scoring and decoding
    baselines/   notebook 07      section 5.3 and Figure 3 (dual and cross encoders)
    results/     notebooks 07-08  sections 5.2-5.3 (the paper's numbers, tables, findings, statistics)
    workbook/    every notebook   the top floor: runner, sweeps, report, set-up, JupyterLab, book

Commands: ``python -m arrank.workbook`` (the whole workbook), ``python -m arrank.workbook.run``,
``python -m arrank.workbook.sweep``, ``python -m arrank.workbook.bootstrap``, ``python -m arrank.workbook.book``.
"""

__version__ = "0.1.0"
