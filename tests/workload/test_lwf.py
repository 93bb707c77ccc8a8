"""Haizea's LWF: reading every lease type, errors with their lines, writing, round trips."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from lease_manager.errors import TraceError
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.kernel.resources import NodeSet, ResourceTypes, parse_site
from lease_manager.workload.lwf import is_lwf, lwf_schema, read_lwf, schema_path
from lease_manager.workload.lwf_writer import format_site, format_time, write_lwf

from support import ROOT

EXAMPLE = ROOT / "tests" / "lwf" / "example.lwf"
TYPES = ResourceTypes(("CPU", "Memory"))


def same(a: Lease, b: Lease) -> None:
    """Assert two leases are the same request (everything LWF holds; a lease that does not say
    whether it is preemptible is, and LWF says so: ``preemptible="true"``, as Haizea needs)."""
    assert (a.id, a.type, a.submit, a.requested_duration, a.actual_duration, a.start_request,
            a.deadline, a.source_id, {"preemptible": True, **a.extra}) == \
           (b.id, b.type, b.submit, b.requested_duration, b.actual_duration, b.start_request,
            b.deadline, b.source_id, {"preemptible": True, **b.extra})
    assert a.vms.counts == b.vms.counts
    np.testing.assert_array_equal(a.vms.vectors, b.vms.vectors)


def line_of(text: str, marker: str) -> int:
    """The (1-based) line of the first line of ``text`` containing ``marker``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


def doc(requests: str, *, site: bool = True) -> str:
    """An LWF document around ``requests`` (lease-request elements)."""
    head = '<?xml version="1.0"?>\n<lease-workload name="t">\n'
    if site:
        head += ('  <site>\n    <resource-types names="CPU Memory"/>\n    <nodes>\n'
                 '      <node-set numnodes="4"><res type="CPU" amount="100"/>'
                 '<res type="Memory" amount="1024"/></node-set>\n    </nodes>\n  </site>\n')
    return head + "  <lease-requests>\n" + requests + "  </lease-requests>\n</lease-workload>\n"


def request(arrival: str = "00:00:00.00", *, start: str = "<start/>",
            duration: str = "00:30:00.00", nodes: str | None = None, extra: str = "",
            lease_attrs: str = 'id="1" preemptible="no"', before: str = "") -> str:
    nodes = nodes if nodes is not None else (
        '<node-set numnodes="2"><res type="CPU" amount="100"/>'
        '<res type="Memory" amount="512"/></node-set>')
    return (f'    <lease-request arrival="{arrival}">\n{before}'
            f'      <lease {lease_attrs}>\n'
            f'        <nodes>\n          {nodes}\n        </nodes>\n'
            f'        {start}\n'
            f'        <duration time="{duration}"/>\n{extra}'
            f'        <software><none/></software>\n'
            f'      </lease>\n    </lease-request>\n')


