"""Placement.one_per_node: one VM on each node, as the count table's fast path places leases."""

import numpy as np
import pytest

from lease_manager.kernel.mapper import Placement


def test_one_vm_a_node_holds_the_vm_shape_on_each_node():
    vector = np.array([1.0, 1024.0])
    placement = Placement.one_per_node((3, 5, 9), np.array([3, 5, 9]), vector)
    assert placement.vm_nodes == (3, 5, 9)
    assert placement.nodes.tolist() == [3, 5, 9]
    assert placement.amounts.tolist() == [[1.0, 1024.0]] * 3
    assert placement.vm_shape == vector.tobytes()


def test_placements_of_as_many_vms_share_read_only_rows():
    """The rows are shared between placements of one shape and count, so nothing may write
    into them."""
    a = Placement.one_per_node((0, 1), np.array([0, 1]), np.array([1.0, 1024.0]))
    b = Placement.one_per_node((7, 8), np.array([7, 8]), np.array([1.0, 1024.0]))
    assert a.amounts is b.amounts
    with pytest.raises(ValueError, match="read-only"):
        a.amounts[0, 0] = 2.0
    other_count = Placement.one_per_node((4,), np.array([4]), np.array([1.0, 1024.0]))
    other_shape = Placement.one_per_node((0, 1), np.array([0, 1]), np.array([2.0, 512.0]))
    assert other_count.amounts.tolist() == [[1.0, 1024.0]]
    assert other_shape.amounts.tolist() == [[2.0, 512.0]] * 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_the_reservation_made_directly_is_the_placements(dtype):
    """``reservation_one_per_node`` (the scheduler's path for a lease starting on the first
    free nodes) gives the reservation ``Placement.one_per_node(...).reservation`` gives: the
    same nodes, the same shared rows, the same VM nodes, shape and kind."""
    from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
    from lease_manager.kernel.mapper import reservation_one_per_node

    vector = np.array([[2, 512]], dtype=dtype)
    vector.flags.writeable = False
    lease = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest((3,), vector), 100, 100)
    direct = reservation_one_per_node(lease, 10.0, 110.0, [2, 4, 6])
    placed = Placement.one_per_node((2, 4, 6), np.array([2, 4, 6], dtype=np.intp),
                                    vector[0]).reservation(lease, 10.0, 110.0)
    assert direct.id != placed.id
    for field in ("lease", "start", "end", "site_amount", "kind", "vm_nodes", "vm_shape",
                  "pending", "overhead"):
        assert getattr(direct, field) == getattr(placed, field), field
    assert direct.amounts is placed.amounts and direct.amounts.dtype == dtype
    assert direct.nodes.dtype == placed.nodes.dtype == np.intp
    assert direct.nodes.tolist() == placed.nodes.tolist() == [2, 4, 6]
    assert type(direct.vm_nodes[0]) is int


def test_the_reservation_on_consecutive_nodes_is_the_placements():
    """On consecutive nodes (made as a range) the direct reservation has the nodes, dtype and
    VM nodes the placement gives, for one node and for several."""
    from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
    from lease_manager.kernel.mapper import reservation_one_per_node

    for nodes in ([7], [3, 4, 5, 6]):
        vector = np.array([[1.0, 1024.0]])
        lease = Lease(1, LeaseType.BEST_EFFORT, 0, VMRequest((len(nodes),), vector), 10, 10)
        direct = reservation_one_per_node(lease, 0.0, 10.0, nodes)
        placed = Placement.one_per_node(tuple(nodes), np.array(nodes, dtype=np.intp),
                                        vector[0]).reservation(lease, 0.0, 10.0)
        assert direct.nodes.dtype == placed.nodes.dtype == np.intp
        assert direct.nodes.tolist() == placed.nodes.tolist() == nodes
        assert direct.vm_nodes == placed.vm_nodes == tuple(nodes)
        assert direct.amounts is placed.amounts
