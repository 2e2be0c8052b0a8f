"""config/foxglove_layout.json: valid JSON whose panels exist and read only what the demo records."""

from __future__ import annotations

from foxglove_layout import layout_panels, layout_topics, load_layout
from parapush.programs.demo import RECORDED_TOPICS


def test_the_layout_parses_and_its_tree_names_its_panels():
    layout = load_layout()
    panels = layout_panels(layout["layout"])
    assert sorted(panels) == sorted(layout["configById"])
    kinds = {panel.split("!")[0] for panel in panels}
    assert {"3D", "Plot", "DiagnosticSummary"} <= kinds


def test_the_layout_reads_only_recorded_topics_and_their_fields():
    topics = layout_topics(load_layout())
    assert {"/visualization/scene", "/visualization/plan", "/diagnostics", "/visualization/replan_time",
            "/visualization/distance_to_goal", "/visualization/pusher_speed"} <= set(topics)
    unrecorded = sorted(set(topics) - set(RECORDED_TOPICS))
    assert not unrecorded, f"the layout names topics the demo does not record: {unrecorded}"
    for topic, paths in topics.items():
        fields = RECORDED_TOPICS[topic].get_fields_and_field_types()
        for path in paths:
            assert not path or path[0].split("[")[0] in fields, f"{topic}: no field {path[0]!r} in {sorted(fields)}"