def write(tmp_path: Path, text: str, name: str = "t.lwf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error(path: Path, types: ResourceTypes | None = TYPES) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_lwf(path, types)
    return info.value


# ------------------------------------------------------------------------------- reading
def test_example_workload():
    w = read_lwf(EXAMPLE, TYPES)
    text = EXAMPLE.read_text()
    assert w.name == "example"
    assert w.description == "One lease of each type on Haizea's four-node example site."
    assert w.site.types == TYPES
    np.testing.assert_array_equal(w.site.capacity, [[100, 1024]] * 4)
    assert format_site(w.site) == "4 CPU:100 Memory:1024"
    be, ar, im, dl = w.leases

    assert (be.id, be.type, be.submit, be.requested_duration, be.actual_duration) == \
        (1, LeaseType.BEST_EFFORT, 0, 1800, 1200)
    assert be.start_request is None and be.deadline is None
    assert be.vms.counts == (2,)
    np.testing.assert_array_equal(be.vms.vectors, [[100, 512]])
    assert be.extra == {"preemptible": True, "disk-image": "foobar.img", "disk-image-size": 1024}
    assert be.source_id == "1"
    assert be.origin == f"{EXAMPLE}:{line_of(text, '<lease-request arrival')}"

    assert (ar.id, ar.type, ar.submit, ar.start_request, ar.requested_duration,
            ar.actual_duration) == (2, LeaseType.ADVANCE_RESERVATION, 900, 1800, 1800, 1800)
    assert ar.extra == {"preemptible": False, "stress-on": "CPU,Memory",
                        "simul_pricemarkup": "1.5"}
    assert ar.vms.count == 4

    assert (im.type, im.submit, im.start_request, im.actual_duration) == \
        (LeaseType.IMMEDIATE, 1200.5, None, None)
    assert math.isinf(im.requested_duration) and im.unlimited
    assert im.vms.counts == (1, 2)   # two groups; the CPU instances are pooled
    np.testing.assert_array_equal(im.vms.vectors, [[50, 256], [100, 1024]])
    assert im.extra == {"preemptible": True}

    assert (dl.type, dl.submit, dl.start_request, dl.requested_duration, dl.deadline) == \
        (LeaseType.DEADLINE, 86400, 90000, 3600, 100800)
    np.testing.assert_array_equal(dl.vms.vectors, [[100, 0]])   # no Memory given: 0
    assert [lease.source_id for lease in w.leases] == ["1", "2", "3", "4"]


def test_first_id_and_types_from_the_site():
    w = read_lwf(EXAMPLE, first_id=10)   # no types given: the file's site's
    assert [lease.id for lease in w.leases] == [10, 11, 12, 13]
    assert w.leases[0].vms.vectors.shape == (1, 2)


def test_run_types_may_have_more_resources():
    w = read_lwf(EXAMPLE, ResourceTypes(("Disk", "Memory", "CPU")))
    np.testing.assert_array_equal(w.leases[0].vms.vectors, [[0, 512, 100]])


def test_start_now_with_a_deadline_is_a_deadline_lease_starting_at_arrival(tmp_path):
    path = write(tmp_path, doc(request("00:10:00", start="<start><now/></start>",
                                       extra='        <deadline time="02:00:00"/>\n')))
    (lease,) = read_lwf(path, TYPES).leases
    assert (lease.type, lease.start_request, lease.deadline) == (LeaseType.DEADLINE, 600, 7200)


def test_best_effort_start_with_a_deadline(tmp_path):
    path = write(tmp_path, doc(request(extra='        <deadline time="02:00:00"/>\n')))
    (lease,) = read_lwf(path, TYPES).leases
    assert (lease.type, lease.start_request, lease.deadline) == (LeaseType.DEADLINE, None, 7200)


def test_time_forms(tmp_path):
    reqs = (request("90", duration="unlimited", lease_attrs="")
            + request("01:30", duration="3600.5")
            + request("1:00:00:00", duration="1:00:00:00.25"))
    leases = read_lwf(write(tmp_path, doc(reqs)), TYPES).leases
    assert [lease.submit for lease in leases] == [90, 90, 86400]
    assert [lease.requested_duration for lease in leases] == [math.inf, 3600.5, 86400.25]
    assert leases[0].source_id is None and leases[0].extra == {}


def test_no_site_and_no_requests(tmp_path):
    path = write(tmp_path, doc("", site=False))
    w = read_lwf(path, TYPES)
    assert (w.site, w.leases, w.name) == (None, [], "t")
    err = error(path, None)
    assert "describes no site" in str(err)


def test_gzipped_file(tmp_path):
    path = tmp_path / "example.lwf.gz"
    path.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    assert is_lwf(path)
    assert len(read_lwf(path, TYPES).leases) == 4


def test_is_lwf_tells_xml_from_swf(tmp_path):
    assert is_lwf(EXAMPLE)
    assert not is_lwf(ROOT / "traces" / "sdsc-blue-600requests.swf")
    assert not is_lwf(tmp_path / "missing.lwf")


# -------------------------------------------------------------------------------- errors
def test_malformed_xml_names_the_line(tmp_path):
    text = doc(request()).replace("</nodes>", "</node>", 1)
    err = error(write(tmp_path, text))
    assert err.line == line_of(text, "</node>")
    assert err.file == str(tmp_path / "t.lwf")
    assert err.field == "XML"
    assert "malformed XML" in str(err) and str(err).startswith(f"{err.file}:{err.line}: XML: ")


def test_missing_numnodes(tmp_path):
    text = doc(request(nodes='<node-set><res type="CPU" amount="100"/></node-set>'))
    err = error(write(tmp_path, text))
    assert err.line == line_of(text, "<node-set><res")
    assert err.field == "<node-set>"
    assert "the attribute 'numnodes' is required" in str(err)


@pytest.mark.parametrize("numnodes", ["0", "-2", "two"])
def test_numnodes_must_be_positive(tmp_path, numnodes):
    text = doc(request(nodes=f'<node-set numnodes="{numnodes}"><res type="CPU" amount="1"/>'
                             f'</node-set>'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "numnodes=\"" + numnodes), "<node-set numnodes>")
    assert f"'{numnodes}' is not an integer above 0" in str(err)


def test_unknown_element(tmp_path):
    text = doc(request(extra="        <priority value=\"high\"/>\n"))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<priority"), "<priority>")
    assert "element not allowed here" in str(err)


def test_unknown_attribute(tmp_path):
    text = doc(request(lease_attrs='id="1" priority="2"'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "priority="), "<lease priority>")
    assert "unknown attribute 'priority'" in str(err)


def test_missing_element(tmp_path):
    text = doc(request()).replace('        <duration time="00:30:00.00"/>\n', "")
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<lease id"), "<lease>")
    assert "missing" in str(err) and "duration" in str(err)


def test_other_root_element(tmp_path):
    err = error(write(tmp_path, "<?xml version='1.0'?>\n<workload/>\n"))
    assert err.line == 2 and "root element must be <lease-workload>" in str(err)


@pytest.mark.parametrize("value, message", [
    ("abc", "'abc' is not a duration"),
    ("00:75:00", "minutes and seconds must be below 60"),
    ("0", "must be at least 0.001 s"),
    ("00:00:00.00", "must be at least 0.001 s"),
    # too short to plan (a lease of 1e-9 s used to end with length 0)
    ("0.000000001", "must be at least 0.001 s"),
    # too long (99999999999999999999 s raised a TypeError in host selection)
    ("99999999999999999999", "is too long (at most 1e+10 s"),
    # Unicode digits are not digits here (the schema's pattern said \d)
    ("\u0661\u0660", "is not a duration"),
])
def test_bad_duration(tmp_path, value, message):
    text = doc(request(duration=value))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<duration"), "<duration time>")
    assert message in str(err)


@pytest.mark.parametrize("value, message", [
    ("soon", "'soon' is not a time"),
    ("unlimited", "'unlimited' is not a time"),
    ("1:25:00:00", "hours must be below 24"),
])
def test_bad_arrival(tmp_path, value, message):
    text = doc(request(value))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<lease-request arrival"),
                                     "<lease-request arrival>")
    assert message in str(err)


