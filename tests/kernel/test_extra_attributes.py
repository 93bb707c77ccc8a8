"""Lease ``extra`` attributes that the core or a plugin interprets are checked where they enter:
an LWF document, an API request (tests/daemon/test_api_extra.py) and a stored row
(tests/daemon/test_service_restore.py)."""

from __future__ import annotations

import pytest

from lease_manager import ExtraAttribute, hookimpl
from lease_manager.errors import LeaseManagerError, TraceError
from lease_manager.kernel.extra_attributes import (
    CORE_BY_NAME,
    ExtraAttributeError,
    check_extra,
    registry,
)
from lease_manager.kernel.resources import parse_site
from lease_manager.plugins import Plugins
from lease_manager.workload.lwf import read_lwf

from daemon_support import lwf, lwf_request


@pytest.mark.parametrize("attribute, value, parsed", [
    (ExtraAttribute("n", "", maximum=10), "2.5", 2.5),
    (ExtraAttribute("n", "", maximum=10), 10, 10.0),
    (ExtraAttribute("n", "", kind="integer", minimum=1, maximum=8), "4", 4),
    (ExtraAttribute("b", "", kind="boolean"), "Yes", True),
    (ExtraAttribute("b", "", kind="boolean"), False, False),
    (ExtraAttribute("t", "", kind="text", maximum=3), "abc", "abc"),
    (ExtraAttribute("c", "", kind="choice", choices=("high", "low")), "low", "low"),
])
def test_values_each_kind_takes(attribute, value, parsed):
    assert attribute.parse(value) == parsed


@pytest.mark.parametrize("attribute, value, message", [
    (ExtraAttribute("n", "", maximum=10), "x", "'x' is not a number"),
    (ExtraAttribute("n", "", maximum=10), "\u0663", "is not a number (ASCII digits only)"),
    (ExtraAttribute("n", "", maximum=10), 1e100, "1e+100 is out of range: a number from 0 to 10"),
    (ExtraAttribute("n", "", maximum=10), -1, "-1 is out of range"),
    (ExtraAttribute("n", "", maximum=10), 10**400, "is out of range"),
    (ExtraAttribute("n", "", maximum=10), "nan", "is not a finite number"),
    (ExtraAttribute("n", "", maximum=10), True, "True is not a number from 0 to 10"),
    (ExtraAttribute("n", "", kind="integer", maximum=8), 2.5, "2.5 is not a whole number"),
    (ExtraAttribute("b", "", kind="boolean"), "maybe", "'maybe' is not true or false"),
    (ExtraAttribute("t", "", kind="text", maximum=3), "abcd", "is not a non-empty text"),
    (ExtraAttribute("t", "", kind="text", maximum=3), "", "is not a non-empty text"),
    (ExtraAttribute("t", "", kind="text", maximum=3), 5, "5 is not a non-empty text"),
    (ExtraAttribute("c", "", kind="choice", choices=("high", "low")), "mid",
     "'mid' is not one of high, low"),
])
def test_values_each_kind_refuses(attribute, value, message):
    with pytest.raises(ValueError) as caught:
        attribute.parse(value)
    assert message in str(caught.value)


def test_the_core_checks_its_own_attributes_and_leaves_the_others():
    check_extra({"disk-image": "a", "disk-image-size": "1024", "preemptible": "no",
                 "anything": "goes", "watts": 30})
    with pytest.raises(ExtraAttributeError) as caught:
        check_extra({"disk-image": "a", "disk-image-size": "x"})
    assert str(caught.value) == "extra attribute 'disk-image-size': 'x' is not a number"
    with pytest.raises(ExtraAttributeError, match="1e\\+14 is out of range: a number from 0 to "
                                                  "1e\\+09"):
        check_extra({"disk-image-size": 1e14})
    assert set(CORE_BY_NAME) == {"disk-image", "disk-image-size", "preemptible", "watts",
                                 "simul_userrate"}


def test_a_name_declared_twice_differently_is_refused():
    same = ExtraAttribute("servers", "servers", kind="integer", minimum=1, maximum=64)
    assert registry([same, same])["servers"] == same
    with pytest.raises(ValueError, match="'servers' is declared twice, differently"):
        registry([same, ExtraAttribute("servers", "servers", maximum=8)])
    with pytest.raises(ValueError, match="'disk-image-size' is declared twice"):
        registry([ExtraAttribute("disk-image-size", "GB")])


class Declares:
    """A plugin interpreting ``urgency`` (high or low)."""

    @hookimpl
    def register_extra_attributes(self):
        return [ExtraAttribute("urgency", "how urgent", kind="choice", choices=("high", "low"))]


class Clashes:
    @hookimpl
    def register_extra_attributes(self):
        return [ExtraAttribute("urgency", "how urgent", kind="text")]


def test_plugins_declare_theirs_and_a_clash_names_the_plugins():
    plugins = Plugins(entry_points=False, extra=[Declares()])
    assert plugins.extra_attributes["urgency"].choices == ("high", "low")
    assert "disk-image-size" in plugins.extra_attributes
    with pytest.raises(LeaseManagerError, match="'urgency' is declared twice, differently"):
        Plugins(entry_points=False, extra=[Declares(), Clashes()])


def lwf_with(extra: str = "", software: str = "<none/>") -> bytes:
    text = lwf(lwf_request("a", extra=f"<extra>{extra}</extra>" if extra else ""))
    return text.replace("<software><none/></software>", f"<software>{software}</software>"
                        ).encode()


def test_lwf_attributes_are_checked_where_they_are_read():
    types = parse_site("1 CPU:1 Memory:1024").types
    plugins = Plugins(entry_points=False, extra=[Declares()])
    ok = read_lwf("w.lwf", types, data=lwf_with('<attr name="urgency" value="high"/>'),
                  attributes=plugins.extra_attributes)
    assert ok.leases[0].extra["urgency"] == "high"
    with pytest.raises(TraceError) as caught:
        read_lwf("w.lwf", types, data=lwf_with('<attr name="urgency" value="soon"/>'),
                 attributes=plugins.extra_attributes)
    assert str(caught.value).startswith("w.lwf:")
    assert "<attr urgency>" in str(caught.value) and "'soon' is not one of high, low" in \
        str(caught.value)
    big = '<disk-image id="img" size="100000000000000"/>'
    with pytest.raises(TraceError, match="<disk-image size>.*out of range: a number from 0 to "
                                         "1e\\+09"):
        read_lwf("w.lwf", types, data=lwf_with(software=big))
    fine = read_lwf("w.lwf", types, data=lwf_with(software='<disk-image id="img" size="1024"/>'))
    assert fine.leases[0].extra == {"disk-image": "img", "disk-image-size": 1024}
