"""Lease preparation with image transfers (``[preparation] lease-preparation =
imagetransfer``): the repository's FIFO and EDF slots, unicast, piggybacking and caches."""

from __future__ import annotations

from lease_manager.kernel.lease import Lease, LeaseType, VMRequest

from support import simulate

RESOURCES = "4 CPU:1 Memory:1024"
PREP = ("preparation.lease-preparation=imagetransfer", "scheduling.backfilling=conservative",
        "scheduling.policy-preemption=no-preemption")


def lease(lease_id: int, submit: float, vms: int, duration: float, image: str, *,
          start: float | None = None, size: int = 1000) -> Lease:
    """A lease of ``vms`` 1-CPU VMs with a ``size`` MB disk image (1,000 MB at 100 Mb/s: 80 s)."""
    kind = LeaseType.BEST_EFFORT if start is None else LeaseType.ADVANCE_RESERVATION
    return Lease(lease_id, kind, submit, VMRequest.uniform(vms, [1, 0]), duration, duration,
                 start_request=start, extra={"disk-image": image, "disk-image-size": size})


def test_fifo_transfers_one_after_another():
    """Two best-effort leases with different images at 0, each on 2 of 4 nodes: the
    repository sends #1's image 0-80 and #2's 80-160; they start when their image is there::

        repository |#1 img 0-80|#2 img 80-160|
        nodes 0-1  |  wait    |#1 80------------180|
        nodes 2-3  |  wait                |#2 160-----------260|
    """
    leases = [lease(1, 0, 2, 100, "a"), lease(2, 0, 2, 100, "b")]
    run = simulate(leases, *PREP, resources=RESOURCES)
    assert [(x.start, x.end) for x in leases] == [(80, 180), (160, 260)]
    transfers = [r for x in leases for r in x.allocations if r.kind == "transfer"]
    assert [(r.start, r.end, r.nodes.tolist()) for r in transfers] == [
        (0, 80, [0, 1]), (80, 160, [2, 3])]
    assert run.scheduler.preparation.completed == 2


def test_unicast_sends_one_copy_per_node():
    """Unicast: #1's two copies take 2 x 80 s, so it starts at 160."""
    leases = [lease(1, 0, 2, 100, "a")]
    simulate(leases, *PREP, "preparation.transfer-mechanism=unicast", resources=RESOURCES)
    assert (leases[0].start, leases[0].end) == (160, 260)


def test_piggybacking_on_a_transfer_of_the_same_image():
    """#2 (image a, 2 nodes) arrives at 10 while #1's copy of a is being sent (0-80): it waits
    for that transfer's end and starts at 80 with no transfer of its own."""
    leases = [lease(1, 0, 2, 100, "a"), lease(2, 10, 2, 100, "a")]
    simulate(leases, *PREP, resources=RESOURCES)
    assert [x.start for x in leases] == [80, 80]
    assert [r.kind for r in leases[1].allocations] == ["vm"]


def test_an_advance_reservation_gets_the_last_slot_before_its_start():
    """An AR at 1,000 (4 nodes): its image goes 920-1,000 (EDF). A BE lease arriving at 950
    cannot get the repository before 1,000: its image goes 1,000-1,080, and it starts after
    the AR (1,000-1,100) at 1,100 (its nodes were busy anyway)."""
    leases = [lease(1, 0, 4, 100, "a", start=1000), lease(2, 950, 1, 50, "b")]
    simulate(leases, *PREP, resources=RESOURCES)
    ar_transfer = [r for r in leases[0].allocations if r.kind == "transfer"][0]
    be_transfer = [r for r in leases[1].allocations if r.kind == "transfer"][0]
    assert (ar_transfer.start, ar_transfer.end) == (920, 1000)
    assert (be_transfer.start, be_transfer.end) == (1000, 1080)
    assert [(x.start, x.end) for x in leases] == [(1000, 1100), (1100, 1150)]


def test_an_advance_reservation_whose_image_cannot_arrive_in_time_is_rejected():
    """Haizea 1.1 rejects these; we stopped with "reservation starts at -70.0, before the
    horizon" or planned the transfer before the lease existed. Each image takes 80 s::

        #1  AR at 10, submitted at 0:      its image would go -70-10: before now, rejected
        #2  AR at 1,040, submitted at 1,000: its image would go 960-1,040: before its
            submission (1,000), rejected
        #3  AR at 1,100, submitted at 1,000: image 1,020-1,100, then 1,100-1,200 (accepted)
        #4  AR at 1,150, submitted at 1,010: the repository is busy 1,020-1,100 with #3's
            image; the last free slot ending by 1,150 is 940-1,020, before now: rejected
    """
    leases = [lease(1, 0, 4, 100, "a", start=10), lease(2, 1000, 1, 100, "b", start=1040),
              lease(3, 1000, 1, 100, "c", start=1100), lease(4, 1010, 1, 100, "d", start=1150)]
    simulate(leases, *PREP, resources=RESOURCES)
    assert [x.state.value for x in leases] == ["rejected", "rejected", "done", "rejected"]
    for x in (leases[0], leases[1], leases[3]):
        assert x.reason.startswith("its image cannot reach its nodes by its start: the "
                                      "transfer takes 80 s"), x.reason
    assert "would begin at -70 s, before now (0 s)" in leases[0].reason
    assert "would begin at 940 s, before now (1010 s)" in leases[3].reason
    transfer = [r for r in leases[2].allocations if r.kind == "transfer"][0]
    assert (transfer.start, transfer.end) == (1020, 1100)
    assert (leases[2].start, leases[2].end) == (1100, 1200)


