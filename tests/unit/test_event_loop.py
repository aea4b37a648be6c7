"""Evaluation inside a running event loop (a Jupyter cell under ipykernel 7) leaves that loop alone.

ragas' synchronous metrics apply ``nest_asyncio`` to any running loop; in JupyterLab that broke
*Run All* (``cannot enter context … is already entered``, later cells stuck at ``[*]``). Each check
runs in a fresh interpreter so no other test's imports can hide or cause a patch.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, json
    from hepwb.evaluation.ragas_eval import offline_scores

    SAMPLES = {"q1": {"user_input": "What is measured?",
                      "retrieved_contexts": ["the beam-spin asymmetry", "x"],
                      "retrieved_context_ids": ["c1", "c2"], "reference_context_ids": ["c1"],
                      "reference_contexts": ["the beam-spin asymmetry"], "reference": "asymmetry"}}

    async def cell():
        loop = asyncio.get_running_loop()
        frame = offline_scores(SAMPLES)
        patched = hasattr(loop, "_nest_patched") or hasattr(asyncio, "_nest_patched")
        return {"patched": patched, "id_recall": float(frame.loc["q1", "id_context_recall"]),
                "answer_in_context": float(frame.loc["q1", "answer_in_context"])}

    print(json.dumps(asyncio.run(cell())))
    """
)


@pytest.mark.heavy
def test_offline_ragas_scores_in_a_running_loop_do_not_patch_it():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=300
    )
    import json

    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"patched": False, "id_recall": 1.0, "answer_in_context": 1.0}, out.stderr[-2000:]
