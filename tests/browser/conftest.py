"""A real JupyterLab on 127.0.0.1 and a real headless Chromium (Debian's package, driven by Playwright)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from hepwb.paths import Layout

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Layout(ROOT).reports / "screenshots"


def chromium_path() -> str | None:
    """``$HEPWB_CHROMIUM``, else the first Chromium/Chrome on PATH."""
    env = os.environ.get("HEPWB_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        reason = "no Chromium found (apt-get install chromium, or set HEPWB_CHROMIUM): browser tests skipped"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; .ci/run installs it, so CI must have one")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parameterized(notebook: str, folder: Path, **parameters) -> str:
    """Write project notebook ``notebook`` into ``folder`` with ``parameters`` injected as papermill does."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(ROOT / "notebooks" / notebook)), parameters)
    nbformat.write(nb, folder / notebook)
    return notebook


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab for the whole session, serving a temporary folder (the app exposed to the page).

    Its kernels share the session's ``$HEPWB_HOME``, so converted papers and embeddings cached by one
    notebook (or test) are reused by the next, as on a user's machine.
    """
    root = tmp_path_factory.mktemp("lab")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--expose-app-in-browser",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    # no "Would you like to get notified about Jupyter news?" toast over the widgets; no autosave
    settings = root / ".lab-settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false"}'
    )
    (settings / "docmanager-extension").mkdir(parents=True)
    (settings / "docmanager-extension" / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings")}
    log = (root / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/status", params={"token": token}, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail(f"JupyterLab did not start: {(root / 'lab.log').read_text()[-2000:]}")
    try:
        yield {"url": url, "token": token, "root": root}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def shutdown_kernels(lab) -> None:
    """End every kernel of ``lab`` (each holds a model in memory): as closing the notebooks would."""
    params = {"token": lab["token"]}
    for session in httpx.get(f"{lab['url']}/api/sessions", params=params, timeout=30).json():
        httpx.delete(f"{lab['url']}/api/sessions/{session['id']}", params=params, timeout=60)


_FIND = (
    "const nb = Array.from(window.jupyterapp.shell.widgets('main'))"
    ".find(w => w.context && w.context.path === path);"
)
EXPECT_STDERR = "expect-stderr"
"""Tag of a notebook cell whose stderr output is expected (a documented warning); any other fails."""

_STATE = (
    f"(path) => {{ {_FIND} if (!nb) return null;"
    " const cells = nb.content.widgets.filter(c => c.model.type === 'code');"
    " const k = nb.sessionContext.session && nb.sessionContext.session.kernel;"
    " return {kernel: k ? k.status : 'none', cells: cells.map(c => ({"
    "   count: c.model.executionCount, tags: c.model.getMetadata('tags') || [],"
    "   source: c.model.sharedModel.getSource().slice(0, 80),"
    "   outputs: c.outputArea ? c.outputArea.model.toJSON().map(o => ({"
    "     type: o.output_type, name: o.name || '',"
    "     text: String(o.text || o.evalue || '').slice(0, 500), ename: o.ename || ''})) : []}))}; }"
)


def open_notebook(browser, lab, notebook: str):
    """Open ``notebook`` (a path under the lab's root) in a fresh workspace; the page, its kernel idle."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    workspace = notebook.replace(".ipynb", "").replace(".", "-").replace("/", "-")
    page.goto(f"{lab['url']}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab['token']}")
    # the page's scripts may not have created the app yet: wait for it before looking inside it
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    page.wait_for_function(
        f"(path) => {{ {_FIND} const k = nb && nb.sessionContext.session && nb.sessionContext.session.kernel;"
        " return k && k.status === 'idle' && nb.content.widgets.length > 0; }",
        arg=notebook,
        timeout=120_000,
    )
    return page


def run_all(page, notebook: str, timeout_s: float = 600, command: str = "notebook:run-all-cells") -> dict:
    """Queue every cell at once (JupyterLab's *Run All*, or ``command``), wait until it is done.

    Done means: the kernel is idle and every code cell has an execution count, or some cell shows an
    error (Run All stops there). Returns the notebook's final state (kernel status, cells, outputs).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate(
        f"(path) => {{ {_FIND} window.jupyterapp.shell.activateById(nb.id);"
        f" return window.jupyterapp.commands.execute({command!r}); }}",
        notebook,
    )
    try:
        page.wait_for_function(
            f"(path) => {{ {_FIND} const cells = nb.content.widgets.filter(c => c.model.type === 'code');"
            " const failed = cells.some(c => c.outputArea && c.outputArea.model.toJSON()"
            "   .some(o => o.output_type === 'error'));"
            " return failed || (cells.every(c => c.model.executionCount !== null)"
            " && nb.sessionContext.session.kernel.status === 'idle'); }",
            arg=notebook,
            timeout=timeout_s * 1000,
        )
    except PlaywrightTimeout:
        state = page.evaluate(_STATE, notebook)
        waiting = [c["source"] for c in state["cells"] if c["count"] is None]
        pytest.fail(
            f"{notebook}: Run All did not finish in {timeout_s:.0f} s (kernel {state['kernel']}); "
            f"{len(waiting)} cell(s) never ran, the first: {waiting[:1]}; "
            f"stderr so far: {problems(state, stderr=True)[:3]}"
        )
    return page.evaluate(_STATE, notebook)


def problems(state: dict, *, stderr: bool = True) -> list[str]:
    """Every error output, and every stderr output of a cell not tagged ``expect-stderr``."""
    out = []
    for cell in state["cells"]:
        for o in cell["outputs"]:
            if o["type"] == "error":
                out.append(f"{cell['source']!r}: {o['ename']}: {o['text']}")
            elif (
                stderr
                and o["type"] == "stream"
                and o["name"] == "stderr"
                and EXPECT_STDERR not in cell["tags"]
            ):
                out.append(f"{cell['source']!r} wrote to stderr: {o['text']}")
    return out


def open_and_run(browser, lab, notebook: str, timeout_s: float = 600):
    """Open ``notebook``, Run All, fail on the first error output; return the page."""
    page = open_notebook(browser, lab, notebook)
    state = run_all(page, notebook, timeout_s)
    errors = problems(state, stderr=False)
    assert not errors, f"{notebook} failed in the browser: {errors}"
    return page


def screenshot(page, name: str, locator=None) -> Path:
    """Save a screenshot under reports/screenshots/ and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    (locator or page).screenshot(path=str(path))
    return path