def test_bad_exact_start_and_realduration(tmp_path):
    text = doc(request(start='<start><exact time="12:61:00"/></start>'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<exact"), "<exact time>")
    text = doc(request(before='      <realduration time="0"/>\n'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<realduration"), "<realduration time>")


def test_unknown_resource_type(tmp_path):
    text = doc(request(nodes='<node-set numnodes="1"><res type="CPU" amount="100"/>\n'
                             '          <res type="GPU" amount="1"/></node-set>'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, 'type="GPU"'), "<res type>")
    assert "unknown resource type 'GPU' (the site has CPU, Memory)" in str(err)
    # against the run's types, not the file's site
    err = error(write(tmp_path, doc(request())), ResourceTypes(("CPU",)))
    assert "unknown resource type 'Memory'" in str(err)


def test_site_node_set_with_an_undeclared_type(tmp_path):
    text = doc("").replace('<res type="Memory"', '<res type="Disk"')
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, 'type="Disk"'), "<res type>")


def test_resource_type_given_twice(tmp_path):
    text = doc(request(nodes='<node-set numnodes="1"><res type="CPU" amount="1"/>'
                             '<res type="CPU" amount="2"/></node-set>'))
    err = error(write(tmp_path, text))
    assert "resource type 'CPU' is given twice" in str(err)


def test_amount_and_instances(tmp_path):
    text = doc(request(nodes='<node-set numnodes="1">\n<res type="CPU" amount="1">'
                             '<instance amount="1"/></res></node-set>'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<instance"), "<res amount>")
    text = doc(request(nodes='<node-set numnodes="1"><res type="CPU" amount="-5"/></node-set>'))
    assert "'-5' is below the minimum 0" in str(error(write(tmp_path, text)))
    text = doc(request(nodes='<node-set numnodes="1"><res type="CPU" amount="0"/></node-set>'))
    assert "every resource amount is 0" in str(error(write(tmp_path, text)))


def test_requests_out_of_arrival_order_are_sorted_with_a_warning(tmp_path, caplog):
    text = doc(request("00:10:00") + request("00:10:00") + request("00:05:00"))
    path = write(tmp_path, text)
    workload = read_lwf(path, TYPES)
    assert [lease.submit for lease in workload.leases] == [300, 600, 600]
    assert [lease.id for lease in workload.leases] == [1, 2, 3]
    assert workload.leases[0].origin == f"{path}:{line_of(text, '00:05:00')}"
    assert workload.warnings == [
        f"{path}:{line_of(text, '00:05:00')}: 1 lease request(s) out of arrival order (the "
        f"first arrives at 300 s, after 600 s): sorted by arrival time"]
    assert workload.warnings[0] in caplog.text


def test_reserved_and_repeated_attribute_names(tmp_path):
    extra = '        <extra>\n          <attr name="preemptible" value="no"/>\n        </extra>\n'
    text = doc(request(extra=extra))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, '<attr name="preemptible"'), "<attr name>")
    extra = ('        <extra><attr name="a" value="1"/>\n'
             '          <attr name="a" value="2"/></extra>\n')
    text = doc(request(extra=extra))
    err = error(write(tmp_path, text))
    assert err.line == line_of(text, 'value="2"')
    assert "attribute name 'a' is given twice" in str(err)


def test_deadline_before_the_start(tmp_path):
    text = doc(request("01:00:00", start='<start><exact time="02:00:00"/></start>',
                       extra='        <deadline time="02:00:00"/>\n'))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, "<deadline"), "<deadline time>")
    assert "not after the earliest start" in str(err)


