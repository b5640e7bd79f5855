"""gpu/kit.py: the repository's travelling size, the wheels' closure (real pip against a local
folder of wheels: no network), files cut into pieces and joined again, the calls under the
limit, and the staging of a call as the GPU machine runs it (into temporary folders)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from arrank.common import paths

pytestmark = pytest.mark.slow  # runs pip over a folder of built wheels

spec = importlib.util.spec_from_file_location("gpu_kit", paths.ROOT / "gpu" / "kit.py")
kit = importlib.util.module_from_spec(spec)
sys.modules["gpu_kit"] = kit  # dataclasses look their module up there
spec.loader.exec_module(kit)


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    requires: list[str] = (),
    tag: str = "py3-none-any",
    module: str | None = None,
) -> Path:
    """A real (tiny) wheel: METADATA with Requires-Dist lines, WHEEL, RECORD and one module."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-{tag}.whl"
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
        name,
        version,
        "".join(f"Requires-Dist: {r}\n" for r in requires),
    )
    files = {
        f"{dist}.dist-info/METADATA": meta,
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: %s\n" % tag,
        f"{module or name.replace('-', '_')}.py": f"VERSION = {version!r}\n",
    }
    record = (
        "".join(
            f"{n},sha256={__import__('base64').urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b'=').decode()},{len(c.encode())}\n"
            for n, c in files.items()
        )
        + f"{dist}.dist-info/RECORD,,\n"
    )
    with zipfile.ZipFile(path, "w") as zf:
        for n, c in files.items():
            zf.writestr(n, c)
        zf.writestr(f"{dist}.dist-info/RECORD", record)
    return path


def test_travel_bytes_counts_tracked_and_untracked_files_but_not_ignored_ones(tmp_path):
    with pytest.raises(SystemExit, match="is not a git checkout"):
        kit.travel_bytes(tmp_path)
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / ".gitignore").write_text("big/\n")  # 5 bytes
    (tmp_path / "tracked.txt").write_bytes(b"x" * 100)
    run("add", ".gitignore", "tracked.txt")
    (tmp_path / "untracked.txt").write_bytes(b"y" * 30)
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "wheel.whl").write_bytes(b"z" * 5000)  # ignored: does not travel
    assert kit.travel_bytes(tmp_path) == 5 + 100 + 30


