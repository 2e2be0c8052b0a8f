"""The one coarse-model factory (parapush.prediction.coarse_models): the only place a coarse model
is built, and no silent fallback (the choice names the model and why)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.planning.presets import planner_preset
from parapush.planning.stack_planner import PlannerSources, build_planner, coarse_model_for
from parapush.prediction import ModelConfig
from parapush.prediction.coarse_models import (
    CoarseModelChoice,
    CoarseModelUnavailableError,
    build_coarse_model,
    build_coarse_models,
)
from parapush.scene import load_scene

ROOT = Path(__file__).resolve().parents[2]
FACTORY = ROOT / "src" / "parapush" / "prediction" / "coarse_models.py"
CYLINDERS = load_scene(ROOT / "config" / "scenes" / "clutter_fig1.yaml")
BOXES = dataclasses.replace(CYLINDERS, objects=tuple(
    dataclasses.replace(spec, shape="box", half_extents=(0.04, 0.05)) for spec in CYLINDERS.objects))


def coarse_model_constructions(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line name`` of every use of a ``...CoarseModel`` class in ``path``'s code: a call, or
    the class passed on to be called later (``partial(LearnedCoarseModel, ...)``); imports,
    definitions and docstrings are not uses."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None)
        if name is not None and isinstance(node.ctx, ast.Load) and name.endswith("CoarseModel"):
            found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_the_factory_is_the_only_place_a_coarse_model_is_built() -> None:
    sources = [path for folder in ("src", "bench", "scripts") for path in sorted((ROOT / folder).rglob("*.py"))]
    assert FACTORY in sources
    outside = [call for path in sources if path != FACTORY for call in coarse_model_constructions(path)]
    assert outside == [], f"coarse models built outside {FACTORY.relative_to(ROOT)}: {outside}"
    assert coarse_model_constructions(FACTORY), "the factory itself builds no coarse model: the check looks wrong"


def test_the_check_finds_a_construction(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text('"""AnalyticalCoarseModel(scene) in a docstring is no construction."""\n'
                      "from x import AnalyticalCoarseModel, y\nmodel = y.LearnedCoarseModel(scene)\n"
                      "other = partial(AnalyticalCoarseModel, s)\n")
    assert coarse_model_constructions(module, tmp_path) == ["probe.py:3 LearnedCoarseModel",
                                                            "probe.py:4 AnalyticalCoarseModel"]


def test_auto_uses_the_learned_model_where_it_serves_the_scene() -> None:
    choice = build_coarse_model(CYLINDERS, ModelConfig(coarse_model="auto"), resolve_overlaps=True)
    assert (type(choice.model).__name__, choice.name, choice.requested, choice.note) == (
        "LearnedCoarseModel", "learned", "auto", "")
    assert choice.describe() == "learned"


def test_auto_takes_the_general_model_where_the_cylinder_network_refuses_and_says_why() -> None:
    choice = build_coarse_model(BOXES, ModelConfig(coarse_model="auto"), resolve_overlaps=True)
    assert (type(choice.model).__name__, choice.name, choice.requested) == (
        "GeneralLearnedCoarseModel", "general", "auto")
    assert choice.note.startswith("learned coarse model unavailable: ") and "box" in choice.note
    assert "general" not in choice.note
    assert choice.describe() == f"general ({choice.note})"


def test_auto_falls_back_to_the_analytical_model_and_names_every_refusal() -> None:
    heavy = dataclasses.replace(BOXES, objects=tuple(dataclasses.replace(spec, mass=25.0) for spec in BOXES.objects))
    choice = build_coarse_model(heavy, ModelConfig(coarse_model="auto"), resolve_overlaps=True)
    assert isinstance(choice.model, AnalyticalCoarseModel)
    assert (choice.name, choice.requested) == ("analytical", "auto")
    learned, general = choice.note.split("; ")
    assert learned.startswith("learned coarse model unavailable: ")
    assert general.startswith("general coarse model unavailable: ") and "mass" in general
    refusal = r"coarse_model: 'general' is unavailable here: general: .*mass"
    with pytest.raises(CoarseModelUnavailableError, match=refusal):
        build_coarse_model(heavy, ModelConfig(coarse_model="general"), resolve_overlaps=True)


def test_an_explicit_learned_model_that_cannot_serve_the_scene_is_refused_naming_the_field() -> None:
    with pytest.raises(CoarseModelUnavailableError, match=r"coarse_model: 'learned' is unavailable here: .*box"):
        build_coarse_model(BOXES, ModelConfig(coarse_model="learned"), resolve_overlaps=True)
    with pytest.raises(ValueError, match="choice: expected one of"):
        build_coarse_model(CYLINDERS, ModelConfig(), resolve_overlaps=True, choice="neural")


def test_the_choice_carries_the_config_into_the_model() -> None:
    config = ModelConfig(coarse_model="analytical", analytical_rotation="isrr")
    choice = build_coarse_model(CYLINDERS, config, resolve_overlaps=False)
    assert (choice.model.rotation, choice.model.projector) == ("isrr", None)
    models, unavailable = build_coarse_models(BOXES, config, resolve_overlaps=False)
    assert sorted(models) == ["analytical", "general"] and list(unavailable) == ["learned"]
    assert "box" in unavailable["learned"]


def test_the_built_planner_names_its_coarse_model() -> None:
    sources = PlannerSources.load()
    box_sources = sources.with_overrides({"model": {"coarse_model": "auto"}})
    with build_planner(BOXES, box_sources) as built:
        assert built.coarse_model_name == "general" and "box" in built.coarse_model_note
    single = sources.with_overrides({"preset": "isrr2019"})
    with build_planner(CYLINDERS, single) as built:
        assert (built.coarse_model_name, built.coarse_model_note, built.coarse) == ("none", "", None)
    assert coarse_model_for(CYLINDERS, planner_preset("isrr2019"), sources.model) is None


def test_a_callers_own_propagator_is_named_after_its_type() -> None:
    model = AnalyticalCoarseModel(CYLINDERS)  # a caller's own propagator (tests and studies)
    choice = CoarseModelChoice.given(model)
    assert (choice.name, choice.requested, choice.note) == ("given:AnalyticalCoarseModel",) * 2 + ("",)
    with pytest.raises(TypeError, match="model: expected a Propagator"):
        CoarseModelChoice(model=object(), name="x", requested="x")
