"""Errors raised by the NatNet codec and the NatNet client."""

from __future__ import annotations

__all__ = ["NatNetDecodeError", "NatNetTimeoutError"]


class NatNetDecodeError(ValueError):
    """A NatNet datagram is truncated or malformed.

    This is the only exception the decoder raises for bad input bytes: the message says which
    message and which field was wrong and at which byte offset of the payload.
    """


class NatNetTimeoutError(TimeoutError):
    """A NatNet server did not answer a request (CONNECT, REQUEST_MODELDEF) in time."""
