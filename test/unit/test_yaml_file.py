"""The one rule for a parameter naming a configuration file: a path, or a bare name in config/ (issue 32)."""

from __future__ import annotations

import pytest

from parapush.graph import config_dir
from parapush.yaml_file import config_file


def test_a_bare_name_is_the_config_directorys_file_whatever_the_working_directory_holds(tmp_path, monkeypatch):
    (tmp_path / "planner.yaml").write_text("here: true\n")
    monkeypatch.chdir(tmp_path)
    assert config_file("planner.yaml") == config_dir() / "planner.yaml"
    with pytest.raises(FileNotFoundError, match=r"'planner.yaml' is not a file in .*elsewhere"):
        config_file("planner.yaml", tmp_path / "elsewhere")


def test_a_value_with_a_directory_part_is_a_path(tmp_path, monkeypatch):
    own = tmp_path / "planner.yaml"
    own.write_text("here: true\n")
    monkeypatch.chdir(tmp_path)
    assert config_file(str(own)) == own
    assert config_file("./planner.yaml").resolve() == own.resolve()
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_file("~/planner.yaml") == own


@pytest.mark.parametrize("value", ["no_such_file.yaml", "./no_such_file.yaml", "/no/such/file.yaml", ""])
def test_a_missing_file_is_refused_naming_the_value(value):
    with pytest.raises(FileNotFoundError, match=repr(value) if value else "empty"):
        config_file(value)