def test_bad_preemptible_value(tmp_path):
    text = doc(request(lease_attrs='preemptible="maybe"'))
    err = error(write(tmp_path, text))
    assert err.field == "<lease preemptible>" and "'maybe' is not one of" in str(err)


def test_missing_file(tmp_path):
    err = error(tmp_path / "nope.lwf")
    assert str(err) == f"{tmp_path / 'nope.lwf'}: trace file not found"


# ------------------------------------------------------------------------------- writing
def test_round_trip_of_the_example(tmp_path):
    w = read_lwf(EXAMPLE, TYPES)
    out = tmp_path / "copy.lwf"
    assert write_lwf(out, w.leases, site=w.site, name=w.name, description=w.description) == 4
    w2 = read_lwf(out, TYPES)
    assert (w2.name, w2.description) == (w.name, w.description)
    np.testing.assert_array_equal(w2.site.capacity, w.site.capacity)
    for a, b in zip(w.leases, w2.leases, strict=True):
        same(a, b)
    # Haizea's own reader wants these forms
    text = out.read_text()
    assert '<lease-request arrival="00:15:00.00">' in text
    assert '<lease id="2" preemptible="false">' in text
    assert "<software>" in text and "<none/>" in text


def test_write_then_read(tmp_path):
    cpu_mem = np.array([1.0, 512.0])
    leases = [
        Lease(1, LeaseType.BEST_EFFORT, 0.1, VMRequest.uniform(3, cpu_mem), 3600.1, 42.25,
              source_id="job-7", extra={"user": "alice", "tags": ["a", "b"], "n": 3,
                                        "stress-on": {"Memory", "CPU"}, "flag": True}),
        Lease(2, LeaseType.ADVANCE_RESERVATION, 100, VMRequest.uniform(1, [0.5, 0.0]),
              1e-3, start_request=7 * 86400 + 0.5),
        Lease(3, LeaseType.IMMEDIATE, 100, VMRequest((1, 2), np.array([[1, 10], [2, 20.5]])),
              math.inf, extra={"preemptible": False}),
        Lease(4, LeaseType.DEADLINE, 1e6 + 1 / 3, VMRequest.uniform(2, cpu_mem), 60,
              start_request=2e6, deadline=2e6 + 120),
        Lease(5, LeaseType.DEADLINE, 2e6, VMRequest.uniform(2, cpu_mem), 60, deadline=2e6 + 60.5,
              extra={"disk-image": "img", "disk-image-size": 600}),
    ]
    path = tmp_path / "w.lwf"
    write_lwf(path, leases, types=TYPES)
    back = read_lwf(path, TYPES).leases
    expected_extra = {"preemptible": True, "user": "alice", "tags": "a,b", "n": "3",
                      "stress-on": "CPU,Memory", "flag": "yes"}   # preemptible: Haizea's
    assert back[0].extra == expected_extra
    back[0].extra = leases[0].extra
    for a, b in zip(leases, back, strict=True):
        same(a, b)
    assert read_lwf(path, TYPES).name == "w"


