"""`make lab` serves notebooks/*.py as notebooks, and interactive use leaves git clean: a real
Jupyter server on a loopback port, asked through its REST API (the jupytext contents manager and
JupyterLab's settings API are what the browser talks to)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from arrank.common import paths
from arrank.workbook import lab

pytestmark = pytest.mark.slow  # trains a model or runs notebooks / kernels / sweeps

TOKEN = "arrank-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def _serve(tmp_path: Path, root: Path, module: str, *args: str):
    """Start ``python -m <module>`` (jupyter_server or jupyterlab) on a free port; yield its URL."""
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            *args,
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            _call(f"{base}/api/status")
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"{module} exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"{module} did not answer within 60 s")
    return proc, base


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def server(tmp_path):
    proc, base = _serve(tmp_path, paths.ROOT, "jupyter_server")
    yield base
    _stop(proc)


def test_py_notebook_is_served_as_a_notebook(server):
    model = _call(f"{server}/api/contents/notebooks/01_de_capacity.py?type=notebook&content=1")
    assert model["type"] == "notebook"
    cells = model["content"]["cells"]
    assert cells[0]["cell_type"] == "markdown" and cells[0]["source"].startswith("# 01 ")
    params_cells = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    assert len(params_cells) == 1 and 'profile: str = "quick"' in params_cells[0]["source"]
    # the kernelspec JupyterLab writes once the kernel runs: the same, so opening changes nothing
    assert model["content"]["metadata"]["kernelspec"] == lab.kernel_metadata()["kernelspec"]


def test_lab_settings_open_py_files_as_notebooks(tmp_path):
    """The settings `make setup` installs reach JupyterLab: its settings API reports the Jupytext
    Notebook as the default viewer of Python files, and the jupytext extension is served."""
    settings_dir = tmp_path / "settings"
    written = lab.install_lab_settings(settings_dir)
    assert written == settings_dir / "overrides.d" / "arrank-workbook.json"
    proc, base = _serve(
        tmp_path,
        paths.ROOT,
        "jupyterlab",
        f"--LabApp.app_settings_dir={settings_dir}",
        f"--LabApp.user_settings_dir={tmp_path / 'user'}",
        f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
    )
    try:
        plugin = _call(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
        assert plugin["schema"]["properties"]["defaultViewers"]["default"]["python"] == "Jupytext Notebook"
        news = _call(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification")
        assert news["schema"]["properties"]["fetchNews"]["default"] == "false"
        listing = _call(f"{base}/lab/api/settings")["settings"]
        assert any(s["id"].startswith("jupyterlab-jupytext") for s in listing)  # the viewer's provider
    finally:
        _stop(proc)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(tmp_path):
    """A git clone of the committed notebooks and git/jupytext settings (what a user has)."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    for name in (".gitignore", "jupytext.toml"):
        shutil.copy(paths.ROOT / name, repo / name)
    for source in sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        shutil.copy(source, repo / "notebooks" / source.name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "notebooks")
    return repo


def test_running_and_saving_in_the_lab_keeps_git_clean(clone, tmp_path, monkeypatch):
    """What JupyterLab does with a double-clicked notebook: read it through the contents API, run
    every cell in a python3 kernel started in the notebook's folder, save it back through the
    contents API (the autosave). git then shows nothing to commit, and the pairing checks pass."""
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    monkeypatch.setenv("ARRANK_OUTPUTS", str(tmp_path / "outputs"))
    lab.pair_notebooks(sorted((clone / "notebooks").glob("*.py")))  # what `make setup` does
    proc, base = _serve(tmp_path, clone, "jupyter_server")
    try:
        url = f"{base}/api/contents/notebooks/04_esci_data.py"
        model = _call(f"{url}?type=notebook&content=1")
        nb = nbformat.from_dict(model["content"])
        client = NotebookClient(
            nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(clone / "notebooks")}}
        )
        client.execute()
        spec = KernelSpecManager().get_kernel_spec("python3")  # JupyterLab writes the kernel's spec
        nb.metadata.kernelspec = {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
        assert nb.metadata["language_info"]["name"] == "python"
        assert sum(bool(c.get("outputs")) for c in nb.cells if c.cell_type == "code") >= 3
        _call(url, "PUT", {"type": "notebook", "format": "json", "content": nb})
    finally:
        _stop(proc)
    saved = nbformat.read(clone / "notebooks" / "04_esci_data.ipynb", as_version=4)
    assert any(c.get("outputs") for c in saved.cells if c.cell_type == "code")  # outputs kept locally
    assert _git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(Path(__file__).parent / "test_pairing.py"),
        ],
        env=dict(os.environ, ARRANK_ROOT=str(clone)),
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout[-2000:]


