"""Machine set-up that pip cannot do (``make setup`` runs it; idempotent): WordNet 3.0 for NLTK
(required) and its noun hierarchy's cache (``arrank.data.wordnet.noun_parents``), a Chromium for PNG figures (else HTML only), a check of the offline pretrained models'
GGUF files, JupyterLab's settings and each notebook's local ``.ipynb`` (``arrank.workbook.lab``).
As root with apt it installs what is missing (Debian's wordnet-base, wordnet-sense-index, chromium);
otherwise it says how (data/README.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from arrank.common import wordnet_setup
from arrank.common.outputs import png_backend
from arrank.common.wordnet_setup import AptUnavailableError, apt_install
from arrank.data.wordnet import noun_cache_path, noun_parents
from arrank.workbook import lab


def ensure_chromium() -> str | None:
    """A Chromium for kaleido's PNG export: found, or apt-installed when root; else None + a note."""
    found = png_backend()
    if found is None:
        print("PNG figures: installing Debian's chromium", flush=True)
        try:
            apt_install(("chromium",))
        except (AptUnavailableError, subprocess.CalledProcessError) as err:
            print(f"PNG figures: could not install chromium ({err})", file=sys.stderr)
        found = png_backend()
    print(f"PNG figures: {found or 'no Chromium (figures are saved as HTML only; install chromium)'}")
    return found


def check_gguf_models() -> bool:
    """Each offline pretrained model's GGUF file is installed and intact (size and sha256 as its
    package recorded them); it is converted into a model folder on first use (about 20 s)."""
    from arrank.common.named_models import GGUF_MODELS, gguf_file

    ok = True
    for name in GGUF_MODELS:
        try:
            path = gguf_file(name)
            print(f"Pretrained model {name}: {path.name} ({path.stat().st_size / 2**20:.0f} MiB, verified)")
        except (FileNotFoundError, ValueError) as err:
            print(f"Pretrained model {name}: {err}", file=sys.stderr)
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    """Set up WordNet and its noun cache (required), Chromium (optional), JupyterLab's settings and the notebooks'
    ``.ipynb``, and check the offline pretrained models (required: make setup installs them);
    exit 1 with instructions on failure (``--help``: what it does)."""
    argparse.ArgumentParser("python -m arrank.workbook.bootstrap", description=__doc__).parse_args(argv)
    if wordnet_setup.main([]):  # WordNet missing and not installable here: its instructions printed
        return 1
    print(f"WordNet's noun hierarchy: {len(noun_parents()):,} synsets, read from {noun_cache_path()}", flush=True)
    ensure_chromium()
    lab.main([])
    return 0 if check_gguf_models() else 1


if __name__ == "__main__":
    raise SystemExit(main())
