"""Prediction latency through ROS vs a direct library call, side by side in one run.

The prediction service node runs as its own process (as deployed); this process calls it
over Fast DDS on loopback and, interleaved, calls an identical PredictionEngine directly.
``--rounds`` rounds, each of ``--repeats`` calls per request size (1 sequence x 4 controls,
20 x 4; the sizes take turns within a round). Over all calls of a size it reports the median and p90 of:
the direct call, the ROS round trip, the time the service spent inside the engine
(``time_total`` of the response), and the ROS overhead = round trip - time inside.
The overhead is then split, from in-process timings of the same messages in the same run,
into serialisation (what any ROS call of this size pays: request and response CDR
(de)serialisation plus the service's message <-> array conversions) and the rest
(transport, executors, wake-ups), which is what the target bounds.

The README quotes ranges over the rounds of each round's median (p50 over its calls):
``ros_overhead_ms_<size>_min``/``_max`` per request size, and ``rest_ms_min``/``_max`` over
both sizes; ``--reference`` writes them to ``bench/reference/prediction_latency.json`` (see
``bench/reference.py``; run it on an idle machine).

    python bench/prediction_latency.py [--quick] [--rounds 5] [--repeats 40] [--reference]

Target (issue): ROS overhead under 2 ms plus serialisation (the ``rest`` column).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from parareal_pushing.srv import PredictTrajectory
from rclpy.serialization import deserialize_message, serialize_message

import reference as bench_reference
from parapush.graph import config_dir, resolve_scene_path
from parapush.nodes.conversions import controls_to_msg, state_to_msg
from parapush.nodes.prediction_messages import fill_prediction_response, prediction_request_from_msg
from parapush.nodes.prediction_service import SERVICE_QOS
from parapush.parareal import MODELS
from parapush.prediction import ModelConfig, PredictionEngine, PredictionRequest, load_model_config
from parapush.prediction.request import iterations_to_interface
from parapush.scene import load_scene
from parareal_common import bench_arguments

MODEL_CONFIG = config_dir() / "model.yaml"

RESULTS = Path(__file__).resolve().parent / "results"
SCENE_NAME = "isrr_obstacle.yaml"


def request_parts(scene, sequences: int, seed: int = 0):
    layout = scene.layout
    initial = layout.compose(scene.pusher.position, np.array([spec.pose for spec in scene.objects]))
    rng = np.random.default_rng(seed)
    base = np.tile([0.025, 0.0], (4, 1))
    controls = np.stack([base + (0 if index == 0 else rng.normal(0, 0.003, base.shape)) for index in range(sequences)])
    return initial, controls, np.ones(controls.shape[:2])


def ros_request(scene, initial, controls, model, iterations):
    request = PredictTrajectory.Request()
    request.initial_state = state_to_msg(initial, scene)
    request.sequences = [controls_to_msg(sequence, 1.0) for sequence in controls]
    request.model = model
    request.iterations = iterations_to_interface(iterations)
    return request


def call(client, request, timeout=120.0):
    future = client.call_async(request)
    rclpy.spin_until_future_complete(client.node, future, timeout_sec=timeout)  # as the README's client
    if not future.done():
        raise TimeoutError("no answer from the prediction service")
    return future.result()


def serialisation_time(scene, message, outcome) -> float:
    """s: what one call of ``message`` costs in (de)serialisation and conversions, in-process.

    Client: serialise the request, deserialise the response; service: deserialise the request,
    convert it for the engine, fill the response from the engine's ``outcome``, serialise it.
    """
    started = time.perf_counter()
    received = deserialize_message(serialize_message(message), PredictTrajectory.Request)
    prediction_request_from_msg(received, scene)
    response = fill_prediction_response(PredictTrajectory.Response(), outcome, received, scene)
    deserialize_message(serialize_message(response), PredictTrajectory.Response)
    return time.perf_counter() - started


def percentile(values, q):
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def round_medians(values: np.ndarray) -> np.ndarray:
    """ms: the median of each round of ``values`` (rounds x repeats, s)."""
    return np.median(np.asarray(values) * 1000.0, axis=1)


def readme_figures(rows: list[dict]) -> dict[str, float]:
    """The README's ranges (ms): per request size, min and max over the rounds of the round's
    median ROS overhead; over both sizes, min and max of the round's median rest."""
    figures = {}
    for row in rows:
        size = f"{row['sequences']}x{row['controls']}"
        figures[f"ros_overhead_ms_{size}_min"] = min(row["ros_overhead_ms_p50_per_round"])
        figures[f"ros_overhead_ms_{size}_max"] = max(row["ros_overhead_ms_p50_per_round"])
    rests = [value for row in rows for value in row["rest_ms_p50_per_round"]]
    figures["rest_ms_min"], figures["rest_ms_max"] = min(rests), max(rests)
    return figures


