"""Interpreted ``extra`` attributes through the API: refused with a 400 naming the attribute
before anything is stored or planned (issue: one ``disk-image-size`` of ``"x"`` stopped a
daemon with image transfers, and every restart on its state folder)."""

from __future__ import annotations

import pytest
from test_api import SITE, assert_serving, submit

from daemon_support import ThreadDaemon, write_config

IMAGES = """[preparation]
lease-preparation = imagetransfer
imagetransfer-bandwidth = 100
"""


@pytest.fixture
def td(tmp_path):
    config = write_config(tmp_path, resources=SITE)
    config.write_text(config.read_text() + IMAGES)
    with ThreadDaemon(config) as daemon:
        yield daemon


@pytest.mark.parametrize("extra, message", [
    ({"disk-image": "a", "disk-image-size": "x"}, "extra.disk-image-size: 'x' is not a number"),
    ({"disk-image": "a", "disk-image-size": 1e100},
     "extra.disk-image-size: 1e+100 is out of range: a number from 0 to 1e+09"),
    ({"disk-image": "a", "disk-image-size": -5},
     "extra.disk-image-size: -5 is out of range: a number from 0 to 1e+09"),
    ({"disk-image": "", "disk-image-size": 5},
     "extra.disk-image: '' is not a non-empty text of at most 1024 characters"),
    ({"watts": "lots"}, "extra.watts: 'lots' is not a number"),
    ({"preemptible": 2}, "extra.preemptible: 2 is not true or false"),
])
def test_a_bad_interpreted_attribute_is_a_400_and_nothing_is_stored(td, extra, message):
    before = td.client.leases()
    answer = submit(td, {"duration": 600, "extra": extra})
    assert answer.status == 400, answer
    assert answer.error == message
    assert td.client.leases() == before
    assert_serving(td)


def test_a_good_one_is_planned_with_its_transfer(td):
    answer = submit(td, {"duration": 600, "extra": {"disk-image": "a",
                                                     "disk-image-size": "1024"}})
    assert answer.status == 201, answer
    assert answer.json["request"]["extra"] == {"disk-image": "a", "disk-image-size": "1024"}
    # 1,024 MB at 100 MB/s: a transfer of 10.24 s before the VM
    kinds = [seg["kind"] for seg in answer.json["plan"]]
    assert kinds == ["transfer", "vm"], answer.json["plan"]
    assert_serving(td)