def test_round_trip_keeps_float_times_exactly():
    from lease_manager.kernel.timeutil import parse_duration

    for t in (0, 0.1, 59.999999, 3600.1, 86399.5, 1e6 + 1 / 3, 123456789.123, 2.5e-7, math.inf):
        assert parse_duration(format_time(t)) == t, t
    assert format_time(5400) == "01:30:00.00"
    assert format_time(90000.5) == "25:00:00.50"
    with pytest.raises(ValueError):
        format_time(-1)


def test_writer_checks_order_and_leaves_no_file(tmp_path):
    vms = VMRequest.uniform(1, [1, 1])
    leases = [Lease(1, LeaseType.BEST_EFFORT, 10, vms, 5),
              Lease(2, LeaseType.BEST_EFFORT, 5, vms, 5)]
    path = tmp_path / "w.lwf"
    with pytest.raises(ValueError, match="sort the leases"):
        write_lwf(path, leases, types=TYPES)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="needs a start time"):
        write_lwf(path, [Lease(1, LeaseType.ADVANCE_RESERVATION, 0, vms, 5)], types=TYPES)
    with pytest.raises(ValueError, match="resource types"):
        write_lwf(path, leases[:1])


def test_site_round_trip_with_node_groups(tmp_path):
    site = parse_site("2 CPU:8 Memory:1024; 1 CPU:32 Memory:4096")
    path = tmp_path / "s.lwf"
    write_lwf(path, [], site=site)
    back = read_lwf(path)
    assert isinstance(back.site, NodeSet)
    np.testing.assert_array_equal(back.site.capacity, site.capacity)
    assert format_site(back.site) == "2 CPU:8 Memory:1024; 1 CPU:32 Memory:4096"


def test_schema_ships_inside_the_package():
    import lease_manager

    path = schema_path()
    assert path.is_file() and path.name == "lwf.xsd"
    assert Path(lease_manager.__file__).parent in path.parents
    assert lwf_schema() is lwf_schema()   # parsed once


def test_max_price_travels_as_an_extra_attribute(tmp_path):
    """LWF has no element for a user's maximum price: the <extra> attribute max-price sets
    lease.max_price, is written back, and a bad value names its line."""
    from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
    from lease_manager.kernel.resources import ResourceTypes
    from lease_manager.workload.lwf import read_lwf
    from lease_manager.workload.lwf_writer import write_lwf
    types = ResourceTypes(("CPU", "Memory"))
    lease = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest.uniform(1, [100, 1024]), 600, 600,
                  source_id="7", max_price=12.5, extra={"stress-on": "CPU"})
    path = tmp_path / "priced.lwf"
    write_lwf(path, [lease], types=types)
    back = read_lwf(path, types).leases[0]
    assert back.max_price == 12.5 and back.extra == {"preemptible": True, "stress-on": "CPU"}
    text = path.read_text().replace('name="max-price" value="12.5"',
                                    'name="max-price" value="cheap"')
    path.write_text(text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "max-price" in l)
    with pytest.raises(TraceError, match=rf"priced.lwf:{line}: .*max-price.*not a price"):
        read_lwf(path, types)


def test_a_truncated_gz_lwf_is_recognised_and_refused_in_one_line(tmp_path):
    """A cut ``.lwf.gz`` is still recognised as LWF (not read as SWF) and refused, naming it."""
    import gzip

    path = tmp_path / "cut.lwf.gz"
    path.write_bytes(gzip.compress(EXAMPLE.read_bytes())[:200])
    assert is_lwf(path)
    with pytest.raises(TraceError, match="cannot decompress") as err:
        read_lwf(path, TYPES)
    assert err.value.file == str(path)


