"""Mocap -> table calibration: recovery of known transforms, residuals, degenerate input, CLI."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from parapush.estimation.calibration import (
    CalibrationError,
    calibrate,
    fit_rigid_transform,
    load_points,
    main,
)
from parapush.estimation.table_frame import TableTransform, load_table_transform

ROOT = Path(__file__).resolve().parents[2]

# Table points (table frame, m): the four corners of a 0.8 x 1.0 table, its centre, and two
# points on a 5 cm riser, like a drilled template would provide.
TABLE_POINTS = np.array(
    [
        [0.4, 0.5, 0.0],
        [-0.4, 0.5, 0.0],
        [-0.4, -0.5, 0.0],
        [0.4, -0.5, 0.0],
        [0.0, 0.0, 0.0],
        [0.2, -0.1, 0.05],
        [-0.1, 0.3, 0.05],
    ]
)
# A Y-up Motive frame whose floor is 0.76 m below the table top, rotated 25 deg about the
# vertical and offset: the mocap origin sits at (1.2, -0.3, -0.76) in the table frame.
TRUE_ROTATION = Rotation.from_euler("z", 25.0, degrees=True) * Rotation.from_euler("x", 90.0, degrees=True)
TRUE_TRANSFORM = TableTransform(tuple(TRUE_ROTATION.as_quat()), (1.2, -0.3, -0.76))


def measured_from(table_points, noise=0.0, seed=0):
    """Mocap positions of table points, with isotropic Gaussian noise (std ``noise`` m per axis)."""
    mocap = TRUE_TRANSFORM.inverse().points_to_table(table_points)
    return mocap + np.random.default_rng(seed).normal(0.0, noise, mocap.shape)


def rotation_error(first: TableTransform, second: TableTransform) -> float:
    relative = Rotation.from_quat(first.rotation).inv() * Rotation.from_quat(second.rotation)
    return float(relative.magnitude())


def test_noise_free_points_recover_the_transform_exactly():
    result = fit_rigid_transform(measured_from(TABLE_POINTS), TABLE_POINTS)
    assert rotation_error(result.transform, TRUE_TRANSFORM) < 1e-12
    np.testing.assert_allclose(result.transform.translation, TRUE_TRANSFORM.translation, atol=1e-12)
    assert result.rms_residual < 1e-12
    assert result.scale_ratio == pytest.approx(1.0)


def test_noisy_points_give_a_residual_at_the_noise_level():
    noise = 0.0005  # 0.5 mm per axis
    residuals, rotation_errors, translation_errors = [], [], []
    for seed in range(50):
        result = fit_rigid_transform(measured_from(TABLE_POINTS, noise, seed), TABLE_POINTS)
        residuals.append(result.rms_residual)
        rotation_errors.append(rotation_error(result.transform, TRUE_TRANSFORM))
        offset = np.subtract(result.transform.translation, TRUE_TRANSFORM.translation)
        translation_errors.append(np.linalg.norm(offset))
    n = len(TABLE_POINTS)
    expected = noise * math.sqrt(3.0 - 6.0 / n)  # 0.5 mm * sqrt(3 - 6/7) = 0.732 mm
    mean_square = math.sqrt(np.mean(np.square(residuals)))
    assert mean_square == pytest.approx(expected, rel=0.1)
    assert np.max(rotation_errors) < math.radians(0.2)
    assert np.max(translation_errors) < 0.002  # the mocap origin is ~1.4 m from the points


def test_three_coplanar_points_suffice_and_never_give_a_reflection():
    points = TABLE_POINTS[[0, 1, 2]]
    result = fit_rigid_transform(measured_from(points), points)
    assert np.linalg.det(result.transform.matrix) == pytest.approx(1.0)
    assert rotation_error(result.transform, TRUE_TRANSFORM) < 1e-9


@settings(max_examples=50)
@given(
    st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(lambda q: np.linalg.norm(q) > 0.1),
    st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3),
    st.integers(0, 2**31),
)
def test_any_rigid_transform_is_recovered(quaternion, translation, seed):
    truth = TableTransform(tuple(np.asarray(quaternion) / np.linalg.norm(quaternion)), tuple(translation))
    known = np.random.default_rng(seed).uniform(-0.5, 0.5, (5, 3))
    known[:, 2] *= 0.1
    measured = truth.inverse().points_to_table(known)
    result = fit_rigid_transform(measured, known, min_spread=0.001)
    assert rotation_error(result.transform, truth) < 1e-7
    np.testing.assert_allclose(result.transform.translation, truth.translation, atol=1e-7)


@pytest.mark.parametrize(
    ("measured", "known", "message"),
    [
        (TABLE_POINTS[:2], TABLE_POINTS[:2], r"too few points: 2 given"),
        (TABLE_POINTS[:4], TABLE_POINTS[:5], r"mismatched counts: 4 measured point\(s\) and 5 known"),
        (
            [[0, 0, 0], [0.1, 0, 0], [0.3, 0, 0], [0.5, 0.0001, 0]],
            [[0, 0, 0], [0.1, 0, 0], [0.3, 0, 0], [0.5, 0.0001, 0]],
            r"known points are collinear",
        ),
        (np.zeros((3, 3)), TABLE_POINTS[:3], r"measured points are collinear"),
        ([[0, 0, math.nan], [1, 0, 0], [0, 1, 0]], TABLE_POINTS[:3], r"measured: points must be finite"),
        ([[0, 0], [1, 0], [0, 1]], TABLE_POINTS[:3], r"measured: expected shape \(n, 3\)"),
    ],
)
def test_degenerate_input_is_a_clear_error(measured, known, message):
    with pytest.raises(CalibrationError, match=message):
        fit_rigid_transform(measured, known)


def test_min_spread_must_be_positive():
    with pytest.raises(CalibrationError, match="min_spread"):
        fit_rigid_transform(TABLE_POINTS[:3], TABLE_POINTS[:3], min_spread=0.0)


def test_named_points_must_pair_up():
    known = {"a": TABLE_POINTS[0], "b": TABLE_POINTS[1], "c": TABLE_POINTS[2]}
    measured = {"a": TABLE_POINTS[0], "b": TABLE_POINTS[1], "d": TABLE_POINTS[3]}
    with pytest.raises(CalibrationError, match=r"measured only \['d'\], known only \['c'\]"):
        calibrate(measured, known)


def write_points(path: Path, names, points) -> None:
    if path.suffix == ".csv":
        rows = zip(names, np.asarray(points, dtype=float).tolist(), strict=True)
        lines = ["name,x,y,z"] + [f"{name},{x!r},{y!r},{z!r}" for name, (x, y, z) in rows]
        path.write_text("\n".join(lines) + "\n")
    else:
        data = {name: [float(v) for v in point] for name, point in zip(names, points, strict=True)}
        path.write_text(yaml.safe_dump({"points": data}))


def run_calibration(measured: Path, known: Path, out: Path) -> int:
    """The calibration command line's exit code for these files."""
    return main(["--measured", str(measured), "--known", str(known), "--out", str(out)])


