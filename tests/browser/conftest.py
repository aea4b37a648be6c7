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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a temporary folder (the app exposed to the page for driving commands)."""
    root = tmp_path_factory.mktemp("lab")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--expose-app-in-browser",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    # no "Would you like to get notified about Jupyter news?" toast over the widgets
    settings = root / ".lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {**os.environ, "HEPWB_HOME": str(root), "HF_HUB_OFFLINE": "1",
           "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings")}  # fmt: skip
    log = (root / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
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


_FIND = (
    "const nb = Array.from(window.jupyterapp.shell.widgets('main'))"
    ".find(w => w.context && w.context.path === path);"
)


def open_and_run(browser, lab, notebook: str, timeout_s: float = 240):
    """Open ``notebook`` in a fresh JupyterLab workspace, run all its cells, return the page when done.

    Fails with the error of the first cell that raised.
    """
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    workspace = notebook.replace(".ipynb", "").replace(".", "-")
    page.goto(f"{lab['url']}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={lab['token']}")
    # the page's scripts may not have created the app yet: wait for it before looking inside it
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    page.wait_for_function(
        f"(path) => {{ {_FIND} const k = nb && nb.sessionContext.session && nb.sessionContext.session.kernel;"
        " return k && k.status === 'idle' && nb.content.widgets.length > 0; }",
        arg=notebook,
        timeout=120_000,
    )
    page.evaluate(
        f"(path) => {{ {_FIND} window.jupyterapp.shell.activateById(nb.id);"
        " return window.jupyterapp.commands.execute('notebook:run-all-cells'); }",
        notebook,
    )
    page.wait_for_function(
        f"(path) => {{ {_FIND} const cells = nb.content.widgets.filter(c => c.model.type === 'code');"
        " const failed = cells.some(c => c.outputArea && c.outputArea.model.toJSON()"
        "   .some(o => o.output_type === 'error'));"
        " return failed || (cells.every(c => c.model.executionCount !== null)"
        " && nb.sessionContext.session.kernel.status === 'idle'); }",
        arg=notebook,
        timeout=timeout_s * 1000,
    )
    errors = page.evaluate(
        f"(path) => {{ {_FIND} return nb.content.widgets"
        ".filter(c => c.model.type === 'code' && c.outputArea)"
        ".flatMap(c => c.outputArea.model.toJSON().filter(o => o.output_type === 'error'))"
        ".map(o => o.ename + ': ' + o.evalue); }",
        notebook,
    )
    assert not errors, f"{notebook} failed in the browser: {errors}"
    return page


def screenshot(page, name: str, locator=None) -> Path:
    """Save a screenshot under reports/screenshots/ and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    (locator or page).screenshot(path=str(path))
    return path