def test_image_caches_keep_images_and_evict_the_oldest():
    """Caches of 1,500 MB and 1,000 MB images on 1 node: #1 (a) 0-80 then runs 80-180; #2 (b)
    arrives at 200: b is sent 200-280 and evicts a; #3 (a) at 400 needs a again (400-480),
    #4 (a) at 600 finds it cached and starts at once::

        node 0  |a 0-80|#1 80-180|  |b 200-280|#2 280-380| |a 400-480|#3 480-580| |#4 600-700|
    """
    leases = [lease(1, 0, 1, 100, "a"), lease(2, 200, 1, 100, "b"),
              lease(3, 400, 1, 100, "a"), lease(4, 600, 1, 100, "a")]
    run = simulate(leases, *PREP, "preparation.diskimage-reuse=image-caches",
                   "preparation.diskimage-cache-size=1500", resources="1 CPU:1 Memory:1024")
    assert [x.start for x in leases] == [80, 280, 480, 600]
    assert list(run.scheduler.preparation.caches[0]) == ["a"]


def test_haizeas_image_file_gives_the_leases_their_images(tmp_path):
    """Haizea 1.0's [tracefile] imagefile: sizes, '#', then one image per lease in order;
    with image caches the second lease of image a starts at once on the node that has it::

        node 0  |a 0-80|#1 80-180|  |#2 200-300|    (#2 arrives at 200; a is cached)
    """
    from lease_manager.kernel.resources import parse_site
    from lease_manager.run import load_run
    from lease_manager.workload.lwf_writer import write_lwf

    site = parse_site("1 CPU:1 Memory:1024")
    plain = [Lease(i, LeaseType.BEST_EFFORT, at, VMRequest.uniform(1, [1, 0]), 100, 100)
             for i, at in ((1, 0), (2, 200))]
    write_lwf(tmp_path / "trace.lwf", plain, site=site)
    (tmp_path / "images.txt").write_text("a 1000\nb 500\n#\na\na\n")
    run = load_run(None, ["simulation.resources=1 CPU:1 Memory:1024", *PREP,
                          "preparation.diskimage-reuse=image-caches",
                          f"tracefile.tracefile={tmp_path / 'trace.lwf'}",
                          f"tracefile.imagefile={tmp_path / 'images.txt'}"])
    run.run()
    run.write(tmp_path / "out")
    rows = (tmp_path / "out" / "leases.csv").read_text().splitlines()[1:]
    assert [(row.split(",")[5], row.split(",")[6]) for row in rows] == [
        ("80", "180"), ("200", "300")]


def test_a_migrating_lease_moves_its_disk_image_too():
    """Three nodes. #1 (1,000 MB image, no memory) gets its image 0-80 and runs on node 0 from
    80; #3 (no image, not preemptible, queued after #1) runs 0-300 on node 1. The AR #2 (2
    VMs, 200-400, requested at 100) takes nodes 0 and 2, preempting #1 (its suspension takes
    no time: no memory). #1 may resume on node 0 at 400, or on node 1 at 300 after its image
    moves there: 1,000 MB at the migration bandwidth of 100 MB/s, 10 s. It moves (with no
    memory to read back it resumes as the move ends) and runs its remaining 880 s::

        node 0  |img|#1 80-200|#2 200-----400|
        node 1  |#3 0-----------300|mig 300-310|#1 310-----1190|
        node 2                |#2 200-----400|
    """
    first = lease(1, 0, 1, 1000, "a")
    other = lease(3, 0, 1, 300, "none")
    other.extra.clear()
    other.extra["preemptible"] = False
    ar = lease(2, 100, 2, 200, "b", start=200)
    ar.extra.clear()
    simulate([other, first, ar], "preparation.lease-preparation=imagetransfer",
             "scheduling.policy-preemption=ar-preempts-everything", "scheduling.migration=yes",
             "scheduling.migration-bandwidth=100", resources="3 CPU:1 Memory:1024")
    segments = [(str(r.kind), r.start, r.end, r.nodes.tolist()) for r in first.allocations]
    assert segments == [("transfer", 0, 80, [0]), ("vm", 80, 200, [0]),
                        ("migrate", 300, 310, [1]), ("vm", 310, 1190, [1])]
    assert first.end == 1190
