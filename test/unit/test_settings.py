"""Settings declared once (parapush.settings) and the single-value checks (parapush.validation)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from parapush.execution.command_stream import CommandStreamSettings
from parapush.execution.gripper import GripperDriverSettings
from parapush.execution.safety import SafetyLimits
from parapush.execution.velocity_executor import ExecutorSettings
from parapush.learning.sampling import PushSamplingConfig
from parapush.physics.fine_settings import FineSettings
from parapush.prediction.config import ModelConfig, model_config_from_mapping
from parapush.settings import (
    SettingsError,
    check_settings,
    same_setting,
    setting,
    setting_fields,
    settings_from_mapping,
)
from parapush.sim.arm import ArmSettings
from parapush.stack_network import NetworkSettings
from parapush.validation import (
    check_choice,
    check_fields,
    check_finite_array,
    check_instance,
    check_integer,
    check_ipv4,
    check_optional_positive,
    check_positive,
    check_real,
)


@dataclass(frozen=True)
class InnerSettings:
    timestep: float = setting(0.001, "step", unit="s", above=0.0, maximum=0.01)
    mode: str = setting("a", "mode", choices=("a", "b"))

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class OuterSettings:
    workers: int | None = setting(None, "workers", kind=int, minimum=1, none="one per core", ros_none=0)
    enabled: bool = setting(True, "switch")
    inner: InnerSettings = field(default_factory=InnerSettings)

    def __post_init__(self) -> None:
        check_settings(self)


@dataclass(frozen=True)
class Counts:
    first: int
    second: int


def test_checks_name_the_value_and_convert():
    assert check_real("x", 2) == 2.0 and isinstance(check_real("x", 2), float)
    assert check_integer("n", np.int64(3), minimum=1) == 3
    assert check_optional_positive("t", None) is None
    with pytest.raises(ValueError, match=r"^t: expected a finite number > 0, got 0"):
        check_positive("t", 0)
    with pytest.raises(ValueError, match=r"^x: expected a finite number >= 0 and < 1, got 1.0"):
        check_real("x", 1.0, minimum=0.0, below=1.0)
    with pytest.raises(ValueError, match=r"^n: expected an integer >= 1"):
        check_integer("n", 2.0, minimum=1)
    for bad in (True, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match="^x: "):
            check_real("x", bad)
    with pytest.raises(ValueError, match=r"^m: expected one of \['a', 'b'\], got 'c'"):
        check_choice("m", "c", ("a", "b"))
    with pytest.raises(ValueError, match=r"^a: expected shape \(any, 2\), got \(3,\)"):
        check_finite_array("a", np.zeros(3), (None, 2))
    counts = Counts(first=np.int64(2), second=3)
    check_fields(counts, check_integer, "first", "second")  # converted in place
    assert type(counts.first) is int and counts.first == 2
    with pytest.raises(ValueError, match=r"^second: expected an integer, got 3.0"):
        check_fields(Counts(first=1, second=3.0), check_integer, "first", "second")
    inner = InnerSettings()
    assert check_instance("inner", inner, InnerSettings) is inner
    with pytest.raises(TypeError, match=r"^inner: expected InnerSettings, got OuterSettings"):
        check_instance("inner", OuterSettings(), InnerSettings)
    with pytest.raises(TypeError, match=r"^inner: expected the inner settings, got int"):
        check_instance("inner", 1, InnerSettings, "the inner settings")


def test_a_tuple_setting_is_a_list_of_reals_of_an_allowed_length():
    @dataclass(frozen=True)
    class Pose:
        pose: tuple[float, ...] = setting((0.5, 0.0, 0.0, 0.0), "pose", lengths=(4, 7))

        def __post_init__(self) -> None:
            check_settings(self)

    assert Pose(pose=[1, 2, 3, 4]).pose == (1.0, 2.0, 3.0, 4.0)
    assert settings_from_mapping(Pose, {"pose": np.arange(7)}).pose == tuple(float(v) for v in range(7))
    with pytest.raises(ValueError, match=r"^pose: expected 4 or 7 numbers, got 3"):
        Pose(pose=(1.0, 2.0, 3.0))
    with pytest.raises(SettingsError, match=r"^p\.pose\[1\]: expected a finite number"):
        settings_from_mapping(Pose, {"pose": [0.0, float("nan"), 0.0, 0.0]}, "p")
    for bad in ("1234", 1.0, {"x": 1.0}):
        with pytest.raises(ValueError, match=r"^pose: expected a list of numbers"):
            Pose(pose=bad)


def test_ipv4_check_names_the_value_and_checks_multicast():
    assert check_ipv4("host", "127.0.0.1") == "127.0.0.1"
    assert check_ipv4("group", "239.255.42.99", multicast=True) == "239.255.42.99"
    for bad in ("eth0", "300.1.2.3", "", None, "::1"):
        with pytest.raises(ValueError, match=r"^host: expected an IPv4 address"):
            check_ipv4("host", bad)
    with pytest.raises(ValueError, match=r"^group: 10.0.0.1 is not a multicast address"):
        check_ipv4("group", "10.0.0.1", multicast=True)


def test_settings_validate_in_post_init_naming_the_field():
    assert OuterSettings().workers is None
    assert OuterSettings(inner=InnerSettings(timestep=0.005)).inner.timestep == 0.005
    assert check_real("x", 1) == 1.0  # int accepted for float, converted
    with pytest.raises(ValueError, match=r"^timestep: expected a finite number > 0 and <= 0.01, got 0.02"):
        InnerSettings(timestep=0.02)
    with pytest.raises(ValueError, match=r"^workers: expected an integer >= 1, got 0"):
        OuterSettings(workers=0)
    with pytest.raises(ValueError, match=r"^enabled: expected true or false"):
        OuterSettings(enabled=1)
    with pytest.raises(ValueError, match=r"^mode: must be given"):
        InnerSettings(mode=None)
    assert OuterSettings(enabled=np.bool_(False)).enabled is False  # numpy bools are bools, converted


@dataclass(frozen=True)
class HandingOnSettings:
    """Hands its step on to InnerSettings: declares it there only."""

    step: float = same_setting(InnerSettings, "timestep")

    def __post_init__(self) -> None:
        check_settings(self)


def test_a_setting_handed_on_is_declared_once():
    (handed,) = setting_fields(HandingOnSettings)
    (declared,) = [item for item in setting_fields(InnerSettings) if item.path == "timestep"]
    assert (handed.info, handed.default) == (declared.info, declared.default)
    with pytest.raises(ValueError, match=r"^step: expected a finite number > 0 and <= 0.01"):
        HandingOnSettings(step=0.02)
    with pytest.raises(TypeError, match="InnerSettings has no setting 'steps'"):
        same_setting(InnerSettings, "steps")


def test_settings_from_mapping_nested_with_dotted_errors():
    settings = settings_from_mapping(OuterSettings, {"workers": 2, "inner": {"mode": "b"}})
    assert settings == OuterSettings(workers=2, inner=InnerSettings(mode="b"))
    assert settings_from_mapping(OuterSettings, None) == OuterSettings()
    with pytest.raises(SettingsError, match=r"^model.inner.timestep: expected a finite number > 0") as error:
        settings_from_mapping(OuterSettings, {"inner": {"timestep": -1.0}}, "model")
    assert error.value.path == "model.inner.timestep"
    with pytest.raises(SettingsError, match=r"^inner: unknown field\(s\) \['step'\]; known: \['mode', 'timestep'\]"):
        settings_from_mapping(OuterSettings, {"inner": {"step": 1}})
    with pytest.raises(SettingsError, match=r"^inner: expected a mapping, got list"):
        settings_from_mapping(OuterSettings, {"inner": [1]})


def test_setting_fields_flatten_nested_sections():
    paths = [item.path for item in setting_fields(OuterSettings, "model.")]
    assert paths == ["model.workers", "model.enabled", "model.inner.timestep", "model.inner.mode"]


def test_a_setting_needs_a_valid_default_and_a_description():
    with pytest.raises(TypeError, match="description"):
        setting(1.0)
    with pytest.raises(ValueError, match="^default: "):
        setting(-1.0, "negative default", minimum=0.0)
    with pytest.raises(TypeError, match="ros_none"):
        setting(None, "no stand-in", kind=int, none="auto")


def test_fine_settings_are_declared_settings():
    paths = {item.path for item in setting_fields(FineSettings)}
    assert {"timestep", "integrator", "pusher_collider", "cone"} <= paths
    with pytest.raises(ValueError, match=r"^integrator: expected one of"):
        FineSettings(integrator="verlet")


@pytest.mark.parametrize(
    ("settings_class", "declared", "invalid", "message"),
    [
        (CommandStreamSettings, {"rate_hz", "frame_id"}, {"rate_hz": 0.0}, r"^rate_hz: expected a finite number > 0"),
        (GripperDriverSettings, {"request_timeout_s", "retries", "poll_period_s", "geometry.stroke_m"},
         {"retries": 11}, r"^retries: expected an integer >= 0 and <= 10"),
        (ExecutorSettings, {"stop_repeats"}, {"stop_repeats": 0}, r"^stop_repeats: expected an integer >= 1"),
        (PushSamplingConfig, {"slider_count_weights", "direction_weights", "duration_range", "touching_gap_range"},
         {"direction_weights": (0.5, 0.5)}, r"^direction_weights: expected 3 numbers, got 2"),
        (ArmSettings, {"table_position_in_base", "table_rpy_in_base"}, {"table_rpy_in_base": (0.0, 0.0)},
         r"^table_rpy_in_base: expected 3 numbers, got 2"),
        (NetworkSettings, {"device_ports"}, {"device_ports": "free"}, r"^device_ports: expected one of"),
    ],
)
def test_library_settings_are_declared_settings(settings_class, declared, invalid, message):
    assert declared <= {item.path for item in setting_fields(settings_class)}
    required = {
        CommandStreamSettings: {}, GripperDriverSettings: {}, PushSamplingConfig: {}, ArmSettings: {},
        ExecutorSettings: {"stream": CommandStreamSettings(), "limits": SafetyLimits(-1.0, 1.0, -1.0, 1.0)},
        NetworkSettings: {"domain": 3, "discovery_range": "SUBNET"},
    }[settings_class]
    settings_class(**required)
    with pytest.raises(ValueError, match=message):
        settings_class(**required, **invalid)


def test_safety_limits_declare_their_limits_and_keep_the_box_required():
    assert {item.path for item in setting_fields(SafetyLimits)} == {
        "max_speed_m_s", "max_acceleration_m_s2", "stale_state_timeout_s", "command_timeout_s"
    }
    with pytest.raises(ValueError, match=r"^command_timeout_s: expected a finite number > 0"):
        SafetyLimits(-1.0, 1.0, -1.0, 1.0, command_timeout_s=0.0)
    with pytest.raises(TypeError):
        SafetyLimits()  # the workspace box has no default


def test_an_empty_path_is_the_ros_stand_in_only():
    """"" means "the shipped weights" in a ROS parameter; given in Python it is refused, not read as a path."""
    assert model_config_from_mapping({"general_weights": ""}).general_weights is None
    with pytest.raises(ValueError, match=r'^general_weights: empty; null \(or "" in a ROS parameter\) means the '
                                         r"shipped weights"):
        ModelConfig(general_weights="")
    with pytest.raises(SettingsError, match=r"^model\.learned_weights: empty"):
        settings_from_mapping(ModelConfig, {"learned_weights": ""}, "model")
