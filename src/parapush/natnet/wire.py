"""Bounds-checked little-endian reading and writing of NatNet payloads.

:class:`PayloadReader` turns every out-of-bounds read into a :class:`NatNetDecodeError` that names
the field and the byte offset, so no ``struct.error`` or ``IndexError`` can leave the decoder.
:class:`PayloadWriter` range-checks every value and names the field when one does not fit.
"""

from __future__ import annotations

import math
import numbers
import struct

from parapush.natnet.errors import NatNetDecodeError
from parapush.read_only import ReadOnly

__all__ = ["PayloadReader", "PayloadWriter"]

_INT16 = struct.Struct("<h")
_UINT16 = struct.Struct("<H")
_INT32 = struct.Struct("<i")
_UINT32 = struct.Struct("<I")
_UINT64 = struct.Struct("<Q")
_FLOAT32 = struct.Struct("<f")
_FLOAT64 = struct.Struct("<d")
_VEC3 = struct.Struct("<3f")
_VEC4 = struct.Struct("<4f")


class PayloadReader:
    """Sequential reader over one message payload (the bytes after the 4-byte header).

    Args:
        payload: the payload bytes.
        message: message name used in error texts (e.g. ``"FRAMEOFDATA"``).
    """

    def __init__(self, payload: bytes | bytearray | memoryview, message: str) -> None:
        self._payload = bytes(payload)
        self._message = message
        self.offset = 0

    @property
    def remaining(self) -> int:
        """Number of unread bytes."""
        return len(self._payload) - self.offset

    def error(self, what: str) -> NatNetDecodeError:
        """A decode error for this message at the current offset."""
        return NatNetDecodeError(
            f"{self._message}: {what} (at payload byte {self.offset} of {len(self._payload)})"
        )

    def require(self, size: int, field: str) -> None:
        """Raise unless ``size`` more bytes are available for ``field``."""
        if size < 0 or size > self.remaining:
            raise self.error(f"truncated: {field} needs {size} bytes, {self.remaining} left")

    def _unpack(self, packer: struct.Struct, field: str) -> tuple:
        self.require(packer.size, field)
        values = packer.unpack_from(self._payload, self.offset)
        self.offset += packer.size
        return values

    def int16(self, field: str) -> int:
        return self._unpack(_INT16, field)[0]

    def uint16(self, field: str) -> int:
        return self._unpack(_UINT16, field)[0]

    def int32(self, field: str) -> int:
        return self._unpack(_INT32, field)[0]

    def uint32(self, field: str) -> int:
        return self._unpack(_UINT32, field)[0]

    def uint64(self, field: str) -> int:
        return self._unpack(_UINT64, field)[0]

    def float32(self, field: str) -> float:
        return self._unpack(_FLOAT32, field)[0]

    def float64(self, field: str) -> float:
        return self._unpack(_FLOAT64, field)[0]

    def vec3(self, field: str) -> tuple[float, float, float]:
        return self._unpack(_VEC3, field)

    def vec4(self, field: str) -> tuple[float, float, float, float]:
        return self._unpack(_VEC4, field)

    def raw(self, size: int, field: str) -> bytes:
        self.require(size, field)
        data = bytes(self._payload[self.offset : self.offset + size])
        self.offset += size
        return data

    def skip(self, size: int, field: str) -> None:
        self.require(size, field)
        self.offset += size

    def count(self, field: str, *, min_item_size: int) -> int:
        """Read an int32 item count and check that ``count * min_item_size`` bytes can follow.

        The check bounds the work a forged count can cause before the truncation is detected.
        """
        value = self.int32(field)
        if value < 0:
            raise self.error(f"{field} is negative ({value})")
        if value * min_item_size > self.remaining:
            raise self.error(
                f"truncated: {field} = {value} needs at least {value * min_item_size} bytes, "
                f"{self.remaining} left"
            )
        return value

    def cstring_bytes(self, field: str) -> bytes:
        """Read a NUL-terminated string and return its bytes without the terminator."""
        end = self._payload.find(b"\0", self.offset)
        if end < 0:
            raise self.error(f"truncated: {field} has no NUL terminator")
        data = bytes(self._payload[self.offset : end])
        self.offset = end + 1
        return data

    def cstring(self, field: str) -> str:
        """Read a NUL-terminated UTF-8 string."""
        start = self.offset
        data = self.cstring_bytes(field)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.offset = start
            raise self.error(f"{field} is not valid UTF-8 ({exc.reason})") from None

    def fixed_cstring(self, size: int, field: str) -> str:
        """Read a char[size] field holding a NUL-padded UTF-8 string."""
        start = self.offset
        data = self.raw(size, field).split(b"\0", 1)[0]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.offset = start
            raise self.error(f"{field} is not valid UTF-8 ({exc.reason})") from None

    def expect_end(self) -> None:
        """Raise if unread bytes are left (the payload is longer than its content)."""
        if self.remaining:
            raise self.error(f"{self.remaining} unexpected trailing bytes")


