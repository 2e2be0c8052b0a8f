"""The figures a benchmark contributes to the README, stored with where they came from.

Not a benchmark itself; imported by the ``bench/*.py`` that the README quotes. A bench
collects the few numbers the README quotes into a flat ``figures`` dict and calls
:func:`write_figures`; the file holds them with the date, the machine (cores, CPU
model), the command and the load average before and after the run::

    {"bench": "sim_push_noise", "date": "2026-11-25T01:30:00Z", "command": "...",
     "machine": {"nproc": 2, "cpu_model": "...", ...}, "load_average": {"before": [...],
     "after": [...]}, "figures": {"simulated_translation_std_mm": 8.3, ...}}

Without ``--reference`` it goes to ``bench/results/<bench>.figures.json`` (ignored by git);
with ``--reference`` to ``bench/reference/<bench>.json``, which is committed and which
``test/unit/test_readme_figures.py`` compares with the README's text. A ``--quick`` run
is stored under its own name, ``<bench>_quick.json`` (with ``"quick": true``), for a README
that quotes the quick run as such; it never stands in for the full run's file. So is a run of
other inputs (another seed, say), ``<bench>_<variant>.json`` (with ``"variant"``), which the
README quotes beside the main run's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
REFERENCE = BENCH / "reference"


def add_reference_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--reference`` flag: store this run's README figures in ``bench/reference/``."""
    parser.add_argument(
        "--reference",
        action="store_true",
        help="write the README's figures to bench/reference/<bench>.json (committed), not bench/results/",
    )


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (``uptime``)."""
    return [round(value, 2) for value in os.getloadavg()]


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover - not Linux
        pass
    return platform.processor() or "unknown"


def available_cores() -> int:
    """CPU cores this process may run on (``nproc``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def machine() -> dict[str, Any]:
    """The facts about this machine that a timing figure depends on."""
    return {
        "nproc": available_cores(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def reference_name(bench: str, *, quick: bool = False, variant: str = "") -> str:
    """The file name (without ``.json``) of a bench's figures: ``<bench>[_quick][_<variant>]``."""
    return bench + ("_quick" if quick else "") + (f"_{variant}" if variant else "")


def write_figures(
    bench: str,
    figures: Mapping[str, Any],
    *,
    reference: bool,
    load_before: list[float],
    quick: bool = False,
    variant: str = "",
) -> Path:
    """Write ``figures`` (flat: name -> number or list of numbers) with their provenance.

    Args:
        bench: the benchmark's name (its file name without ``.py``).
        figures: the numbers the README quotes, in the units their names say.
        reference: True: to ``bench/reference/<bench>.json``; False: ``bench/results/<bench>.figures.json``.
        load_before: :func:`load_average` taken when the bench started.
        quick: the run was reduced (``--quick``): stored as ``<bench>_quick``.
        variant: the run's inputs differ from the main run's (letters, digits and ``_``; e.g. ``seed1``):
            stored as ``<bench>_<variant>`` (after ``_quick``).

    Returns:
        The path written.
    """
    if variant and not variant.replace("_", "").isalnum():
        raise ValueError(f"variant: expected letters, digits and '_', got {variant!r}")
    for name, value in figures.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in values):
            raise ValueError(f"figures.{name}: expected a number or a list of numbers, got {value!r}")
    payload = {
        "bench": bench,
        "quick": bool(quick),
        "variant": variant,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python", f"bench/{bench}.py", *sys.argv[1:]]),
        "machine": machine(),
        "load_average": {"before": list(load_before), "after": load_average()},
        "figures": {name: list(value) if isinstance(value, tuple) else value for name, value in figures.items()},
    }
    folder = REFERENCE if reference else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    name = reference_name(bench, quick=quick, variant=variant)
    path = folder / (f"{name}.json" if reference else f"{name}.figures.json")
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path} (load average before {load_before}, after {payload['load_average']['after']})")
    return path
