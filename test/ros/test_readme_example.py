"""The README's prediction client, run as written against a real prediction service process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_client() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Calling the prediction service from your own node", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "README: no python block in the prediction-service section"
    return match.group(1)


def test_the_readme_client_runs_against_the_service(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(readme_client())
    environment = {**os.environ, "ROS_DOMAIN_ID": str(int(os.environ["ROS_DOMAIN_ID"]) % 100 + 120)}
    service = subprocess.Popen(
        [sys.executable, "-m", "parapush.nodes.prediction_service", "--ros-args",
         "--params-file", str(ROOT / "config" / "model.yaml"), "-p", "scene_file:=isrr_obstacle.yaml",
         "-p", "model.workers:=2"],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        client = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True,
                                timeout=120)
    finally:
        service.terminate()
        log, _ = service.communicate(timeout=20)
    assert client.returncode == 0, client.stderr + "\n--- service ---\n" + log
    lines = [line for line in client.stdout.splitlines() if line.startswith("sequence")]
    assert len(lines) == 2, client.stdout
    # Pushing along +x for 4 s at 25 mm/s moves the slider forwards (it starts 10 cm - radii ahead).
    assert all("slider ends at (" in line and "exact" in line for line in lines)
    final_x = float(re.search(r"ends at \(([-0-9.]+),", lines[0]).group(1))
    assert -0.15 < final_x < -0.15 + 0.1 + 1e-3, lines[0]
    assert service.returncode == 0 or service.returncode == -15, log
