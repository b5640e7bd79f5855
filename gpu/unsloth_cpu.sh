#!/usr/bin/env bash
# Unsloth 2026.10.9 on a CPU machine, in a throw-away virtual environment of its own (never the
# workbook's): a check of the backend="unsloth" code path through Unsloth's CPU fallback
# (UNSLOTH_FORCE_CPU=1), not a speed route. docs/gpu.md says why each step is there:
#   - unsloth and unsloth_zoo go in with --no-deps: both ask certifi>=2026.10.19, which the package
#     index does not hold (newest 2026.10.18); their other requirements are installed beside them;
#   - torchvision is removed: PyPI's torchvision 0.28.0 is built against the CUDA torch, and with
#     the CPU torch 2.13.0 its operators do not load, which breaks transformers' Trainer import.
# Usage: gpu/unsloth_cpu.sh VENV   (then: UNSLOTH_FORCE_CPU=1 PYTHONPATH=lib VENV/bin/python -m pytest tests/training/test_unsloth_cpu.py)
set -euo pipefail
VENV=${1:?usage: gpu/unsloth_cpu.sh VENV_PATH (a new folder)}
if [ -e "$VENV" ]; then echo "error: $VENV exists; give a new path (nothing is overwritten)" >&2; exit 2; fi
cd "$(dirname "$0")/.."
python3 -m venv "$VENV"
P="$VENV/bin/python"
"$P" -m pip install -q torch==2.13.0
printf 'torch==2.13.0\ntransformers==5.17.0\ntrl==1.15.0\n' > "$VENV/constraints.txt"
"$P" -m pip install -q --no-deps unsloth==2026.10.9 unsloth_zoo==2026.10.9
"$P" - > "$VENV/unsloth-requirements.txt" <<'PY'
import importlib.metadata as md
from pip._vendor.packaging.requirements import Requirement
skip = {"certifi", "torchvision", "unsloth-zoo", "unsloth_zoo"}
found = {}
for dist in ("unsloth", "unsloth_zoo"):
    for line in md.requires(dist) or []:
        req = Requirement(line)
        if (req.marker is None or req.marker.evaluate({"extra": ""})) and req.name.lower() not in skip:
            found.setdefault(req.name.lower(), str(req))
print("\n".join(sorted(found.values())))
PY
grep -E '^(pandas|pyarrow|nltk|scipy|pytest|PyYAML|gguf|safetensors|tokenizers|peft|accelerate|transformers|trl)==' \
  requirements.txt >> "$VENV/unsloth-requirements.txt"
"$P" -m pip install -q -r "$VENV/unsloth-requirements.txt" -c "$VENV/constraints.txt"
"$P" -m pip uninstall -q -y torchvision 2>/dev/null || true
UNSLOTH_FORCE_CPU=1 OMP_NUM_THREADS=1 "$P" -c "import unsloth; print('unsloth', unsloth.__version__, 'imports on this CPU')"