LAB_TINY_01 = {
    "k_max_exact: int = 6": "k_max_exact: int = 4",
    "mc_queries: int = 20_000": "mc_queries: int = 3000",
    "k_max_bound: int = 1000": "k_max_bound: int = 100",
}  # tests/test_notebooks.py's TINY, typed into the cell
EXPECTED_STDERR: tuple[str, ...] = ()  # deliberate messages a notebook may print to stderr (none in 01)


@pytest.mark.skipif(
    not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="no Chromium (python -m arrank.workbook.bootstrap installs it)",
)
def test_a_notebook_runs_in_jupyterlab_in_a_browser_without_stray_stderr(clone, tmp_path, monkeypatch):
    """JupyterLab in headless Chromium: open notebooks/01_de_capacity.py (the parameters cell edited to
    the tiny values, as a reader would), Run All Cells; every cell runs, progress bars are widgets
    (no TqdmWarning), the figures draw, and nothing lands on stderr but a deliberate message."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("ARRANK_OUTPUTS", str(tmp_path / "outputs"))
    source = clone / "notebooks" / "01_de_capacity.py"
    text = source.read_text()
    for old, new in LAB_TINY_01.items():
        assert old in text
        text = text.replace(old, new)
    source.write_text(text)
    settings = tmp_path / "settings"
    lab.install_lab_settings(settings)
    proc, base = _serve(
        tmp_path,
        clone,
        "jupyterlab",
        f"--LabApp.app_settings_dir={settings}",
        f"--LabApp.user_settings_dir={tmp_path / 'user'}",
        f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
    )
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=shutil.which("chromium") or shutil.which("chromium-browser"), args=["--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/lab/tree/notebooks/01_de_capacity.py?reset&token={TOKEN}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
            page.wait_for_function(
                """() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
                           return p.length > 0 && p.every(t => /\\[\\d+\\]/.test(t)); }""",
                timeout=240_000,
            )
            stderr = page.eval_on_selector_all(
                "[data-mime-type='application/vnd.jupyter.stderr']", "els => els.map(e => e.textContent)"
            )
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count()
            bars = page.eval_on_selector_all(
                ".jp-OutputArea-output > .jupyter-widgets.widget-hbox", "els => els.map(e => e.textContent)"
            )  # off-screen cells too
            figures = page.locator(".jp-OutputArea-output.jp-RenderedPlotly").count()
            page.locator(".jp-MarkdownCell").last.scroll_into_view_if_needed()  # the exercises, at the end
            answers = page.eval_on_selector_all(".jp-RenderedMarkdown details", "els => els.map(e => e.open)")
            browser.close()
    finally:
        _stop(proc)
    stray = [s for s in stderr if not any(msg in s for msg in EXPECTED_STDERR)]
    assert errors == 0 and stray == [], stray
    assert len(bars) == 3 and all("100%" in b for b in bars), bars  # exact counts, Monte-Carlo, inner
    assert figures == 4  # products: tqdm as ipywidgets, finished; the four figures by plotly's Lab renderer
    assert answers == [False, False, False]  # the three exercises' answers, collapsed
