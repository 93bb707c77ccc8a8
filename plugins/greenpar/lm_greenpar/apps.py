"""The annotator ``greenpar-apps``: trace jobs become GreenPar jobs of NPB applications.

A job's requested size (SWF field 8, or the lease's VM count) is mapped to cores the way
GreenPar's Table 2 maps Intrepid's (ranges to a few powers of 2; ``[greenpar] core-map``), and
those to N = cores / 2 dual-core servers; the lease gets GreenPar's baseline shape, 2N VMs of
one core each (``[tracefile] vm-resources``). Its application is its ``app`` attribute if it
has one (an LWF ``<extra>``), else drawn with the weights of ``[greenpar] apps`` (by default
GreenPar's Grid5k mix: 12 FT, 6 LU, 3 MG, 2 CG, 1 SP, 1 EP, 1 IS) from a stream of the run's
seed and the job's id: the same job gets the same application in every run of a seed, whatever
the policy (the paper maps jobs "to the closest NPB application in terms of core count and
runtime", which it does not give).
"""

from __future__ import annotations

import zlib

import numpy as np

from lease_manager import Annotator, Lease, VMRequest


class GreenParApps(Annotator):
    """Map trace jobs to NPB applications and GreenPar server counts (Table 2 style)."""

    name = "greenpar-apps"

    def __init__(self, ctx):
        super().__init__(ctx)
        cfg = ctx.config
        self.core_map: tuple[tuple[int, int, int], ...] = cfg.get("greenpar", "core-map")
        mix: tuple[tuple[str, float], ...] = cfg.get("greenpar", "apps")
        self.apps = [a for a, _ in mix]
        weights = np.array([w for _, w in mix], dtype=float)
        self.weights = weights / weights.sum()
        self.seed = cfg.get("simulation", "seed")

    def cores(self, size: int) -> int:
        for low, high, cores in self.core_map:
            if low <= size <= high:
                return cores
        raise ValueError(f"no core-map range holds size {size}")

    def annotate(self, lease: Lease) -> None:
        size = lease.vms.count
        cores = self.cores(size)
        servers = max(1, cores // 2)
        lease.extra["size"] = size
        lease.extra["servers"] = servers
        lease.vms = VMRequest.uniform(2 * servers, lease.vms.vectors[0])
        if "app" not in lease.extra:
            key = zlib.crc32(f"{lease.source_id or lease.id}".encode())
            rng = np.random.default_rng([self.seed, key, 0x6e70])
            lease.extra["app"] = self.apps[int(rng.choice(len(self.apps), p=self.weights))]
