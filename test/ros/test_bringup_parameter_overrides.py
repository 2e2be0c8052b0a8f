"""A bringup's ``--param`` overrides reach the node even where its own file sets the parameter: with a
``/**`` section among the files (config/model.yaml's) rcl let the node's section win over ``-p``
(``mpc.planner_config`` and ``mpc.state_timeout`` were ignored), so the overrides travel in the last
parameter file instead."""

from __future__ import annotations

import json
import subprocess
import sys

from parapush.programs.bringup import Bringup

PROBE = """
import json, sys, rclpy
from rclpy.node import Node
rclpy.init(args=sys.argv)
node = Node("probe")
values = {name: node.declare_parameter(name, default).value
          for name, default in (("planner_config", "planner.yaml"), ("state_timeout", 0.5),
                                ("scene_file", ""), ("replan_proposal_probe", False))}
print(json.dumps(values))
"""


def test_overrides_win_over_the_profile_files_with_their_types() -> None:
    bringup = Bringup("sim", overrides={"mpc": {"planner_config": "/tmp/robust.yaml", "state_timeout": "1.25",
                                                "replan_proposal_probe": "true"}})
    try:
        entry = next(entry for entry in bringup.entries() if entry.name == "mpc")
        command = bringup.command(entry)
        ros_arguments = command[command.index("--ros-args"):]
        assert any(item.endswith("model.yaml") for item in ros_arguments)  # its /** section made -p lose
        probe = subprocess.run([sys.executable, "-c", PROBE, *ros_arguments], capture_output=True, text=True,
                               timeout=60, check=True)
        values = json.loads(probe.stdout.strip().splitlines()[-1])
        assert values["planner_config"] == "/tmp/robust.yaml"
        assert values["state_timeout"] == 1.25 and values["replan_proposal_probe"] is True
        assert values["scene_file"] == str(bringup.scene_path)
    finally:
        bringup.stop()
