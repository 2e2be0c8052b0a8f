"""NatNet (OptiTrack Motive streaming protocol): data model, codec, versions.

Protocol note is completed with the codec.
"""

from parapush.natnet.frames import MocapFrame, RigidBody, frame_latency_s

__all__ = ["MocapFrame", "RigidBody", "frame_latency_s"]