@pytest.mark.parametrize("numnodes", ["1000001", "2147483648", "30000000"])
def test_node_counts_are_bounded_before_anything_is_allocated(tmp_path, numnodes):
    """A lease's or a site's node set of more than a million nodes is refused by the schema
    (30,000,000 in a <site> took a daemon from 59 MB to 995 MB; 2^31 raised numpy's
    _ArrayMemoryError)."""
    text = doc(request(nodes=f'<node-set numnodes="{numnodes}"><res type="CPU" amount="1"/>'
                             f'</node-set>'))
    err = error(write(tmp_path, text))
    assert err.field == "<node-set numnodes>"
    assert f"'{numnodes}' is above the maximum 1000000" in str(err)
    site = doc(request()).replace('numnodes="4"', f'numnodes="{numnodes}"', 1)   # the <site>
    err = error(write(tmp_path, site, "site.lwf"))
    assert (err.line, err.field) == (line_of(site, f'numnodes="{numnodes}"'),
                                     "<node-set numnodes>")
    assert "is above the maximum 1000000" in str(err)


def test_a_site_of_more_than_a_million_nodes_in_several_sets_is_refused(tmp_path):
    sets = "".join('<node-set numnodes="600000"><res type="CPU" amount="1"/>'
                   '<res type="Memory" amount="1"/></node-set>' for _ in range(2))
    text = doc(request())
    start = text.index("<site>")
    end = text.index("</site>")
    site = ('<site><resource-types names="CPU Memory"/><nodes>' + sets + '</nodes>')
    err = error(write(tmp_path, text[:start] + site + text[end:]))
    assert "the site has more than 1,000,000 nodes" in str(err)


def test_an_entity_reference_in_element_text_is_one_error(tmp_path):
    """A declared entity used in element text stayed in the tree (entities are not expanded)
    and the schema validator failed with 'Internal error' (HTTP 500 through the API)."""
    text = doc(request()).replace("<software><none/>", "<software><none/>&e;")
    assert "&e;" in text
    text = text.replace("<lease-workload", '<!DOCTYPE lease-workload [<!ENTITY e "x">]>\n'
                                           "<lease-workload", 1)
    err = error(write(tmp_path, text))
    assert err.field == "XML" and "entity references (&e;) are not allowed" in str(err)
    assert err.line == line_of(text, "&e;")


def test_a_leases_own_watts_attribute(tmp_path):
    extra = '        <extra><attr name="watts" value="42.5"/></extra>\n'
    lease, = read_lwf(write(tmp_path, doc(request(extra=extra))), TYPES).leases
    assert lease.extra["watts"] == "42.5"
    extra = '        <extra><attr name="watts" value="-1"/></extra>\n'
    text = doc(request(extra=extra))
    err = error(write(tmp_path, text))
    assert (err.line, err.field) == (line_of(text, 'name="watts"'), "<attr watts>")
    assert "'-1' is not a power" in str(err)


def test_a_lease_of_more_than_a_million_vms_over_its_node_sets_is_refused(tmp_path):
    """Each node set was bounded, but not their sum: 50 sets of 1,000,000 VMs in a 5 KB file
    took 98.6 CPU-s and 7.7 GB before being rejected as larger than the site."""
    sets = "".join('<node-set numnodes="400000"><res type="CPU" amount="1"/>'
                   '<res type="Memory" amount="1"/></node-set>\n' for _ in range(50))
    text = doc(request(nodes=sets))
    err = error(write(tmp_path, text))
    assert "the lease has more than 1,000,000 VMs over its node sets" in str(err)
    assert err.field == "<node-set numnodes>" and err.file and err.file.endswith("t.lwf")
    lines = text.splitlines()
    assert err.line == [i for i, line in enumerate(lines, 1) if "node-set" in line][3]
    assert len(str(err).splitlines()) == 1
    exact = "".join('<node-set numnodes="500000"><res type="CPU" amount="1"/>'
                    '<res type="Memory" amount="1"/></node-set>\n' for _ in range(2))
    lease, = read_lwf(write(tmp_path, doc(request(nodes=exact))), TYPES).leases
    assert lease.vms.count == 1_000_000
