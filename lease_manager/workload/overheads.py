"""Haizea's trace overheads (``[tracefile] add-overhead``, ``runtime-slowdown-overhead``,
``bootshutdown-overhead``), ``override-memory`` and ``imagefile``, applied to leases as they
are read."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np

from lease_manager.errors import TraceError
from lease_manager.input_files import input_problem, long_line, long_line_message
from lease_manager.kernel.lease import Lease, LeaseType, VMRequest
from lease_manager.numbers import parse_int


def with_overheads(leases: Iterable[Lease], *, add: str, slowdown_percent: float,
                   boot: float, memory: float, memory_index: int | None,
                   slowdown_as: str = "lease-manager") -> Iterator[Lease]:
    """Leases with Haizea's overheads added: the leases ``add`` names (``besteffort`` or
    ``all``) run ``slowdown_percent`` longer (requested and actual durations, rounded up to a
    second; with ``slowdown_as="haizea"`` the requested duration only, rounded as Haizea
    does), then ``boot`` seconds longer; with ``memory >= 0`` every VM needs that much
    ``Memory``."""
    factor = 1 + slowdown_percent / 100
    haizea = slowdown_as == "haizea"
    for lease in leases:
        if add == "all" or (add == "besteffort" and lease.type is LeaseType.BEST_EFFORT):
            if slowdown_percent and haizea:
                lease.requested_duration = _haizea_stretched(lease.requested_duration, factor)
            elif slowdown_percent:
                lease.requested_duration = _stretched(lease.requested_duration, factor)
                if lease.actual_duration is not None:
                    lease.actual_duration = _stretched(lease.actual_duration, factor)
            if boot:
                lease.requested_duration += boot
                if lease.actual_duration is not None:
                    lease.actual_duration += boot
        if memory >= 0 and memory_index is not None:
            vectors = lease.vms.vectors.copy()
            vectors[:, memory_index] = memory
            vectors.flags.writeable = False
            lease.vms = (VMRequest.uniform(lease.vms.counts[0], vectors[0])
                         if len(lease.vms.counts) == 1
                         else VMRequest(lease.vms.counts, np.asarray(vectors)))
        yield lease


def _stretched(seconds: float, factor: float) -> float:
    return seconds if math.isinf(seconds) else float(math.ceil(seconds * factor - 1e-9))


def _haizea_stretched(seconds: float, factor: float) -> float:
    """Haizea's stretch: the product in floating point, rounded up (3,600 x 1.1 is
    3,960.0000000000005 there, so 3,961 s)."""
    return seconds if math.isinf(seconds) else float(math.ceil(seconds * factor))


def read_image_file(path: str) -> list[tuple[str, int]]:
    """Haizea 1.0's image file: ``IMAGE SIZE-MB`` lines, then a line starting with ``#``,
    then one image name per line, given to the leases in arrival order. Returns the
    sequence as ``(image, size)`` pairs."""
    problem = input_problem(path)
    if problem:
        raise TraceError(f"the image file {problem}", file=path)
    try:
        lines = open(path).read().splitlines()
    except OSError as exc:
        raise TraceError(f"cannot read the image file: {exc.strerror}", file=path) from None
    too_long = long_line(lines)
    if too_long:
        raise TraceError(long_line_message(), file=path, line=too_long)
    sizes: dict[str, int] = {}
    sequence: list[tuple[str, int]] = []
    listing = False
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            listing = True
            continue
        if not line.strip():
            continue
        if not listing:
            fields = line.split()
            try:
                if len(fields) != 2:
                    raise ValueError
                sizes[fields[0]] = parse_int(fields[1])
            except ValueError:
                raise TraceError("expected 'IMAGE SIZE-MB'", file=path, line=number,
                                 field="image size") from None
        else:
            image = line.strip()
            if image not in sizes:
                raise TraceError(f"image {image!r} has no size above the '#' line",
                                 file=path, line=number, field="image") from None
            sequence.append((image, sizes[image]))
    return sequence


def with_images(leases: Iterable[Lease], sequence: list[tuple[str, int]]) -> Iterator[Lease]:
    """Give the leases, in order, the disk images of ``sequence`` (Haizea zips them: leases
    beyond the list keep theirs)."""
    images = iter(sequence)
    for lease in leases:
        given = next(images, None)
        if given is not None:
            lease.extra["disk-image"], lease.extra["disk-image-size"] = given
        yield lease
