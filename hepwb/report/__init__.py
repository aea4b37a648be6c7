"""What people read: the HTML report, its tables and plots, the verdict over a sweep, pinned defaults.

It reads :mod:`hepwb.catalog` (and the run records of :mod:`hepwb.experiment`); neither imports it.
:func:`render_report` executes the report notebook into ``reports/report.html``; :func:`verdict` picks the
best and the recommended configuration of a sweep; :func:`pin_from_report` makes that recommendation the
project's default (:func:`pin_defaults` pins one by name).

Example (in a notebook, after ``hepwb sweep``)::

    from hepwb.report import pin_from_report, render_report

    html = render_report()  # reports/report.html
    path, sentence = pin_from_report(sweep="latest")  # hepwb-defaults.json, and why
"""

from __future__ import annotations

from hepwb.report.pin import pin_defaults, pin_from_report
from hepwb.report.render import render_report
from hepwb.report.verdict import Verdict, verdict

__all__ = ["Verdict", "pin_defaults", "pin_from_report", "render_report", "verdict"]


def __dir__() -> list[str]:
    return __all__
