"""`make lab` serves notebooks/*.py as notebooks: a real Jupyter server on a loopback port,
asked through its contents REST API (the jupytext contents manager is what makes this work)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from arrank.workbook import paths

TOKEN = "arrank-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={paths.ROOT}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            _get(f"{base}/api/status")
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"jupyter server exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("jupyter server did not answer within 60 s")
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_py_notebook_is_served_as_a_notebook(server):
    model = _get(f"{server}/api/contents/notebooks/01_de_capacity.py?type=notebook&content=1")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    assert cells[0]["cell_type"] == "markdown" and cells[0]["source"].startswith("# 01 ")
    params_cells = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    assert len(params_cells) == 1 and 'profile = "quick"' in params_cells[0]["source"]
    assert model["content"]["metadata"]["kernelspec"]["name"] == "python3"
