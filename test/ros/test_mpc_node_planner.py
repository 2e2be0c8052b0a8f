"""One construction path (issue 28): for the same configuration files, the planner a benchmark
builds equals the one the MPC node builds for a goal (optimizer, multi-fidelity, pipeline and MPC
settings, cost terms and weights, the loop model's config, the coarse model's type and settings).

The node reads config/model.yaml and config/mpc.yaml as the launch files give them (--params-file);
the benchmark reads the same files through ``PlannerSources.load``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rclpy.parameter import Parameter

from parapush.graph import config_dir
from parapush.nodes.mpc import MpcNode
from parapush.planning.push_goal import PushGoal
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.scene import load_scene

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCENE_FILE = "clutter_fig1.yaml"  # cylinders: the coarse model resolves to the learned one


@pytest.fixture
def realtime_mpc():
    sys.path.insert(0, str(BENCH))
    try:
        import realtime_mpc

        yield realtime_mpc
    finally:
        sys.path.remove(str(BENCH))


def node_for_files(context) -> MpcNode:
    arguments = ["--ros-args", "--params-file", str(config_dir() / "model.yaml"),
                 "--params-file", str(config_dir() / "mpc.yaml")]
    # local predictions: the node builds its predictor at once (no service to wait for)
    return MpcNode(context=context, cli_args=arguments,
                   parameter_overrides=[Parameter("scene_file", value=SCENE_FILE),
                                        Parameter("prediction_source", value="local")])


@pytest.mark.parametrize("planner", ["", "isrr2019"])  # "": the node's default (mpc.yaml's preset)
def test_the_benchmark_builds_the_planner_the_node_builds(ros_context, realtime_mpc, planner):
    node = node_for_files(ros_context)
    try:
        sources = PlannerSources.load()
        scene = load_scene(config_dir() / "scenes" / SCENE_FILE)
        node_planner = node.goal_planner(PushGoal(scene=node.scene, planner=planner or None))
        name = planner or sources.preset.name
        assert node_planner.preset.name == name
        assert realtime_mpc.planner_overrides(name, sources) == ({} if not planner else {"preset": planner})
        seed = sources.planner.optimizer.seed  # a benchmark run's seed; the node plans with the file's
        with realtime_mpc.build(name, scene, seed, sources) as bench_planner:
            assert bench_planner.settings() == node_planner.settings()
        if node_planner.coarse is not None:
            assert node_planner.settings()["coarse"]["type"] == "LearnedCoarseModel"
        # an override changes the built planner, and the planner says what was overridden
        changed = build_planner(scene, sources.with_overrides({"preset": name, "optimizer": {"samples": 7}}),
                                model=node_planner.model)
        assert changed.settings()["optimizer"]["samples"] == 7 and changed.overrides["optimizer"] == {"samples": 7}
        assert changed.settings() != node_planner.settings()
    finally:
        node.close()
        node.destroy_node()
