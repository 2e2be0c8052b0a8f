"""Test-wide settings: every DDS participant of a test run stays in its own domain."""

import os

# scripts/run sets a per-run domain; a bare `pytest` gets one derived from its PID so that
# parallel runs on one machine do not cross-talk.
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
