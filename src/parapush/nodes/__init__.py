"""Thin rclpy nodes of parareal_pushing.

Every module here imports rclpy and the generated ``parareal_pushing`` interfaces; the
rest of :mod:`parapush` never does. Nodes only convert messages, declare and validate
parameters, run timers, and call the core. Each node module has a ``main()`` used by
``ros2 run parareal_pushing <node>`` and by the bringup.
"""
