"""Install WordNet 3.0 for NLTK without NLTK's downloader (its server is not always reachable).

``ensure_wordnet``: what NLTK reads already; else Debian's ``wordnet-base`` + ``wordnet-sense-index``
files copied into ``data/nltk_data`` with a ``lexnames`` made from ``lexnames(5WN)``, apt-installed
first as root; else ``WordNetMissingError`` says how. ``python -m arrank.common.wordnet_setup``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from arrank.common.paths import NLTK_DATA

DEBIAN_WORDNET = Path("/usr/share/wordnet")
DEBIAN_LEXNAMES_MAN = Path("/usr/share/man/man5/lexnames.5WN.gz")
DEBIAN_PACKAGES = ("wordnet-base", "wordnet-sense-index")
REQUIRED_FILES = ("data.noun", "index.noun", "index.sense", "noun.exc", "lexnames")
# syntactic category numbers of the original WordNet lexnames file (1 noun, 2 verb, 3 adj, 4 adv)
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetMissingError(RuntimeError):
    """WordNet 3.0 is neither readable by NLTK nor installable here."""


HOW_TO = (
    "WordNet 3.0 is not available to NLTK. Install it one of these ways, then re-run:\n"
    "  * as root: apt-get update && apt-get install wordnet-base wordnet-sense-index\n"
    "    (then `python -m arrank.common.wordnet_setup` copies it into data/nltk_data), or\n"
    "  * python -c \"import nltk; nltk.download('wordnet')\" where NLTK's server is reachable."
)


def wordnet_root() -> Path | None:
    """The folder NLTK would read WordNet from (``data/nltk_data`` first), if it holds every
    required file, else None."""
    import nltk

    if str(NLTK_DATA) not in nltk.data.path:
        nltk.data.path.insert(0, str(NLTK_DATA))
    try:
        pointer = nltk.data.find("corpora/wordnet")
    except LookupError:
        return None
    root = Path(str(pointer))  # NLTK's own download is a zip, not a folder: accepted as it is
    return root if not root.is_dir() or all((root / f).exists() for f in REQUIRED_FILES) else None


def wordnet_version() -> str | None:
    """The version of the WordNet NLTK can read (from the header of ``data.noun``, cheap), or None."""
    if (root := wordnet_root()) is None:
        return None
    if not root.is_dir():
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        return WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None).get_version()
    with open(root / "data.noun", encoding="utf-8", errors="replace") as fh:
        match = re.search(r"Word[nN]et (\d+\.\d+) Copyright", fh.read(4000))
    return match.group(1) if match else None


def lexnames_from_manpage(text: str) -> list[str]:
    """The ``lexnames`` lines NLTK expects (``NN<TAB>pos.name<TAB>category``, in file-number order)
    from the text of ``lexnames(5WN)``, whose rows read ``NN<TAB>pos.name<TAB>description``."""
    rows = re.findall(r"^(\d\d)\s+((?:adj|adv|noun|verb)\.\w+)\s", text, flags=re.MULTILINE)
    lines = [f"{num}\t{name}\t{_CATEGORY[name.split('.')[0]]}" for num, name in rows]
    numbers = [int(num) for num, _ in rows]
    if numbers != list(range(45)):
        raise ValueError(f"expected lexicographer files 00..44 in lexnames(5WN), found {len(numbers)}: {numbers[:5]}")
    return lines


def install_from_debian(source: Path = DEBIAN_WORDNET, dest_root: Path = NLTK_DATA) -> Path:
    """Copy Debian's WordNet 3.0 files into ``dest_root/corpora/wordnet`` with a generated lexnames,
    through a temporary folder renamed into place (``outputs.staged_folder``: an interrupted copy
    never looks complete)."""
    if missing := [f for f in ("data.noun", "index.noun", "index.sense") if not (source / f).exists()]:
        raise WordNetMissingError(f"{source} lacks {missing}.\n{HOW_TO}")
    if not DEBIAN_LEXNAMES_MAN.exists():
        raise WordNetMissingError(f"the lexnames manual page {DEBIAN_LEXNAMES_MAN} is missing.\n{HOW_TO}")
    from arrank.common.outputs import staged_folder

    dest = dest_root / "corpora" / "wordnet"
    with staged_folder(dest, replace=True) as tmp:
        for f in source.iterdir():
            if f.is_file():
                shutil.copy2(f, tmp / f.name)
        manual = gzip.decompress(DEBIAN_LEXNAMES_MAN.read_bytes()).decode("utf-8", errors="replace")
        (tmp / "lexnames").write_text("\n".join(lexnames_from_manpage(manual)) + "\n")
    return dest


class AptUnavailableError(RuntimeError):
    """apt-get cannot be used here (not root, or no apt-get)."""


def apt_install(packages: tuple[str, ...] = DEBIAN_PACKAGES) -> None:
    """``apt-get install`` the given Debian packages (root only); ``apt-get update`` first."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise AptUnavailableError(f"cannot apt-get install {list(packages)}: not root, or no apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["update", "-q"], ["install", "-y", "-q", "--no-install-recommends", *packages]):
        subprocess.run(["apt-get", *command], check=True, env=env, stdout=subprocess.DEVNULL)


def ensure_wordnet(allow_apt: bool = True, verbose: bool = True) -> str:
    """Make WordNet 3.0 readable by NLTK (see the module docstring); return its version."""
    say = print if verbose else lambda *args, **kwargs: None
    version = wordnet_version()
    debian = DEBIAN_WORDNET / "data.noun"
    if version is None and not debian.exists() and allow_apt:
        say("WordNet: installing Debian packages", " ".join(DEBIAN_PACKAGES), flush=True)
        try:
            apt_install()
        except (AptUnavailableError, subprocess.CalledProcessError) as err:
            raise WordNetMissingError(f"{err}\n{HOW_TO}") from None
    if version is None and debian.exists():
        dest = install_from_debian()
        say(f"WordNet: copied Debian's WordNet into {dest}", flush=True)
        version = wordnet_version()
    if version is None:
        raise WordNetMissingError(HOW_TO)
    say(f"WordNet {version} is available to NLTK", flush=True)
    return version


def load_wordnet():
    """The NLTK WordNet corpus reader, with a clear error when WordNet is missing."""
    if wordnet_version() is None:
        raise WordNetMissingError(HOW_TO + "\n(or run `make test`/`make workbook`, which do this.)")
    from nltk.corpus import wordnet

    return wordnet


def main(argv: list[str] | None = None) -> int:
    """Command line entry point: ``python -m arrank.common.wordnet_setup [--no-apt]``."""
    parser = argparse.ArgumentParser(prog="python -m arrank.common.wordnet_setup", description=__doc__.split("\n")[0])
    parser.add_argument("--no-apt", action="store_true", help="never apt-get install (as root it would)")
    args = parser.parse_args(argv)  # --help prints this and exits; an unknown flag is refused
    try:
        ensure_wordnet(allow_apt=not args.no_apt)
    except WordNetMissingError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
