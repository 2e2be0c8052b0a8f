"""parapush.validation.duplicate_names."""

from __future__ import annotations

from parapush.validation import duplicate_names


def test_duplicate_names_lists_each_repeated_name_once_sorted() -> None:
    assert duplicate_names(["b", "a", "b", "c", "a", "b"]) == ["a", "b"]


def test_duplicate_names_of_unique_or_no_names_is_empty() -> None:
    assert duplicate_names(["a", "b"]) == []
    assert duplicate_names([]) == []


def test_duplicate_names_takes_any_iterable_once() -> None:
    assert duplicate_names(name for name in ("x", "x")) == ["x"]
