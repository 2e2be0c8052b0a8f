"""Reading YAML configuration files with errors that name the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

Loaded = TypeVar("Loaded")


def read_yaml(path: str | Path, error: type[Exception], what: str) -> Any:
    """The parsed content of a YAML file.

    Args:
        path: the file.
        error: the exception type to raise (the caller's, e.g. SceneError).
        what: what the file holds, for the message ("scene file").
    Raises:
        error: "<path>: cannot read <what> (<reason>)" or "<path>: invalid YAML (<details>)".
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as problem:
        raise error(f"{path}: cannot read {what} ({problem.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as problem:
        raise error(f"{path}: invalid YAML ({problem})") from None


def load_yaml(path: str | Path, convert: Callable[[Any], Loaded], error: type[Exception], what: str) -> Loaded:
    """``convert`` of the parsed YAML file ``path`` (:func:`read_yaml`).

    Raises:
        error: from :func:`read_yaml`, or ``convert``'s own ``error`` prefixed with "<path>: ".
    """
    data = read_yaml(path, error, what)
    try:
        return convert(data)
    except error as problem:
        raise error(f"{Path(path)}: {problem}") from None
