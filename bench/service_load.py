"""The prediction service as a shared resource: small requests while a large one runs.

A real prediction service process is started (as deployed, ``config/model.yaml``, 2 fine
workers) and called over Fast DDS on loopback from this process:

1. idle: ``--idle`` small requests (1 sequence x 4 controls of 1 s, the configured model:
   Parareal K = 1), one after the other: ``small_p50_idle_s``;
2. under load: a large request (``--large-sequences`` x 16 controls of 1 s, model ``fine``)
   is sent, and while it runs a small request is sent every 0.2 s (without waiting for the
   previous one): ``small_p95_under_load_s`` over the small requests sent while the large one
   was in progress, ``large_s`` the large one's round trip;
3. an over-budget request (64 x 32 controls of 10 s, model ``fine``: the issue's max-size
   request, 211 s of service time before the budget) must be refused up front with its estimate.

``lost`` counts the requests (small, large) that got no successful answer within
``--timeout`` s. Writes ``bench/results/service_load.json``.

    python bench/service_load.py [--idle 20] [--large-sequences 64] [--timeout 300] [--parameter NAME:=VALUE]

Targets (issue 19): small_p95_under_load_s <= 3 x small_p50_idle_s; lost = 0; the
over-budget request refused with its estimate. Run it under ``flock /tmp/parapush-timing.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from parareal_pushing.srv import PredictTrajectory
from rclpy.executors import MultiThreadedExecutor

import reference as bench_reference
from parapush.graph import config_dir, resolve_scene_path
from parapush.nodes.conversions import controls_to_msg, state_to_msg
from parapush.nodes.prediction_service import SERVICE_QOS
from parapush.prediction.request import iterations_to_interface
from parapush.scene import load_scene

RESULTS = Path(__file__).resolve().parent / "results"
SCENE_NAME = "isrr_obstacle.yaml"
LARGE_CONTROLS = 16
"""Controls of the large request (of 1 s each): about 5 s on 2 workers, some 25 small requests beside it."""
SMALL_PERIOD = 0.2
"""s between small requests under load (the issue's)."""
PUSH = np.array([[0.025, 0.0], [0.025, 0.005], [0.02, -0.01], [0.025, 0.0]])


def request_message(scene, sequences: int, controls: int, duration: float, model: str, seed: int):
    """A PredictTrajectory request: ``sequences`` noisy copies of the push pattern, ``controls`` long."""
    initial = scene.layout.compose(scene.pusher.position, np.array([spec.pose for spec in scene.objects]))
    rng = np.random.default_rng(seed)
    pattern = np.resize(PUSH, (controls, 2))
    request = PredictTrajectory.Request()
    request.initial_state = state_to_msg(initial, scene)
    request.sequences = [
        controls_to_msg(pattern + (0.0 if index == 0 else rng.normal(0.0, 0.002, pattern.shape)), duration)
        for index in range(sequences)
    ]
    request.model = model
    request.iterations = iterations_to_interface(None)  # the configured model.iterations
    return request


class Calls:
    """Requests in flight: send time, answer time, answer."""

    def __init__(self, client) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.records: list[dict] = []

    def send(self, request, kind: str) -> dict:
        record = {"kind": kind, "sent": time.perf_counter(), "answered": None, "response": None}
        with self.lock:
            self.records.append(record)
        future = self.client.call_async(request)

        def done(completed) -> None:
            record["answered"] = time.perf_counter()
            record["response"] = completed.result()

        future.add_done_callback(done)
        return record

    def wait(self, record: dict, timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        while record["answered"] is None and time.perf_counter() < deadline:
            time.sleep(0.001)
        return record["answered"] is not None


def latency(record: dict) -> float:
    return record["answered"] - record["sent"]


def answered(record: dict) -> bool:
    return record["answered"] is not None and record["response"] is not None and record["response"].success


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=20, help="small requests measured on the idle service")
    parser.add_argument("--large-sequences", type=int, default=64, help="sequences of the large request")
    parser.add_argument("--timeout", type=float, default=300.0, help="s to wait for any answer")
    parser.add_argument("--parameter", action="append", default=[], metavar="NAME:=VALUE",
                        help="another parameter of the service (repeatable), e.g. model.backend:=processes")
    options = parser.parse_args()
    load_before = bench_reference.load_average()
    scene = load_scene(resolve_scene_path(SCENE_NAME))
    domain = str(150 + os.getpid() % 50)
    environment = {**os.environ, "ROS_DOMAIN_ID": domain}
    service = subprocess.Popen(
        [sys.executable, "-m", "parapush.nodes.prediction_service", "--ros-args",
         "--params-file", str(config_dir() / "model.yaml"), "-p", f"scene_file:={SCENE_NAME}",
         "-p", "model.workers:=2", *(item for name in options.parameter for item in ("-p", name))],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )
    rclpy.init(domain_id=int(domain))
    node = rclpy.create_node("service_load_bench")
    client = node.create_client(PredictTrajectory, "predict_trajectory", qos_profile=SERVICE_QOS)
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    calls = Calls(client)
    small = request_message(scene, 1, 4, 1.0, "", seed=1)
    large = request_message(scene, options.large_sequences, LARGE_CONTROLS, 1.0, "fine", seed=2)
    over_budget = request_message(scene, 64, 32, 10.0, "fine", seed=3)
    try:
        if not client.wait_for_service(timeout_sec=60):
            raise RuntimeError("the prediction service did not come up")
        for _ in range(3):  # warm up (and let the service measure the fine rate)
            if not calls.wait(calls.send(small, "warm-up"), options.timeout):
                raise RuntimeError("no answer to a warm-up request")
        idle: list[dict] = []
        for _ in range(options.idle):
            idle.append(calls.send(small, "idle"))
            calls.wait(idle[-1], options.timeout)
        refused = calls.send(over_budget, "over budget")
        calls.wait(refused, options.timeout)
        large_record = calls.send(large, "large")
        under_load = []
        while large_record["answered"] is None and time.perf_counter() - large_record["sent"] < options.timeout:
            time.sleep(SMALL_PERIOD)
            if large_record["answered"] is None:
                under_load.append(calls.send(small, "under load"))
        for record in [large_record, *under_load]:
            calls.wait(record, options.timeout)
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.shutdown()
        service.terminate()
        service.wait(timeout=10)
    measured = [record for record in calls.records if record["kind"] in ("idle", "under load", "large")]
    lost = sum(not answered(record) for record in measured)
    idle_latencies = [latency(record) for record in idle if answered(record)]
    load_latencies = [latency(record) for record in under_load if answered(record)]
    refusal = refused["response"].message if refused["response"] is not None else "no answer"
    refused_over_budget = int(refused["response"] is not None and not refused["response"].success
                              and refusal.startswith("refused:") and "estimated" in refusal)
    results = {
        "small_p50_idle_s": float(np.percentile(idle_latencies, 50)) if idle_latencies else None,
        "small_p95_under_load_s": float(np.percentile(load_latencies, 95)) if load_latencies else None,
        "small_p50_under_load_s": float(np.percentile(load_latencies, 50)) if load_latencies else None,
        "small_max_under_load_s": max(load_latencies) if load_latencies else None,
        "small_under_load": len(under_load),
        "small_in_service_p50_idle_s": float(np.median([r["response"].time_total for r in idle if answered(r)])),
        "small_in_service_p95_under_load_s": float(np.percentile(
            [r["response"].time_total for r in under_load if answered(r)], 95)) if load_latencies else None,
        "large_s": latency(large_record) if answered(large_record) else None,
        "large_request": f"{options.large_sequences} x {LARGE_CONTROLS} controls of 1 s, model fine",
        "small_request": "1 x 4 controls of 1 s, configured model (Parareal K=1)",
        "lost": lost,
        "refused_over_budget": refused_over_budget,
        "refusal_message": refusal,
        "service_parameters": options.parameter,
        "load_average": {"before": load_before, "after": bench_reference.load_average()},
        "machine": bench_reference.machine(),
    }
    ratio = (results["small_p95_under_load_s"] / results["small_p50_idle_s"]
             if results["small_p95_under_load_s"] and results["small_p50_idle_s"] else None)
    results["p95_under_load_over_p50_idle"] = ratio
    results["targets_met"] = bool(ratio is not None and ratio <= 3.0 and lost == 0 and refused_over_budget == 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "service_load.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({key: value for key, value in results.items() if key != "machine"}, indent=2))
    print("targets (small p95 under load <= 3 x small p50 idle; lost = 0; over-budget refused): "
          + ("met" if results["targets_met"] else "MISSED"))
    return 0 if results["targets_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
