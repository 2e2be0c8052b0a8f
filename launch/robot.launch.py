"""The stack on the real robot: ros2 launch parareal_pushing robot.launch.py [scene_file:=...]

Needs OptiTrack Motive streaming NatNet, the Robotiq gripper on its serial port and an arm
velocity interface (e.g. MoveIt Servo) listening for TwistStamped; see the README. Device
addresses as arguments: natnet_server:=HOST natnet_local:=IP natnet_multicast:=true|false
gripper_address:=/dev/ttyUSB0|tcp://host:port twist_topic:=...; sim_devices:=true runs it against
the simulated devices instead; params_file:=FILE overlays any node's parameters.
"""

from parapush.programs.launch_graph import generate_graph_launch_description


def generate_launch_description():
    return generate_graph_launch_description("real")