def _python312():
    """A Python 3.12 with pip on this machine (the resolver's interpreter, ``kit.resolver_python``), or None."""
    import glob
    import os

    for candidate in [
        os.environ.get("GPU_KIT_PYTHON"),
        *sorted(glob.glob("/root/.pyenv/versions/3.12*/bin/python3.12")),
    ]:
        if candidate and subprocess.run([candidate, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return candidate
    return None


def test_markers_are_evaluated_for_cpython_312_on_linux(tmp_path, monkeypatch):
    """pip evaluates requirement markers for the interpreter it runs under: the kit runs its
    resolver under a Python 3.12 (the machine's), and says so when it has none."""
    python = _python312()
    if python is None:
        pytest.skip("no Python 3.12 with pip here (set GPU_KIT_PYTHON)")
    monkeypatch.setenv("GPU_KIT_PYTHON", python)
    index = tmp_path / "index"
    requires = ['win-only; sys_platform == "win32"', 'old-py; python_version < "3.12"']
    requires += ['new-py; python_version >= "3.12"', 'extra-only; extra == "studio"']
    make_wheel(index, "alpha", "1.0", requires)
    make_wheel(index, "new-py", "1.0")
    got = kit.closure(["alpha"], tmp_path / "dl", ("--no-index", "--find-links", str(index)), force=())
    assert sorted(got.files) == ["alpha", "new-py"]
    assert kit.resolver_python() == (python, "")
    monkeypatch.setenv("GPU_KIT_PYTHON", sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    if sys.version_info[:2] != (3, 12):
        assert kit.resolver_python()[1].startswith("no Python 3.12 with pip found (set GPU_KIT_PYTHON)")


def test_closure_downloads_what_the_image_lacks_once_and_pip_refuses_conflicts(tmp_path):
    index = tmp_path / "index"
    waived = kit.WAIVED["certifi"][0]
    make_wheel(index, "alpha", "1.0", ["beta>=1", "numpy>=1", f"certifi>={waived}", "gamma<2"])
    make_wheel(index, "beta", "1.0", ["gamma"])
    make_wheel(index, "beta", "2.0", ["gamma"])  # the newest that meets beta>=1 is taken
    make_wheel(index, "gamma", "1.5")
    make_wheel(index, "gamma", "3.0")
    args = ("--no-index", "--find-links", str(index))
    got = kit.closure(["alpha==1.0"], tmp_path / "dl", args, image=frozenset({"numpy", "certifi"}), force=())
    assert sorted(p.name for p in got.files.values()) == [
        "alpha-1.0-py3-none-any.whl",
        "beta-2.0-py3-none-any.whl",
        "gamma-1.5-py3-none-any.whl",
    ]
    assert got.left["numpy"] == "held by the image (2.5.2)" and got.left["certifi"].startswith("waived")
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "dl").glob("*.whl")}
    again = kit.closure(["alpha==1.0"], tmp_path / "dl", args, image=frozenset({"numpy", "certifi"}), force=())
    assert again.files == got.files and before == {
        p.name: p.stat().st_mtime_ns for p in (tmp_path / "dl").glob("*.whl")
    }
    make_wheel(index, "delta", "1.0", ["gamma>=2"])  # with alpha's gamma<2: no version of gamma meets both
    with pytest.raises(SystemExit, match=r"that install alpha==1.0 delta: .*conflicting dependencies"):
        kit.closure(["alpha==1.0", "delta"], tmp_path / "dl", args, image=frozenset({"numpy"}), force=())
    make_wheel(index, "epsilon", "1.0", ["torch<2"])  # the image's torch is 2.11.0
    with pytest.raises(
        SystemExit, match=r"conflicting dependencies.*The conflict is caused by: epsilon 1.0 depends on torch<2"
    ):
        kit.closure(["epsilon"], tmp_path / "dl", args, image=frozenset({"torch"}), force=())
    with pytest.raises(SystemExit, match="that install zeta==1: ERROR: Could not find a version .* zeta==1"):
        kit.closure(["zeta==1"], tmp_path / "dl", args, force=())


def test_split_and_join_give_the_same_bytes_and_refuse_corrupt_pieces(tmp_path):
    data = bytes(range(256)) * 13 + b"tail"  # 3332 bytes
    (tmp_path / "model.gguf").write_bytes(data)
    manifest = kit.split_file(tmp_path / "model.gguf", tmp_path / "pieces", 1000)
    assert [p["bytes"] for p in manifest["pieces"]] == [1000, 1000, 1000, 332]
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest()
    assert kit.split_file(tmp_path / "model.gguf", tmp_path / "pieces", 1000) == manifest  # kept as it is
    partial = tmp_path / "partial"
    partial.mkdir()
    for p in manifest["pieces"][:3]:
        (partial / p["file"]).write_bytes((tmp_path / "pieces" / p["file"]).read_bytes())
    assert kit.join_pieces(manifest, partial, tmp_path / "out") is None  # one piece missing
    joined = kit.join_pieces(manifest, tmp_path / "pieces", tmp_path / "out")
    assert joined.read_bytes() == data
    (tmp_path / "pieces" / manifest["pieces"][1]["file"]).write_bytes(b"\0" * 1000)  # a corrupt piece
    with pytest.raises(SystemExit, match="do not match the sha256"):
        kit.join_pieces(manifest, tmp_path / "pieces", tmp_path / "out2")
    assert not (tmp_path / "out2" / "model.gguf").exists() and list((tmp_path / "out2").iterdir()) == []


def test_calls_stay_under_the_budget_and_an_oversized_file_is_named(tmp_path):
    files = []
    for name, size in (("a", 40), ("b", 30), ("c", 25), ("d", 50), ("e", 5)):
        (tmp_path / name).write_bytes(b"x" * size)
        files.append(tmp_path / name)
    calls = kit.plan_calls(files, 60)
    assert [[f.name for f in c.files] for c in calls] == [["a", "e"], ["b", "c"], ["d"]]  # first fit, in order
    assert all(c.carried_bytes <= 60 for c in calls)
    with pytest.raises(SystemExit, match="d is 0.0 MiB, more than the 0.0 MiB a call can carry"):
        kit.plan_calls(files, 45)
    long = kit.Call(1, [], "x" * 2001)
    assert kit.command_problems([long]) == ["call 1: its command has 2001 characters > 2000"]


def test_stage_installs_wheels_unpacks_data_joins_pieces_and_knows_a_fresh_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(kit, "SITE", str(tmp_path / "site"))
    monkeypatch.setattr(kit, "KIT", str(tmp_path / "kit"))
    monkeypatch.setattr(kit, "ROOT", tmp_path / "repo")
    (tmp_path / "repo" / "data" / "nltk_data").mkdir(parents=True)
    (tmp_path / "repo" / "data" / "nltk_data" / "lexnames").write_text("noun.Tops\n")
    (tmp_path / "model.bin").write_bytes(b"m" * 2500)
    calls = tmp_path / "calls"
    manifest = kit.split_file(tmp_path / "model.bin", tmp_path / "pieces", 1000)
    one, two = calls / "call1", calls / "call2"
    make_wheel(one, "kitprobe", "1.0", ["absent-dependency"])  # --no-deps: installs alone
    kit.pack_tree(tmp_path / "repo" / "data" / "nltk_data", one / "nltk_data.tar.gz")
    (tmp_path / "repo" / "data" / "nltk_data" / "lexnames").unlink()  # the machine's copy lacks it
    two.mkdir(parents=True)
    for folder, pieces in ((one, manifest["pieces"][:2]), (two, manifest["pieces"][2:])):
        for p in pieces:
            (folder / p["file"]).write_bytes((tmp_path / "pieces" / p["file"]).read_bytes())
        (folder / "plan.json").write_text(json.dumps({"calls": 2}))
    (two / "model.bin.pieces.json").write_text(json.dumps(manifest))
    with pytest.raises(SystemExit, match=r"calls \[1\] were not staged on this machine"):
        kit.stage(two)
    kit.stage(one)
    assert (tmp_path / "site" / "kitprobe.py").read_text() == "VERSION = '1.0'\n"
    assert (tmp_path / "repo" / "data" / "nltk_data" / "lexnames").read_text() == "noun.Tops\n"
    assert not (tmp_path / "kit" / "model.bin").exists()  # one piece still to come
    kit.stage(two)
    assert (tmp_path / "kit" / "model.bin").read_bytes() == b"m" * 2500
    assert json.loads((tmp_path / "kit" / "staged.json").read_text()) == {"calls": [1, 2]}


def test_the_gpu_curve_trains_one_epoch_at_the_papers_batch_on_2000_queries(tmp_path):
    """gpu/pretrained_curve_gpu.yaml (made for the GPU machine, where SmolLM2 is the GGUF file the kit
    joins under /tmp/kit) is valid with that path pointing at the package's GGUF: NTP and fractional
    alpha 2 x 3 seeds, 64 items a step, at least one epoch over the training (query, docID) pairs,
    2,000 held-out queries scored at five budgets, several queries a pass, a constant rate."""
    from arrank.common.named_models import gguf_file
    from arrank.data.ranking import ranking_dataset
    from arrank.evaluation import budgets
    from arrank.workbook import sweep

    gpu = paths.ROOT / "gpu" / "pretrained_curve_gpu.yaml"
    text = gpu.read_text()
    assert f"{kit.KIT}/SmolLM2-135M-Instruct.Q4_1.gguf" in text
    here = tmp_path / gpu.name
    here.write_text(text.replace(f"{kit.KIT}/SmolLM2-135M-Instruct.Q4_1.gguf", str(gguf_file("smollm2-135m"))))
    points = [p.resolved for p in sweep.load_sweep(here).points]
    assert sorted((p["scheme"], p["seed"]) for p in points) == sorted(
        (s, seed) for s in ("indicator", "fractional") for seed in (0, 1, 2)
    )
    p = points[0]
    df = ranking_dataset("wordnet", "pretrained", p["data_seed"], p["n_eval"], None, p["subtree"], p["min_relevant"])
    pairs = budgets.training_pairs(df)
    assert (p["n_eval"], pairs, p["batch_size"] * p["grad_accum"]) == (2000, 8834, 64)
    assert 1.0 <= p["steps"] * 64 / pairs < 1.01 and p["eval_steps"][-1] == p["steps"] and len(p["eval_steps"]) == 5
    assert p["query_batch"] > 1 and p["lr_schedule"] == "constant" and p["train_queries"] == 0
    for q in _gpu_points(tmp_path, "pretrained_curve_gpu_2epochs.yaml"):  # the same runs, trained to two epochs
        assert (q["steps"], q["eval_steps"]) == (2 * p["steps"], [int(1.5 * p["steps"]), 2 * p["steps"]])
        assert _same_but(q, p, "steps", "eval_steps")
    seeds = set()
    for q in _gpu_points(tmp_path, "pretrained_curve_gpu_more_seeds.yaml"):  # three more seeds, at 1 and 1.5 epochs
        assert (q["steps"], q["eval_steps"]) == (int(1.5 * p["steps"]), [p["steps"], int(1.5 * p["steps"])])
        assert _same_but(q, p, "steps", "eval_steps") and q["seed"] in (3, 4, 5)
        seeds.add((q["scheme"], q["seed"]))
    assert len(seeds) == 6
    points = _gpu_points(tmp_path, "pretrained_curve_gpu_3epochs.yaml")  # the same seeds to three epochs
    for q in points:
        assert (q["steps"], q["eval_steps"]) == (3 * p["steps"], [2 * p["steps"], 3 * p["steps"]])
        assert _same_but(q, p, "steps", "eval_steps")
    assert {(q["scheme"], q["seed"]) for q in points} == seeds


def test_the_protocol_sweeps_train_the_committed_curves_runs_to_each_budget_with_validation_queries(tmp_path):
    """gpu/pretrained_protocol_*.yaml: the committed curve's data, training set and batch, its 2,000
    held-out queries split into 500 validation and 1,500 test queries; NTP and fractional alpha 2 x seeds
    0-2 with a cosine decay to 0.5, 1, 2, 3 and 4 epochs, a constant rate scored at 0.5, 1 and 2, and one epoch
    at learning rates 2e-4 and 1e-3 (part 1's 5e-4 beside them)."""
    curve = _gpu_points(tmp_path, "pretrained_curve_gpu.yaml")[0]
    epoch = curve["steps"]  # 139 steps of 64: one epoch
    budgets = {}
    for name in ("cosine_gpu", "cosine_gpu_half", "cosine_gpu_3epochs", "cosine_gpu_4epochs", "cosine_gpu_4epochs_seed2",
                 "constant_gpu"):  # fmt: skip
        for q in _gpu_points(tmp_path, f"pretrained_protocol_{name}.yaml"):
            assert (q["n_eval"], q["n_dev"]) == (2000, 500) and _same_but(q, curve, "steps", "eval_steps", "n_dev",
                                                                           "lr_schedule")  # fmt: skip
            budgets.setdefault(q["lr_schedule"], set()).update(
                (s, q["scheme"], q["seed"]) for s in [*q["eval_steps"], q["steps"]]
            )
    fractions = {k: sorted({s / epoch for s, _, _ in v}) for k, v in budgets.items()}
    assert fractions == {"cosine": [69 / 139, 1, 2, 3, 4], "constant": [69 / 139, 1, 2]}
    assert all(len(v) == len(fractions[k]) * 6 for k, v in budgets.items())  # both methods, three seeds each
    assert "gpu/pretrained_protocol_cosine_gpu.yaml" in kit.WORK and "SEQUENTIAL=1" in kit.work(("a", "b"), True)
    cosine = {(q["scheme"], q["seed"]): q for q in _gpu_points(tmp_path, "pretrained_protocol_cosine_gpu.yaml")}
    rates = _gpu_points(tmp_path, "pretrained_protocol_lr_gpu.yaml")  # part 1's one-epoch runs at other rates
    assert sorted({q["lr"] for q in rates} | {cosine["indicator", 0]["lr"]}) == [2e-4, 5e-4, 1e-3] and len(rates) == 12
    assert all(q["steps"] == epoch and _same_but(q, cosine[q["scheme"], q["seed"]], "lr", "steps") for q in rates)


def test_the_small_batch_gpu_curve_is_the_cpu_curve_with_three_seeds(tmp_path):
    """gpu/pretrained_curve_gpu_4items.yaml runs sweeps/pretrained_curve.yaml's points (the same data,
    batch, steps and budgets) on the GPU: only the model's path, the backend, scoring's queries a pass
    and the seeds differ."""
    from arrank.workbook import sweep

    cpu = {
        (q.resolved["scheme"], q.resolved["seed"]): q.resolved
        for q in sweep.load_sweep(paths.ROOT / "sweeps" / "pretrained_curve.yaml").points
    }
    points = _gpu_points(tmp_path, "pretrained_curve_gpu_4items.yaml")
    assert sorted((q["scheme"], q["seed"]) for q in points) == sorted(
        (s, n) for s in ("indicator", "fractional") for n in (0, 1, 2)
    )
    for q in points:
        assert _same_but(q, cpu[(q["scheme"], 0)], "model_name", "backend", "query_batch", "save_steps")
        assert q["query_batch"] == 32 and q["backend"] == "transformers"


def _gpu_points(tmp_path: Path, name: str) -> list[dict]:
    """The resolved points of the GPU sweep file ``gpu/<name>``, its model path (the GGUF the kit joins
    on the GPU machine) pointed at the package's GGUF."""
    from arrank.common.named_models import gguf_file
    from arrank.workbook import sweep

    here = tmp_path / name
    here.write_text((paths.ROOT / "gpu" / name).read_text().replace(str(kit.GGUF_LINK), str(gguf_file("smollm2-135m"))))
    return [q.resolved for q in sweep.load_sweep(here).points]


def _same_but(a: dict, b: dict, *keys: str) -> bool:
    """Whether two resolved points agree on every parameter but ``keys`` (and name, variant and seed)."""
    skip = {*keys, "run_name", "scheme", "alpha", "seed"}
    return {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


def test_the_plan_counts_the_start_every_call_and_the_release_and_refuses_over_14_minutes():
    calls = [kit.Call(n) for n in (1, 2, 3)]
    seconds = kit.expected_seconds(calls)
    assert seconds == [kit.START_S + kit.STAGE_S, kit.STAGE_S, kit.STAGE_S + kit.WORK_LIMIT_S + 20]
    assert sum(seconds) + kit.RELEASE_S <= kit.PLAN_LIMIT_S and not kit.time_problems(sum(seconds) + kit.RELEASE_S)
    assert kit.time_problems(841) == ["the plan expects 841 s of device time > 840 s (of 900 s in a session)"]
    assert f"LIMIT_S={kit.WORK_LIMIT_S} JOBS=6 timeout -k 10 {kit.WORK_LIMIT_S + 30} bash gpu/curve_call.sh" in kit.WORK
    assert "curve_call.sh a.yaml b.yaml 2>&1" in kit.work(("a.yaml", "b.yaml"))


def _results_tarball(path: Path, members: dict[str, str]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _record(**metrics) -> str:
    """A results.json of ``outputs.RESULTS_SCHEMA`` with these metrics."""
    return json.dumps({"notebook": "05_train", "params": {}, "metrics": metrics, "timings": {}, "env": {}})


EMPTY = _record()


def test_results_unpack_a_gpu_sweep_and_never_overwrite_a_run(tmp_path):
    """``kit.py results``: the runs go under outputs/ and the model path the sweep file names is linked
    to the package's GGUF; the newer tarball of the same sweep skips the runs it shares unchanged and
    replaces the sweep's status; a run here with other results, a member outside the result folders
    or a path that climbs out refuse the whole tarball, nothing written."""
    from arrank.common.named_models import gguf_file

    root, link = tmp_path / "repo", tmp_path / "kit" / "model.gguf"

    def status(call: int, *runs: str) -> str:
        return json.dumps({"updated": f"call {call}", "points": [{"run_name": r} for r in runs]})

    first = {
        "outputs/05_train/gpu-a/results.json": _record(n_queries=2, ndcg=0.5),
        "outputs/05_train/gpu-a/per_query.csv": "query,ndcg\nq1,0.4\nq2,0.6\n",
        "outputs/sweeps/table1/status.json": status(5, "gpu-a", "gpu-b"),
    }
    assert kit.unpack_results(_results_tarball(tmp_path / "call5.tgz", first), root, link) == (
        ["outputs/05_train/gpu-a"],
        [],
    )
    assert (root / "outputs/05_train/gpu-a/per_query.csv").read_text() == "query,ndcg\nq1,0.4\nq2,0.6\n"
    assert link.resolve() == gguf_file("smollm2-135m").resolve()
    newer = {
        **first,
        "outputs/05_train/gpu-b/results.json": EMPTY,
        "outputs/sweeps/table1/status.json": status(6, "gpu-b"),
    }
    assert kit.unpack_results(_results_tarball(tmp_path / "call6.tgz", newer), root, link) == (
        ["outputs/05_train/gpu-b"],
        ["outputs/05_train/gpu-a"],
    )
    assert (root / "outputs/sweeps/table1/status.json").read_text() == status(6, "gpu-b")
    other = {"outputs/05_train/gpu-a/results.json": _record(ndcg=0.7), "outputs/05_train/gpu-c/results.json": EMPTY}
    unlinked = tmp_path / "kit2" / "model.gguf"  # a session that has not linked the model yet
    with pytest.raises(
        SystemExit, match="runs exist here with other results and are never overwritten: outputs/05_train/gpu-a "
    ):
        kit.unpack_results(_results_tarball(tmp_path / "other.tgz", other), root, unlinked)
    assert (root / "outputs/05_train/gpu-a/results.json").read_text() == first["outputs/05_train/gpu-a/results.json"]
    assert not (root / "outputs/05_train/gpu-c").exists() and not unlinked.parent.exists()  # no link made either
    only = {"outputs/sweeps/table1/status.json": status(7, "gpu-x")}  # another sweep's status, none of its runs
    with pytest.raises(kit.Refused, match=r"only.tgz: holds no run under outputs/05_train/; nothing was unpacked"):
        kit.unpack_results(_results_tarball(tmp_path / "only.tgz", only), root, unlinked)
    mixed = {
        "outputs/05_train/gpu-e/results.json": EMPTY,
        "outputs/sweeps/table2/status.json": status(8, "gpu-e"),
        "outputs/sweeps/table2/logs/gpu-e.20261128-000000.log": "ok\n",
        "outputs/sweeps/table1/status.json": status(8, "gpu-x"),  # lists none of the tarball's runs
        "outputs/sweeps/table1/logs/gpu-x.20261128-000000.log": "x\n",
    }
    assert kit.unpack_results(_results_tarball(tmp_path / "mixed.tgz", mixed), root, link) == (
        ["outputs/05_train/gpu-e"],
        [],
    )
    assert (root / "outputs/sweeps/table2/status.json").read_text() == status(8, "gpu-e")
    assert (root / "outputs/sweeps/table1/status.json").read_text() == status(6, "gpu-b")  # kept
    assert not (root / "outputs/sweeps/table1/logs").exists() and not unlinked.parent.exists()
    for bad in ("README.md", "outputs/05_train/../../escape.txt", "/etc/passwd"):
        tarball = _results_tarball(tmp_path / "bad.tgz", {"outputs/05_train/gpu-d/results.json": EMPTY, bad: "x"})
        with pytest.raises(SystemExit, match="is not a plain file or folder under outputs/05_train/"):
            kit.unpack_results(tarball, root, link)
        assert not (root / "outputs/05_train/gpu-d").exists()
    with pytest.raises(SystemExit, match="no such file"):
        kit.unpack_results(tmp_path / "absent.tgz", root, link)


def test_a_damaged_or_hostile_tarball_is_refused_whole_with_rc_2(tmp_path, monkeypatch):
    """Read as untrusted input: a truncated tarball, another kind of file, a member over the size cap,
    a run without results.json, a stopped run's folder with other files, a results.json not of
    the schema, a per-query CSV that its results.json contradicts, and an outputs/sweeps that
    links outside are each refused in one line before anything is written; the command exits 2."""
    root, link = tmp_path / "repo", tmp_path / "kit" / "model.gguf"
    good = {
        "outputs/05_train/gpu-a/results.json": EMPTY,
        "outputs/05_train/.curve-gpu-b/step-0000009.csv": "q\n",
        "outputs/05_train/gpu-b.failed-20261126-061330/training_log.csv": "step\n",  # what the stopped run wrote
    }
    whole = _results_tarball(tmp_path / "whole.tgz", {**good, "outputs/sweeps/s/status.json": "{}"}).read_bytes()
    (tmp_path / "cut.tgz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "text.tgz").write_text("not a tarball")
    cases = {
        tmp_path / "cut.tgz": "not a readable tar.gz",
        tmp_path / "text.tgz": "not a readable tar.gz",
        _results_tarball(
            tmp_path / "norun.tgz", {"outputs/05_train/gpu-c/per_query.csv": "q\n"}
        ): "gpu-c has no results.json",
        _results_tarball(
            tmp_path / "odd.tgz", {**good, "outputs/05_train/.curve-gpu-b/notes.txt": "x"}
        ): "files other than a stopped run's step",
        _results_tarball(tmp_path / "bare.tgz", {**good, "outputs/05_train/gpu-a/results.json": "{}"}): (
            r"gpu-a/results.json: its 'notebook' is missing or not a string; nothing was unpacked$"
        ),
        _results_tarball(tmp_path / "nojson.tgz", {**good, "outputs/05_train/gpu-a/results.json": "{"}): (
            "gpu-a/results.json is not JSON"
        ),
        _results_tarball(
            tmp_path / "short.tgz",
            {**good, "outputs/05_train/gpu-a/results.json": _record(n_queries=2, ndcg=0.5),
             "outputs/05_train/gpu-a/per_query.csv": "query,ndcg\nq1,0.5\n"},
        ): r"gpu-a/per_query.csv is damaged \(1 rows where its run scored 2 queries\)",
        _results_tarball(
            tmp_path / "mean.tgz",
            {**good, "outputs/05_train/gpu-b.failed-20261126-061330/results.json": _record(n_queries=1, ndcg=0.5),
             "outputs/05_train/gpu-b.failed-20261126-061330/curve_per_query.csv": "step,query,ndcg\n9,q1,0.4\n"},
        ): r"gpu-b.failed-20261126-061330/curve_per_query.csv is damaged \(the mean ndcg of its rows is 0.4 where",
    }  # fmt: skip
    for tarball, expected in cases.items():
        with pytest.raises(kit.Refused, match=expected):
            kit.unpack_results(tarball, root, link)
        assert not (root / "outputs").exists()
    monkeypatch.setattr(kit, "MAX_MEMBER_BYTES", 10)
    with pytest.raises(kit.Refused, match=r"\(20 bytes\) passes the 10 bytes"):
        kit.unpack_results(
            _results_tarball(tmp_path / "big.tgz", {"outputs/05_train/gpu-a/results.json": "x" * 20}), root, link
        )
    monkeypatch.undo()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "outputs").mkdir(parents=True)
    (root / "outputs" / "sweeps").symlink_to(outside)
    with pytest.raises(kit.Refused, match=r"outside .*outputs; nothing was unpacked"):
        kit.unpack_results(tmp_path / "whole.tgz", root, link)
    assert not list(outside.iterdir()) and not (root / "outputs" / "05_train").exists()
    (root / "outputs" / "sweeps").unlink()
    runs = ["outputs/05_train/.curve-gpu-b", "outputs/05_train/gpu-a", "outputs/05_train/gpu-b.failed-20261126-061330"]
    assert kit.unpack_results(tmp_path / "whole.tgz", root, link) == (runs, [])
    assert kit.unpack_results(tmp_path / "whole.tgz", root, link) == ([], runs)  # the same tarball again: no change
    (root / runs[0] / "step-0000009.csv").write_text("other\n")
    with pytest.raises(kit.Refused, match=r"\.curve-gpu-b"):
        kit.unpack_results(tmp_path / "whole.tgz", root, link)
    done = subprocess.run(
        [sys.executable, str(paths.ROOT / "gpu" / "kit.py"), "results", str(tmp_path / "cut.tgz")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a readable tar.gz" in done.stderr
