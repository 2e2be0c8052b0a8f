"""Robotiq 2F-85 protocol knowledge: the Modbus register model, finger geometry, device behaviour.

Nothing here talks to a device; :mod:`parapush.execution.gripper` is the driver and
:mod:`parapush.sim.gripper_emulator` the emulated device.
"""
