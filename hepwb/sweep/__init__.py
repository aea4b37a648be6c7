"""Sweeps: declarative grids over every dimension, each stage computed once, on Dask or in this process.

Typical use::

    from hepwb.sweep import SweepSpec, plan_sweep, run_sweep
    spec = SweepSpec.from_yaml("sweeps/default.yaml")
    plan_sweep(spec).frame()          # the cells and which stages are cached
    result = run_sweep(spec)          # LocalCluster; executor="serial" or scheduler="tcp://..."
"""

from __future__ import annotations

from hepwb.sweep.engine import SweepResult, default_spec_path, load_spec, plan_sweep, run_sweep
from hepwb.sweep.spec import DIMENSIONS, SweepSpec, SweepSpecError

__all__ = [
    "DIMENSIONS",
    "SweepResult",
    "SweepSpec",
    "SweepSpecError",
    "default_spec_path",
    "load_spec",
    "plan_sweep",
    "run_sweep",
]


def __dir__() -> list[str]:
    return __all__
