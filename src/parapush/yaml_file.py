"""Reading YAML configuration files with errors that name the file, and finding them: the
stack's one rule for a node parameter naming a configuration file (:func:`config_file`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from parapush.graph import config_dir

Loaded = TypeVar("Loaded")


def config_file(value: str | Path, directory: str | Path | None = None) -> Path:
    """The configuration file a node parameter names: a path (a value with a directory part,
    ``./planner.yaml``, ``/etc/x.yaml``, ``~/x.yaml``: as given, ``~`` expanded), or a bare
    file name (``planner.yaml``): that file in ``directory`` (default: the package's
    ``config/``, :func:`parapush.graph.config_dir`), whatever the working directory holds.

    Raises:
        FileNotFoundError: naming ``value`` and where it was looked for (the caller names
            the parameter).
    """
    text = str(value)
    if not text:
        raise FileNotFoundError("no file given (empty)")
    path = Path(text).expanduser()
    if path.name == text and text not in (".", ".."):  # a bare name: the config directory's
        folder = Path(directory) if directory is not None else config_dir()
        if not (folder / text).is_file():
            raise FileNotFoundError(f"{text!r} is not a file in {folder} (a bare name; a file elsewhere is given "
                                    f"by its path, e.g. ./{text})")
        return folder / text
    if not path.is_file():
        raise FileNotFoundError(f"{text!r} is not a file")
    return path


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
