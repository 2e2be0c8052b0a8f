"""Calibrate the mocap -> table transform from markers placed at known table points.

Place a marker (or a rigid body's pivot) at three or more known, non-collinear points of
the table (e.g. its corners, or holes of a drilled template), record their mocap positions,
and fit the rigid transform ``p_table = R p_mocap + t`` by least squares (Kabsch / Umeyama
without scale):

* centre both point sets on their centroids;
* ``H = sum (p_i - p_mean)(q_i - q_mean)^T`` (mocap x table), ``H = U S V^T``;
* ``R = V diag(1, 1, d) U^T`` with ``d = sign(det(V U^T))`` (a proper rotation, never a
  reflection), ``t = q_mean - R p_mean``.

The residuals ``|R p_i + t - q_i|`` are reported. With isotropic marker noise of std sigma
per axis their RMS is about ``sigma sqrt(3 - 6 / n)`` for n points (the fit absorbs 6 of
the 3 n degrees of freedom); much more means wrong pairing, wrong units or a moved marker.

Command line (points files are YAML ``{points: {name: [x, y, z], ...}}`` or CSV
``name,x,y,z`` lines; a YAML point may be a list of samples ``[[x, y, z], ...]``, averaged)::

    python -m parapush.estimation.calibration --measured measured.yaml --known table_points.yaml \\
        --out config/mocap_table.yaml [--max-residual 0.003] [--force]

Points are paired by name. A known point's z is the height of the *marker centre* above the
table top (a 14 mm marker resting on the table: z = 0.007), not of the table surface. The
output is the transform file that
:func:`parapush.estimation.table_frame.load_table_transform` reads.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from parapush.estimation.table_frame import TableFrameError, TableTransform, save_table_transform

#: Default smallest spread (m, RMS distance from their best-fit line) the points must have.
MIN_SPREAD = 0.01
#: Default largest RMS residual (m) the command line accepts before refusing to write.
MAX_RMS_RESIDUAL = 0.003


class CalibrationError(ValueError):
    """The calibration input is invalid or degenerate; the message says why."""


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """A fitted mocap -> table transform and how well it fits.

    Attributes:
        transform: the fitted transform.
        point_names: names of the points, in residual order.
        residuals: (n,) distance |R p_i + t - q_i| per point, m.
        scale_ratio: RMS spread of the measured points / RMS spread of the known points
            (1 for consistent units; about 1000 if one file is in mm).
    """

    transform: TableTransform
    point_names: tuple[str, ...]
    residuals: np.ndarray
    scale_ratio: float

    @property
    def rms_residual(self) -> float:
        """m."""
        return float(np.sqrt(np.mean(self.residuals**2)))

    @property
    def max_residual(self) -> float:
        """m."""
        return float(np.max(self.residuals))

    def report(self) -> dict:
        """Plain data for the calibration section of the transform file."""
        return {
            "points": len(self.point_names),
            "rms_residual": round(self.rms_residual, 9),
            "max_residual": round(self.max_residual, 9),
            "residuals": {
                name: round(float(value), 9)
                for name, value in zip(self.point_names, self.residuals, strict=True)
            },
            "scale_ratio": round(self.scale_ratio, 9),
        }


def _point_array(points, name: str) -> np.ndarray:
    try:
        array = np.asarray(points, dtype=float)
    except (TypeError, ValueError):
        raise CalibrationError(f"{name}: expected an (n, 3) array of numbers") from None
    if array.ndim != 2 or array.shape[1] != 3:
        raise CalibrationError(f"{name}: expected shape (n, 3), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise CalibrationError(f"{name}: points must be finite")
    return array


def _line_spread(centred: np.ndarray) -> float:
    """RMS distance (m) of centred points (n, 3) from their best-fit line through the centroid."""
    singular = np.linalg.svd(centred, compute_uv=False)
    return float(math.sqrt(np.sum(singular[1:] ** 2) / len(centred)))


def fit_rigid_transform(
    measured,
    known,
    point_names: Sequence[str] | None = None,
    min_spread: float = MIN_SPREAD,
) -> CalibrationResult:
    """Least-squares rigid transform mapping ``measured`` (n, 3) mocap points (m) onto ``known``
    (n, 3) table points (m), row i with row i.

    Raises:
        CalibrationError: for mismatched counts, fewer than 3 points, non-finite values, or
            points (measured or known) closer than ``min_spread`` m (RMS) to a line.
    """
    if not math.isfinite(min_spread) or min_spread <= 0.0:
        raise CalibrationError(f"min_spread: must be finite and > 0 m, got {min_spread!r}")
    measured = _point_array(measured, "measured")
    known = _point_array(known, "known")
    if len(measured) != len(known):
        raise CalibrationError(
            f"mismatched counts: {len(measured)} measured point(s) and {len(known)} known point(s)"
        )
    if len(known) < 3:
        raise CalibrationError(f"too few points: {len(known)} given, a rigid fit needs >= 3 non-collinear")
    names = tuple(point_names) if point_names is not None else tuple(f"p{i}" for i in range(len(known)))
    if len(names) != len(known):
        raise CalibrationError(f"point_names: {len(names)} names for {len(known)} points")
    measured_mean, known_mean = measured.mean(axis=0), known.mean(axis=0)
    measured_centred, known_centred = measured - measured_mean, known - known_mean
    for label, centred in (("known", known_centred), ("measured", measured_centred)):
        spread = _line_spread(centred)
        if spread < min_spread:
            raise CalibrationError(
                f"{label} points are collinear (RMS distance {1e3 * spread:.2f} mm from their best-fit "
                f"line, need >= {1e3 * min_spread:.1f} mm): the rotation about that line is undetermined"
            )
    known_size = float(np.sqrt(np.mean(np.sum(known_centred**2, axis=1))))
    measured_size = float(np.sqrt(np.mean(np.sum(measured_centred**2, axis=1))))
    cross = measured_centred.T @ known_centred
    left, _, right_t = np.linalg.svd(cross)
    correction = np.diag([1.0, 1.0, np.sign(np.linalg.det(right_t.T @ left.T))])
    rotation = right_t.T @ correction @ left.T
    translation = known_mean - rotation @ measured_mean
    residuals = np.linalg.norm(measured @ rotation.T + translation - known, axis=1)
    return CalibrationResult(
        transform=TableTransform.from_matrix(rotation, tuple(translation)),
        point_names=names,
        residuals=residuals,
        scale_ratio=measured_size / known_size,
    )


def calibrate(
    measured: Mapping[str, Sequence[float]],
    known: Mapping[str, Sequence[float]],
    min_spread: float = MIN_SPREAD,
) -> CalibrationResult:
    """Fit the transform from named points: ``measured`` (mocap, m) and ``known`` (table, m)
    are paired by name. CalibrationError names the points present in only one of them."""
    only_measured = sorted(set(measured) - set(known))
    only_known = sorted(set(known) - set(measured))
    if only_measured or only_known:
        raise CalibrationError(
            f"mismatched points: measured only {only_measured}, known only {only_known}; "
            "every point needs a measured and a known position"
        )
    names = sorted(known)
    return fit_rigid_transform(
        [measured[name] for name in names], [known[name] for name in names], names, min_spread
    )


def _point_value(value, where: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise CalibrationError(f"{where}: expected [x, y, z] or a list of [x, y, z] samples") from None
    if array.ndim == 2 and array.shape[1] == 3 and len(array) >= 1:
        array = array.mean(axis=0)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise CalibrationError(f"{where}: expected [x, y, z] or a list of [x, y, z] samples, got {value!r}")
    return array


def load_points(path: str | Path) -> dict[str, np.ndarray]:
    """Read named points (m) from YAML ``{points: {name: [x, y, z] | [[x, y, z], ...]}}`` or CSV
    ``name,x,y,z`` (an optional header line starting with ``name``, ``#`` comments)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise CalibrationError(f"{path}: cannot read points ({error.strerror})") from None
    points: dict[str, np.ndarray] = {}
    if path.suffix.lower() == ".csv":
        rows = [row for row in csv.reader(text.splitlines()) if row and not row[0].lstrip().startswith("#")]
        if rows and rows[0][0].strip().lower() == "name":
            rows = rows[1:]
        for line, row in enumerate(rows, start=1):
            if len(row) != 4:
                raise CalibrationError(f"{path}: row {line}: expected name,x,y,z, got {row}")
            name = row[0].strip()
            if name in points:
                raise CalibrationError(f"{path}: point {name!r} appears twice")
            points[name] = _point_value([cell.strip() for cell in row[1:]], f"{path}: point {name!r}")
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise CalibrationError(f"{path}: invalid YAML ({error})") from None
        if not isinstance(data, Mapping) or not isinstance(data.get("points"), Mapping):
            raise CalibrationError(f"{path}: expected a mapping 'points: {{name: [x, y, z], ...}}'")
        for name, value in data["points"].items():
            points[str(name)] = _point_value(value, f"{path}: points.{name}")
    if not points:
        raise CalibrationError(f"{path}: no points")
    return points


def _up_axis_note(transform: TableTransform) -> str:
    """Which mocap axis the fit maps to table up, e.g. '+Y (Motive default)'."""
    up_in_mocap = transform.matrix[2]  # row 2 of R: table z expressed in mocap axes
    axis = int(np.argmax(np.abs(up_in_mocap)))
    sign = "+" if up_in_mocap[axis] > 0 else "-"
    label = f"{sign}{'XYZ'[axis]}"
    tilt = math.degrees(math.acos(min(1.0, abs(float(up_in_mocap[axis])))))
    default = " (Motive default Y up)" if label == "+Y" else ""
    return f"table up is mocap {label}{default}, {tilt:.2f} deg off that axis"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m parapush.estimation.calibration",
        description="Fit the mocap -> table transform from points measured at known table positions.",
    )
    parser.add_argument("--measured", required=True, type=Path, help="mocap positions (YAML or CSV), m")
    parser.add_argument("--known", required=True, type=Path, help="table-frame positions (YAML or CSV), m")
    parser.add_argument("--out", required=True, type=Path, help="transform YAML to write")
    parser.add_argument(
        "--max-residual",
        type=float,
        default=MAX_RMS_RESIDUAL,
        help=f"refuse to write if the RMS residual exceeds this, m (default {MAX_RMS_RESIDUAL})",
    )
    parser.add_argument("--min-spread", type=float, default=MIN_SPREAD, help="collinearity threshold, m")
    parser.add_argument("--force", action="store_true", help="write even if the residual is too large")
    arguments = parser.parse_args(argv)
    if not math.isfinite(arguments.max_residual) or arguments.max_residual <= 0.0:
        parser.error(f"--max-residual: must be > 0 m, got {arguments.max_residual}")
    try:
        measured = load_points(arguments.measured)
        known = load_points(arguments.known)
        result = calibrate(measured, known, arguments.min_spread)
    except (CalibrationError, TableFrameError) as error:
        print(f"calibration failed: {error}", file=sys.stderr)
        return 2
    for name, residual in zip(result.point_names, result.residuals, strict=True):
        print(f"  {name}: residual {1e3 * residual:.3f} mm")
    print(
        f"RMS residual {1e3 * result.rms_residual:.3f} mm, max {1e3 * result.max_residual:.3f} mm "
        f"over {len(result.point_names)} points; {_up_axis_note(result.transform)}"
    )
    if abs(result.scale_ratio - 1.0) > 0.05:
        print(
            f"warning: the measured points are {result.scale_ratio:.4g} times as spread as the known ones: "
            "check units (both files in m) and that the names pair the right points",
            file=sys.stderr,
        )
    if result.rms_residual > arguments.max_residual and not arguments.force:
        print(
            f"calibration rejected: RMS residual {1e3 * result.rms_residual:.3f} mm > "
            f"{1e3 * arguments.max_residual:.3f} mm (check point names/order and units; "
            "--force writes anyway)",
            file=sys.stderr,
        )
        return 3
    report = result.report()
    report.update({"measured": str(arguments.measured), "known": str(arguments.known)})
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    header = f"Mocap -> table transform, python -m parapush.estimation.calibration, {stamp}"
    save_table_transform(arguments.out, result.transform, report, header)
    print(f"wrote {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
