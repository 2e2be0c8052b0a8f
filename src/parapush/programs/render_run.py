"""Render a run folder's video from its recording, after the run: ``run.gif`` beside ``recording.mcap``.

Reads ``/sim/true_state`` (else ``/scene_state``, e.g. on the robot) and ``/planned_trajectory``
from the MCAP, on the recording's clock (each message's log time), and draws the frames with
:func:`parapush.reporting.run_video.render_run_video`. The demo calls it after every run
(``--no-video`` skips it); it also renders any run folder again:

    python -m parapush.programs.render_run runs/NAME [--scene clutter_fig1.yaml] [--frame-period 0.2]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from mcap.reader import make_reader
from parareal_pushing.msg import PredictedTrajectory, SceneState
from rclpy.serialization import deserialize_message

from parapush.graph import resolve_scene_path
from parapush.nodes.conversions import MessageError, msg_to_snapshot, trajectory_from_msg
from parapush.reporting.run_video import VideoSummary, render_run_video
from parapush.scene import Scene, load_scene

STATE_TOPICS = ("/sim/true_state", "/scene_state")
"""Where the drawn states come from, in order of preference."""
PLAN_TOPIC = "/planned_trajectory"
VIDEO_NAME = "run.gif"


@dataclasses.dataclass(frozen=True)
class RecordedRun:
    """States and plans of a recording, times in s on the recording's clock (log time).

    Attributes:
        state_topic: the topic the states came from.
        state_times: (T,) s.
        states: (T, D).
        plan_times: (P,) s.
        plans: P arrays (N + 1, D).
    """

    state_topic: str
    state_times: np.ndarray
    states: np.ndarray
    plan_times: np.ndarray
    plans: list[np.ndarray]


def read_recording(path: Path, scene: Scene) -> RecordedRun:
    """The states (of the first of :data:`STATE_TOPICS` that has any) and the plans of an MCAP recording.

    Raises:
        ValueError: the recording has no state of ``scene`` on any of :data:`STATE_TOPICS`.
    """
    topics = {topic: SceneState for topic in STATE_TOPICS} | {PLAN_TOPIC: PredictedTrajectory}
    states: dict[str, list[tuple[float, np.ndarray]]] = {topic: [] for topic in STATE_TOPICS}
    plans: list[tuple[float, np.ndarray]] = []
    with path.open("rb") as stream:
        for _schema, channel, message in make_reader(stream).iter_messages(topics=list(topics)):
            decoded = deserialize_message(message.data, topics[channel.topic])
            seconds = message.log_time * 1e-9
            try:
                if channel.topic == PLAN_TOPIC:
                    plans.append((seconds, trajectory_from_msg(decoded, scene)))
                else:
                    states[channel.topic].append((seconds, msg_to_snapshot(decoded, scene).state))
            except MessageError:
                continue  # another scene's message, or a malformed one: not drawn
    for topic in STATE_TOPICS:
        if states[topic]:
            ordered = sorted(states[topic], key=lambda item: item[0])
            plans.sort(key=lambda item: item[0])
            return RecordedRun(topic, np.array([time for time, _ in ordered]), np.stack([s for _, s in ordered]),
                               np.array([time for time, _ in plans]), [plan for _, plan in plans])
    raise ValueError(f"{path}: no scene state of scene '{scene.name}' on {list(STATE_TOPICS)}")


def render_recording(folder: Path, scene: Scene, *, title: str = "", frame_period: float = 0.2) -> VideoSummary:
    """Render ``folder/recording.mcap`` into ``folder/run.gif``."""
    run = read_recording(folder / "recording.mcap", scene)
    return render_run_video(scene, run.state_times, run.states, folder / VIDEO_NAME, plan_times=run.plan_times,
                            plans=run.plans, frame_period=frame_period, title=title)


def main(args=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="run folder with recording.mcap (and metrics.json)")
    parser.add_argument("--scene", default=None, help="scene YAML path or name (default: metrics.json's scene_file)")
    parser.add_argument("--frame-period", type=float, default=0.2, help="s of run time per frame")
    options = parser.parse_args(args)
    metrics_path = options.folder / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else {}
    scene_file = options.scene or metrics.get("scene_file")
    if not scene_file:
        print(f"[render_run] error: no --scene and no scene_file in {metrics_path}", file=sys.stderr)
        return 2
    scene = load_scene(resolve_scene_path(scene_file))
    title = f"{scene.name}: {metrics['outcome']}" if "outcome" in metrics else scene.name
    try:
        summary = render_recording(options.folder, scene, title=title, frame_period=options.frame_period)
    except (ValueError, FileNotFoundError) as error:
        print(f"[render_run] error: {error}", file=sys.stderr)
        return 1
    print(f"[render_run] wrote {summary.path}: {summary.frames} frames, {summary.duration:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
