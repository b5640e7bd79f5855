import json

import pytest

from arrank.workbook import outputs


def test_start_run_creates_then_refuses_existing(outputs_root):
    p = {"profile": "quick", "run_name": "r1"}
    d = outputs.start_run("01_de_capacity", p)
    assert d == outputs_root / "01_de_capacity" / "r1" and d.is_dir()
    (d / "keep.txt").write_text("earlier run")
    with pytest.raises(outputs.RunExistsError, match="r1 exists"):
        outputs.start_run("01_de_capacity", p)
    assert (d / "keep.txt").read_text() == "earlier run"


def test_auto_run_name_uses_profile_and_time():
    name = outputs.resolve_run_name("auto", "paper")
    assert name.startswith("paper-") and len(name) == len("paper-20260101-000000")
    assert outputs.resolve_run_name("mine", "quick") == "mine"


def test_write_results_contract(tmp_path):
    import numpy as np

    path = outputs.write_results(tmp_path, "01_de_capacity", {"seed": 0}, {"cvr": np.float64(0.25)},
                                 {"train": 1.5})
    data = json.loads(path.read_text())
    assert list(data) == ["notebook", "params", "metrics", "timings", "env"]
    assert data["metrics"] == {"cvr": 0.25} and data["env"]["cpu_count"] >= 1
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left
    with pytest.raises(ValueError, match="flat strings"):
        outputs.write_results(tmp_path, "x", {}, {"a/b": 1}, {})


def test_timed_accumulates():
    t = {}
    with outputs.timed(t, "step"):
        pass
    with outputs.timed(t, "step"):
        pass
    assert set(t) == {"step"} and t["step"] >= 0
