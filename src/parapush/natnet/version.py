"""NatNet bitstream versions and the layout features each one enables."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NatNetVersion", "SUPPORTED_VERSIONS"]


@dataclass(frozen=True, order=True)
class NatNetVersion:
    """A NatNet bitstream version major.minor.build.revision (each 0-255 on the wire).

    Only major.minor select the byte layout; build and revision are carried for reporting.
    """

    major: int
    minor: int
    build: int = 0
    revision: int = 0

    def __post_init__(self) -> None:
        for field_name in ("major", "minor", "build", "revision"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
                raise ValueError(f"NatNetVersion.{field_name} must be an int in 0..255, got {value!r}")

    @classmethod
    def parse(cls, text: str) -> NatNetVersion:
        """Parse ``"4.1"`` or ``"4.1.0.0"``; raises ValueError naming the bad text."""
        parts = text.strip().split(".")
        if not 2 <= len(parts) <= 4 or not all(part.isdigit() for part in parts):
            raise ValueError(f"NatNet version must look like 'major.minor[.build[.revision]]', got {text!r}")
        return cls(*(int(part) for part in parts))

    def as_bytes(self) -> bytes:
        """The four version bytes as sent in SERVERINFO and CONNECT."""
        return bytes((self.major, self.minor, self.build, self.revision))

    @property
    def major_minor(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def has_block_byte_sizes(self) -> bool:
        """4.1+: every FRAMEOFDATA block and every MODELDEF entry carries an int32 byte size."""
        return self.major_minor >= (4, 1)

    @property
    def has_assets(self) -> bool:
        """4.1+: FRAMEOFDATA has an asset block between skeletons and labelled markers."""
        return self.major_minor >= (4, 1)

    @property
    def has_precision_timestamp(self) -> bool:
        """4.x: the frame suffix carries uint32 precision seconds and fraction before the params.

        4.0 servers are ambiguous (the decoder accepts both); the encoder writes it for 4.0 as the
        OptiTrack Python sample (natnetsdk 4.1.1) reads it for every major version 4.
        """
        return self.major >= 4

    @property
    def has_marker_names(self) -> bool:
        """4.0+: rigid-body descriptions end with one NUL-terminated name per marker."""
        return self.major >= 4

    @property
    def has_description_orientation(self) -> bool:
        """4.2+: rigid-body descriptions carry a quaternion after the offset."""
        return self.major_minor >= (4, 2)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.build}.{self.revision}"


# Versions whose layout this codec follows byte for byte (and tests round trip).
SUPPORTED_VERSIONS: tuple[NatNetVersion, ...] = (
    NatNetVersion(3, 0),
    NatNetVersion(3, 1),
    NatNetVersion(4, 0),
    NatNetVersion(4, 1),
    NatNetVersion(4, 2),
)