def main() -> int:
    parser = bench_arguments(__doc__.split("\n\n")[0], quick="2 rounds of 8 calls")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the README's ranges are over them)")
    parser.add_argument("--repeats", type=int, default=40, help="calls per request size and round")
    parser.add_argument("--model", default="coarse", choices=MODELS,
                        help="model of the requests (coarse isolates the ROS overhead)")
    bench_reference.add_reference_argument(parser)
    options = parser.parse_args()
    load_before = bench_reference.load_average()
    rounds, repeats = (2, 8) if options.quick else (options.rounds, options.repeats)
    if rounds < 1 or repeats < 1:
        parser.error("--rounds and --repeats: need at least 1")
    scene = load_scene(resolve_scene_path(SCENE_NAME))
    domain = str(150 + os.getpid() % 50)
    environment = {**os.environ, "ROS_DOMAIN_ID": domain}
    service = subprocess.Popen(
        [sys.executable, "-m", "parapush.nodes.prediction_service", "--ros-args",
         "--params-file", str(MODEL_CONFIG), "-p", f"scene_file:={SCENE_NAME}", "-p", "model.workers:=2",
         "-p", "model.schedule:=parareal"],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )
    rclpy.init(domain_id=int(domain))
    node = rclpy.create_node("latency_bench")
    client = node.create_client(PredictTrajectory, "predict_trajectory", qos_profile=SERVICE_QOS)
    client.node = node
    rows = []
    try:
        if not client.wait_for_service(timeout_sec=60):
            raise RuntimeError("the prediction service did not come up")
        config: ModelConfig = dataclasses.replace(load_model_config(MODEL_CONFIG), workers=2, schedule="parareal")
        with PredictionEngine(scene, config) as engine:  # what the service builds from the same parameters
            iterations = 1 if options.model == "parareal" else None  # None: the configured model.iterations
            sizes = {}
            for sequences in (1, 20):
                initial, controls, durations = request_parts(scene, sequences)
                message = ros_request(scene, initial, controls, options.model, iterations)
                direct_request = PredictionRequest(initial, controls, durations, model=options.model,
                                                   iterations=iterations)
                for _ in range(3):  # warm up both paths
                    engine.predict(direct_request)
                    call(client, message)
                sizes[sequences] = (message, direct_request)
            timings = {sequences: {key: np.zeros((rounds, repeats))
                                   for key in ("direct", "round_trip", "inside", "serialisation")}
                       for sequences in sizes}
            for round_index in range(rounds):
                for sequences, (message, direct_request) in sizes.items():
                    timing = timings[sequences]
                    for repeat in range(repeats):  # interleaved: this shared machine's speed drifts over seconds
                        started = time.perf_counter()
                        outcome = engine.predict(direct_request)
                        timing["direct"][round_index, repeat] = time.perf_counter() - started
                        timing["serialisation"][round_index, repeat] = serialisation_time(scene, message, outcome)
                        started = time.perf_counter()
                        response = call(client, message)
                        timing["round_trip"][round_index, repeat] = time.perf_counter() - started
                        if not response.success:
                            raise RuntimeError(response.message)
                        timing["inside"][round_index, repeat] = response.time_total
            for sequences, (message, _) in sizes.items():
                timing = timings[sequences]
                overhead = timing["round_trip"] - timing["inside"]
                rest = overhead - timing["serialisation"]
                rows.append({
                    "sequences": sequences, "controls": 4, "model": options.model, "rounds": rounds,
                    "repeats": repeats,
                    "direct_ms_p50": percentile(timing["direct"], 50),
                    "direct_ms_p90": percentile(timing["direct"], 90),
                    "ros_ms_p50": percentile(timing["round_trip"], 50),
                    "ros_ms_p90": percentile(timing["round_trip"], 90),
                    "inside_service_ms_p50": percentile(timing["inside"], 50),
                    "ros_overhead_ms_p50": percentile(overhead, 50), "ros_overhead_ms_p90": percentile(overhead, 90),
                    "serialisation_ms": percentile(timing["serialisation"], 50),
                    "rest_ms_p50": percentile(rest, 50),
                    "rest_ms_p90": percentile(rest, 90),
                    "ros_overhead_ms_p50_per_round": round_medians(overhead).tolist(),
                    "rest_ms_p50_per_round": round_medians(rest).tolist(),
                    "request_bytes": len(serialize_message(message)),
                })
    finally:
        node.destroy_node()
        rclpy.shutdown()
        service.terminate()
        service.wait(timeout=10)
    header = (f"{'request':>10} {'model':>8} {'direct p50':>11} {'ROS p50':>9} {'ROS p90':>9} "
              f"{'in service':>11} {'overhead p50':>13} {'overhead p90':>13} {'serialise':>10} {'rest p50':>9} "
              f"{'rest p90':>9} {'bytes':>7}")
    print(header)
    for row in rows:
        print(f"{row['sequences']:>4} x {row['controls']:<3} {row['model']:>8} {row['direct_ms_p50']:>9.2f}ms "
              f"{row['ros_ms_p50']:>7.2f}ms {row['ros_ms_p90']:>7.2f}ms {row['inside_service_ms_p50']:>9.2f}ms "
              f"{row['ros_overhead_ms_p50']:>11.2f}ms {row['ros_overhead_ms_p90']:>11.2f}ms "
              f"{row['serialisation_ms']:>8.2f}ms {row['rest_ms_p50']:>7.2f}ms {row['rest_ms_p90']:>7.2f}ms "
              f"{row['request_bytes']:>7}")
    print("target: ROS overhead (round trip - time inside the service) under 2 ms plus serialisation, "
          "i.e. rest = overhead - serialisation under 2 ms: "
          + ", ".join(f"{row['sequences']} x {row['controls']} {'met' if row['rest_ms_p50'] < 2.0 else 'MISSED'}"
                      for row in rows))
    figures = readme_figures(rows)
    print(f"over {rounds} rounds, the round's median: ROS overhead "
          + ", ".join(f"{row['sequences']} x {row['controls']} {min(row['ros_overhead_ms_p50_per_round']):.2f}-"
                      f"{max(row['ros_overhead_ms_p50_per_round']):.2f} ms" for row in rows)
          + f"; rest {figures['rest_ms_min']:.2f}-{figures['rest_ms_max']:.2f} ms")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "prediction_latency.json").write_text(json.dumps(rows, indent=2) + "\n")
    _plot(rows)
    bench_reference.write_figures("prediction_latency", figures, reference=options.reference,
                                  load_before=load_before, quick=options.quick)
    return 0


def _plot(rows) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{row['sequences']} x {row['controls']}" for row in rows]
    x = np.arange(len(rows))
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.bar(x - 0.2, [row["direct_ms_p50"] for row in rows], 0.4, label="direct library call")
    axes.bar(x + 0.2, [row["ros_ms_p50"] for row in rows], 0.4, label="ROS round trip")
    for index, row in enumerate(rows):
        axes.annotate(f"+{row['ros_overhead_ms_p50']:.2f} ms", (index + 0.2, row["ros_ms_p50"]), ha="center",
                      va="bottom", fontsize=8)
    axes.set_xticks(x, labels)
    axes.set_ylabel("median latency (ms)")
    axes.set_title(f"PredictTrajectory latency ({rows[0]['model']} model)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(RESULTS / "prediction_latency.png", dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    raise SystemExit(main())