def test_command_line_writes_the_transform_the_estimator_reads(tmp_path, capsys):
    names = [f"p{i}" for i in range(len(TABLE_POINTS))]
    # Measured points as lists of 20 noisy samples each (averaged by the loader).
    rng = np.random.default_rng(7)
    exact = measured_from(TABLE_POINTS)
    samples = {n: (exact[i] + rng.normal(0, 0.0005, (20, 3))).tolist() for i, n in enumerate(names)}
    (tmp_path / "measured.yaml").write_text(yaml.safe_dump({"points": samples}))
    write_points(tmp_path / "known.csv", names, TABLE_POINTS)
    out = tmp_path / "mocap_table.yaml"
    code = run_calibration(tmp_path / "measured.yaml", tmp_path / "known.csv", out)
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "table up is mocap +Y (Motive default Y up)" in printed
    transform = load_table_transform(out)
    assert rotation_error(transform, TRUE_TRANSFORM) < math.radians(0.05)
    report = yaml.safe_load(out.read_text())["calibration"]
    assert report["points"] == 7
    assert report["rms_residual"] < 0.0005  # averaged samples: ~0.5 mm / sqrt(20) * 1.5


def test_command_line_refuses_a_bad_fit_and_explains(tmp_path, capsys):
    names = ["a", "b", "c", "d"]
    measured = measured_from(TABLE_POINTS[:4])
    write_points(tmp_path / "measured.csv", names, measured[[0, 1, 3, 2]])  # two points swapped
    write_points(tmp_path / "known.yaml", names, TABLE_POINTS[:4])
    out = tmp_path / "out.yaml"
    code = run_calibration(tmp_path / "measured.csv", tmp_path / "known.yaml", out)
    assert code == 3
    assert "calibration rejected" in capsys.readouterr().err
    assert not out.exists()


def test_command_line_warns_about_millimetres(tmp_path, capsys):
    names = ["a", "b", "c", "d"]
    write_points(tmp_path / "measured.yaml", names, 1000.0 * measured_from(TABLE_POINTS[:4]))
    write_points(tmp_path / "known.yaml", names, TABLE_POINTS[:4])
    code = run_calibration(tmp_path / "measured.yaml", tmp_path / "known.yaml", tmp_path / "o.yaml")
    assert code == 3
    assert "1000 times as spread" in capsys.readouterr().err


def test_point_file_errors(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("a,1,2\n")
    with pytest.raises(CalibrationError, match=r"row 1: expected name,x,y,z"):
        load_points(path)
    path.write_text("a,1,2,3\na,1,2,3\n")
    with pytest.raises(CalibrationError, match=r"point 'a' appears twice"):
        load_points(path)
    yaml_path = tmp_path / "points.yaml"
    yaml_path.write_text("points: {a: [1, 2]}\n")
    with pytest.raises(CalibrationError, match=r"points.a: expected \[x, y, z\]"):
        load_points(yaml_path)


def test_module_entry_point_runs(tmp_path):
    names = ["a", "b", "c"]
    write_points(tmp_path / "m.yaml", names, measured_from(TABLE_POINTS[:3]))
    write_points(tmp_path / "k.yaml", names, TABLE_POINTS[:3])
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "parapush.estimation.calibration",
            "--measured",
            str(tmp_path / "m.yaml"),
            "--known",
            str(tmp_path / "k.yaml"),
            "--out",
            str(tmp_path / "t.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr
    assert load_table_transform(tmp_path / "t.yaml") is not None
