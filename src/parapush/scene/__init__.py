"""Scene descriptions (YAML) and the papers' state layout."""

from parapush.scene.description import (
    GoalRegion,
    ObjectPatch,
    ObjectSpec,
    Obstacle,
    Pusher,
    Scene,
    SceneError,
    Table,
    load_scene,
    scene_from_dict,
)
from parapush.scene.outline import OUTLINE_KINDS, Outline, plate_mass_properties
from parapush.scene.snapshot import SceneSnapshot
from parapush.scene.state import StateLayout, wrap_angle

__all__ = [
    "OUTLINE_KINDS",
    "Outline",
    "GoalRegion",
    "Obstacle",
    "ObjectPatch",
    "ObjectSpec",
    "Pusher",
    "Scene",
    "SceneError",
    "SceneSnapshot",
    "StateLayout",
    "Table",
    "load_scene",
    "plate_mass_properties",
    "scene_from_dict",
    "wrap_angle",
]
