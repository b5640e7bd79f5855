"""Time the WordNet dataset of section 5.1: WordNet read (NLTK, and the noun cache), build of all nouns (both views), cache.

Usage: ``.venv/bin/python benchmarks/wordnet_build.py [--path-rule longest] [--no-root]``.
Prints the time NLTK takes to read every noun's hypernyms and the noun cache's read time, the build time of all noun queries with both training views (the
budget is 30 s), the rows of each view, the time to write and re-read the Parquet cache (in a
temporary folder), and the figures of the quick profile's animal.n.01 subtree.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from arrank.data import wordnet as W


def timed(label: str, fn, *args, **kwargs):
    """Run ``fn``, print its wall time, return its result."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    print(f"{label:<46} {time.perf_counter() - start:7.2f} s", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path-rule", default="longest", choices=W.PATH_RULES)
    parser.add_argument("--no-root", action="store_true", help="entity.n.01 is not relevant")
    args = parser.parse_args()
    options = dict(path_rule=args.path_rule, include_root=not args.no_root)

    nouns = timed("WordNet read by NLTK (every noun's hypernyms)", W.nltk_noun_parents)
    W.noun_parents.cache_clear()
    timed("the same from the noun cache (data/cache)", W.noun_parents)
    start = time.perf_counter()
    df = timed("build queries (all nouns, no cache)", W.build_wordnet_dataset, cache=False, **options)
    top1 = timed("top-1 view", W.top1_view, df)
    items = timed("per-docID view", W.per_docid_view, df)
    print(f"{'BUILD TOTAL (queries + both views)':<46} {time.perf_counter() - start:7.2f} s")
    print(
        f"noun synsets {len(nouns)}, queries {len(df)} (eval {(df['split'] == 'eval').sum()}), "
        f"top-1 view rows {len(top1)}, per-docID view rows {len(items)}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        timed("build again + write Parquet cache", W.build_wordnet_dataset, cache_dir=Path(tmp), **options)
        timed("re-read Parquet cache", W.build_wordnet_dataset, cache_dir=Path(tmp), **options)
    sub = timed(
        "build animal.n.01 subtree, min_relevant=5",
        W.build_wordnet_dataset,
        subtree="animal.n.01",
        min_relevant=5,
        n_eval=0.1,
        cache=False,
        **options,
    )
    print(f"animal.n.01 (min_relevant=5, 10% eval): queries {len(sub)}, per-docID items {len(W.per_docid_view(sub))}")
    print(W.dataset_summary(df).to_string())


if __name__ == "__main__":
    main()
