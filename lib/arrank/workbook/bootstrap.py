"""Machine set-up that pip cannot do: WordNet 3.0 for NLTK and a Chromium for PNG figures.

``python -m arrank.workbook.bootstrap`` is called by ``make test`` and ``make workbook`` after the virtual
environment is installed. It is idempotent: when both are present it returns in well under a second.
Run as root with apt it installs what is missing (Debian's wordnet-base, wordnet-sense-index,
chromium); otherwise it says how, and fails only for WordNet (PNG export degrades to HTML only).
"""

from __future__ import annotations

import subprocess
import sys

from arrank.workbook.outputs import png_backend
from arrank.workbook.wordnet_setup import AptUnavailableError, WordNetMissingError, apt_install, ensure_wordnet


def ensure_chromium(verbose: bool = True) -> str | None:
    """A Chromium for kaleido's PNG export: found, or apt-installed when root; else None + a note."""
    found = png_backend()
    if found is None:
        if verbose:
            print("PNG figures: installing Debian's chromium", flush=True)
        try:
            apt_install(("chromium",))
        except (AptUnavailableError, subprocess.CalledProcessError) as err:
            print(f"PNG figures: could not install chromium ({err})", file=sys.stderr)
        found = png_backend()
    if verbose:
        print(f"PNG figures: {found or 'no Chromium (figures are saved as HTML only; install chromium)'}")
    return found


def main() -> int:
    """Set up WordNet (required) and Chromium (optional); exit 1 with instructions on failure."""
    try:
        ensure_wordnet()
    except WordNetMissingError as err:
        print(err, file=sys.stderr)
        return 1
    ensure_chromium()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
