"""defan_pytest.registry: one strict, typed registry helper with a defan_pytest entry-point group."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Union

import pytest

from defan_pytest.errors import DefanError
from defan_pytest.registry import ENTRY_POINT_GROUP, Registry, RegistryError, UnknownEntry


def is_colour(entry: object) -> Union[bool, str]:
    return isinstance(entry, str) or "not a string"


def colours(**kwargs: object) -> Registry[str]:
    """A registry of colour names with two built-in entries."""
    reg: Registry[str] = Registry("colour", is_colour, key=str.lower, **kwargs)  # type: ignore[arg-type]
    reg.register("Red")
    reg.register("Green")
    reg.seal_built_ins()
    return reg


class UnknownColour(UnknownEntry):
    """What the colour registry of a test raises for an unknown name."""


def test_register_and_read_in_registration_order() -> None:
    reg = colours()
    assert reg.register("Blue") == "Blue"  # returned: register can decorate
    assert reg.names() == ("red", "green", "blue")
    assert reg.values() == ("Red", "Green", "Blue") == tuple(reg)
    assert reg.get("blue") == "Blue"
    assert "green" in reg and "Green" not in reg and len(reg) == 3


def test_a_name_is_registered_once_and_a_bad_entry_not_at_all() -> None:
    reg = colours()
    with pytest.raises(RegistryError, match="colour 'red' is already registered"):
        reg.register("RED")
    with pytest.raises(RegistryError, match="colour 'x': not a string"):
        Registry("colour", is_colour, key=lambda e: "x").register(42)
    with pytest.raises(RegistryError, match="its name must be a non-empty string"):
        reg.register("")
    assert reg.names() == ("red", "green")


def test_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownEntry, match=r"^unknown colour 'blue'; allowed: red, green$") as info:
        colours().get("blue")
    assert isinstance(info.value, RegistryError) and isinstance(info.value, DefanError)
    with pytest.raises(UnknownColour, match="unknown colour 'blue'"):
        colours(unknown=UnknownColour).get("blue")


def test_built_in_entries_cannot_be_removed_others_can() -> None:
    changes: list[str] = []
    reg = colours(on_change=lambda: changes.append("changed"))
    assert changes == ["changed", "changed"]  # the built-in entries
    changes.clear()
    with pytest.raises(RegistryError, match="colour 'red' is built in and cannot be removed"):
        reg.unregister("red")
    reg.register("Blue")
    reg.unregister("blue")
    reg.unregister("blue")  # gone already: nothing happens, nothing changes
    assert reg.names() == ("red", "green")
    assert changes == ["changed", "changed"]  # the registration and the removal


def test_snapshot_and_restore_undo_a_test_s_registrations() -> None:
    changes: list[str] = []
    reg = colours(on_change=lambda: changes.append("changed"))
    changes.clear()
    before = reg.snapshot()
    reg.register("Blue")
    reg.restore(before)
    assert reg.names() == ("red", "green")
    assert changes == ["changed", "changed"]
    reg.restore(before)  # already as it was: no change to report
    assert changes == ["changed", "changed"]


def fake_distribution(root: Path, entry_points: str) -> None:
    """An installed distribution as importlib.metadata finds it on sys.path: its dist-info
    folder (metadata and entry points) and the module its entry points name."""
    info = root / "defan_colours-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: defan-colours\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    (root / "defan_colours.py").write_text(
        textwrap.dedent(
            """
            TEAL = "Teal"

            def violet():
                return "Violet"
            """
        ),
        encoding="utf-8",
    )


def test_entries_come_from_entry_points_once_on_first_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_distribution(
        tmp_path,
        f"""
        [{ENTRY_POINT_GROUP}]
        colour.teal = defan_colours:TEAL
        colour.violet = defan_colours:violet
        shade.dark = defan_colours:TEAL
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = colours(entry_point_prefix="colour")
    # The entry itself (a string) or a callable returning it; other kinds' names are not ours.
    assert reg.names() == ("red", "green", "teal", "violet")
    assert reg.get("violet") == "Violet"
    reg.unregister("teal")
    assert reg.names() == ("red", "green", "violet")  # loaded once: not read again
    # Without a prefix a registry loads nothing.
    assert colours().names() == ("red", "green")


def test_a_broken_entry_point_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_distribution(tmp_path, f"[{ENTRY_POINT_GROUP}]\ncolour.lost = defan_colours:LOST\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RegistryError, match=r"colour: entry point 'colour.lost' \(defan_colours:LOST\): AttributeError"):
        colours(entry_point_prefix="colour").names()