class PayloadWriter:
    """Accumulates a payload; every method range-checks its value and names the field on error."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._size = 0

    size: ReadOnly[int] = ReadOnly("_size")

    def _append(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)

    def _pack(self, packer: struct.Struct, field: str, *values) -> None:
        try:
            self._append(packer.pack(*values))
        except struct.error as exc:
            raise ValueError(f"{field} = {values!r} does not fit: {exc}") from None

    def int16(self, value: int, field: str) -> None:
        self._pack(_INT16, field, _checked_int(value, -(2**15), 2**15 - 1, field))

    def uint16(self, value: int, field: str) -> None:
        self._pack(_UINT16, field, _checked_int(value, 0, 2**16 - 1, field))

    def int32(self, value: int, field: str) -> None:
        self._pack(_INT32, field, _checked_int(value, -(2**31), 2**31 - 1, field))

    def uint32(self, value: int, field: str) -> None:
        self._pack(_UINT32, field, _checked_int(value, 0, 2**32 - 1, field))

    def uint64(self, value: int, field: str) -> None:
        self._pack(_UINT64, field, _checked_int(value, 0, 2**64 - 1, field))

    def float32(self, value: float, field: str) -> None:
        self._pack(_FLOAT32, field, _checked_float32(value, field))

    def float64(self, value: float, field: str) -> None:
        number = _checked_real(value, field)
        if not math.isfinite(number):
            raise ValueError(f"{field} must be a finite float, got {value!r}")
        self._pack(_FLOAT64, field, number)

    def floats(self, values, count: int, field: str) -> None:
        values = tuple(values)
        if len(values) != count:
            raise ValueError(f"{field} must have {count} components, got {len(values)}")
        for index, value in enumerate(values):
            self.float32(value, f"{field}[{index}]")

    def raw(self, data: bytes) -> None:
        self._append(bytes(data))

    def cstring(self, text: str, field: str) -> None:
        encoded = _encode_text(text, field)
        self._append(encoded + b"\0")

    def fixed_cstring(self, text: str, size: int, field: str) -> None:
        encoded = _encode_text(text, field)
        if len(encoded) >= size:
            raise ValueError(f"{field} must encode to at most {size - 1} UTF-8 bytes, got {len(encoded)}")
        self._append(encoded + b"\0" * (size - len(encoded)))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def _checked_int(value, low: int, high: int, field: str) -> int:
    """``value`` as an int (numpy integers accepted) if it lies in [low, high]."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{field} must be an int, got {type(value).__name__} {value!r}")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{field} must be in {low}..{high}, got {number}")
    return number


def _checked_real(value, field: str) -> float:
    """``value`` as a float (numpy floats accepted); bools and non-numbers are refused."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{field} must be a float, got {type(value).__name__} {value!r}")
    return float(value)


_FLOAT32_MAX = 3.4028234663852886e38


def _checked_float32(value, field: str) -> float:
    number = _checked_real(value, field)
    if math.isfinite(number) and abs(number) > _FLOAT32_MAX:
        raise ValueError(f"{field} = {number} overflows float32")
    return number


def _encode_text(text: str, field: str) -> bytes:
    if not isinstance(text, str):
        raise ValueError(f"{field} must be a str, got {type(text).__name__}")
    encoded = text.encode("utf-8")
    if b"\0" in encoded:
        raise ValueError(f"{field} must not contain NUL characters: {text!r}")
    return encoded
