"""Energy accounting: power over time as the sum of explicit intervals, and its integral.

Every node contributes its state's power over each of its state intervals (off, switching
on, switching off; on: the idle power of its highest level), and every lease contributes
``share x (full[level] - idle)`` on each node over each of its reservations (see
:mod:`lease_manager.energy.power_model`), or, if it has its own ``watts``, that many watts per
VM (:mod:`lease_manager.energy.lease_power`). The site's power is the sum of those steps; the
energy is its integral from the start of the run to its end. With a power cap, its value at each
row is in ``cap_watts``, and a row above it is an invariant violation. A per-run plugin
(``lease_manager.energy``) keeps the leases' intervals as they end.

Outputs: ``series/power.csv`` (one row per change; each value holds until the next row; the
last row marks the end of the run), ``node_states.csv``, ``nodes.csv`` (each node's energy,
time in each state and boots), the summary's energy fields and each lease's
``energy_joules``.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lease_manager.energy.energy_files import (
    NODE_STATES,
    csv_field,
    num_text,
    num_texts,
    write_energy_files,
)
from lease_manager.energy.lease_power import lease_watts, vms_per_node
from lease_manager.hookspecs import hookimpl
from lease_manager.kernel.reservation import ReservationKind
from lease_manager.observers.leases_csv import LeaseColumns

if TYPE_CHECKING:
    from lease_manager.context import RunContext
    from lease_manager.energy.node_states import NodePowerStates
    from lease_manager.energy.power_model import PowerModel
    from lease_manager.energy.power_profile import PowerProfile
    from lease_manager.energy.series import StepSeries
    from lease_manager.kernel.lease import Lease

JOULES_PER_KWH = 3.6e6
#: relative tolerance of the check that the power series integrates to the energy
ENERGY_TOLERANCE = 1e-9
#: relative tolerance of the check that the power never exceeds the cap
CAP_TOLERANCE = 1e-9
#: ``leases.csv``'s ``watts``: a lease's own power per VM, where some lease has one
WATTS_COLUMN = LeaseColumns(("watts",), lambda lease: (lease_watts(lease),), sparse=True)


class EnergyAccounting:
    """Power and energy of one site (a per-run plugin, ``lease_manager.energy``)."""

    def __init__(self, model: PowerModel, states: NodePowerStates, site: str = "site",
                 *, only: str | None = None, envelope: StepSeries | None = None) -> None:
        self.model = model
        self.states = states
        self.site = site
        #: count only the leases of this site (a run with several), or all
        self.only = only
        self._cpus = states.table.capacity[:, model.cpu]
        #: the intervals the ended leases add over idle power, a piece (one reservation's
        #: nodes) at a time: nodes, watts per node, and the piece's start, end and node count
        self._nodes: list[np.ndarray] = []
        self._deltas: list[np.ndarray] = []
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._sizes: list[int] = []
        #: per DVFS level: each node's full power and its part above idle power
        self._full_at: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: leases are clipped to this time when accounted (the end of the run, once known)
        self.until = float("inf")
        #: the last time a lease arrived or ended
        self.last_event = -float("inf")
        self.window = (0.0, 0.0)
        from lease_manager.energy.power_profile import PowerProfile  # (not at start-up)
        self.profile = PowerProfile(np.zeros(0), np.zeros(0))
        self._state_rows: list[tuple[int, str, float, float]] = []
        #: the state rows' nodes, state indices (in :data:`NODE_STATES`), starts and ends
        self._state_columns: tuple[np.ndarray, ...] = (np.zeros(0, dtype=np.intp),) * 4
        #: the last lease whose pieces were worked out: (a weak reference to it, what they
        #: were made of, its reservations' arrays, pieces): its end is accounted, and its row
        #: written, from one reading
        self._pieces_of: tuple[weakref.ref[Lease], tuple, list, list] | None = None
        self._direct = 0.0
        self._rows_t = self._rows_it = self._rows_green = self._rows_cap = np.zeros(0)
        self.green_used = self.brown = self.cost = self.carbon = 0.0
        self.green_produced = 0.0
        #: each node's IT energy over the run (J)
        self.node_energy: np.ndarray = np.zeros(0)
        #: an envelope the power is checked against when the slot table holds no cap (a planned
        #: run: the planner kept the plan under it)
        self.envelope = envelope

    # ------------------------------------------------------------------------- leases
    def _pieces(self, lease: Lease) -> list[tuple[np.ndarray, float, float, float,
                                                  np.ndarray]]:
        """Per reservation: nodes, start, end (clipped to :attr:`until`), what the lease's
        cores draw in all (the sum of ``share x full[level]`` over its nodes) and, per node, its
        part above idle power
        (``share x (full[level] - idle)``; with its own ``watts``, ``watts x VMs`` on top of
        ``share x idle`` instead)."""
        reservations = (*lease.allocations, *lease.reservations)
        watts = lease_watts(lease)
        # what the pieces are made of: arrays by identity (the cache keeps them alive, so an
        # id is never another array's), the rest by value; the lease is held weakly
        arrays = [(res.nodes, res.amounts) for res in reservations]
        made_of = (self.until, lease.state, lease.level, watts,
                   tuple([(res.kind, res.start, res.end, res.overhead, id(nodes), id(amounts))
                          for res, (nodes, amounts) in zip(reservations, arrays)]))
        cached = self._pieces_of
        if cached is not None and cached[0]() is lease and cached[1] == made_of:
            return cached[3]
        model = self.model
        cpu = model.cpu
        level = model.top_level if lease.level is None else lease.level
        full_at = self._full_at.get(level)
        if full_at is None:
            full_at = self._full_at[level] = (model.full[:, level],
                                              model.full[:, level] - model.idle)
        out = []
        for res in reservations:
            if res.kind is ReservationKind.IMAGE:
                continue
            end = min(res.end, self.until)
            if end <= res.start:
                continue
            nodes = res.nodes
            share = res.amounts[:, cpu] / self._cpus[nodes]
            if watts is None:
                full = full_at[0][nodes]
                dynamic = share * full_at[1][nodes]
                out.append((nodes, res.start, end, float(np.dot(share, full)), dynamic))
            else:
                dynamic = watts * vms_per_node(res)
                out.append((nodes, res.start, end,
                            float((share * model.idle[nodes] + dynamic).sum()), dynamic))
        self._pieces_of = (weakref.ref(lease), made_of, arrays, out)
        return out

    def _overheads(self, lease: Lease) -> list[tuple[np.ndarray, float, float, float]]:
        """Per reservation drawing power on top of its cores (a migration): nodes, start,
        end (clipped to :attr:`until`), watts per node."""
        out = []
        for res in (*lease.allocations, *lease.reservations):
            if res.overhead is None:
                continue
            until, watts = res.overhead
            end = min(until, res.end, self.until)
            if end > res.start:
                out.append((res.nodes, res.start, end, watts / len(res.nodes)))
        return out

    def energy_of(self, lease: Lease) -> float:
        """The energy of the cores ``lease`` held, at its level, while it held them, and of
        its migrations (J)."""
        return float(sum(rate * (end - start)
                         for _, start, end, rate, _ in self._pieces(lease))
                     + sum(watts * len(nodes) * (end - start)
                           for nodes, start, end, watts in self._overheads(lease)))

    #: the columns :meth:`lease_values` adds to ``leases.csv``
    LEASE_COLUMNS = ("level", "ghz", "stretched_requested", "energy_joules")

    def lease_values(self, lease: Lease) -> tuple[float | None, ...]:
        """The lease's DVFS level, its frequency (on its first node group), its request
        stretched to that level, and its energy."""
        level = self.model.top_level if lease.level is None else lease.level
        return (level, float(self.model.ghz[0, level]),
                lease.requested_duration * lease.stretch, self.energy_of(lease))

    @hookimpl(tryfirst=True)
    def lease_columns(self, ctx: RunContext) -> list[LeaseColumns] | None:
        """:data:`LEASE_COLUMNS` and ``watts`` (one site's: a run with several has them from
        :class:`~lease_manager.multisite.SitesColumns`, after ``site``)."""
        if self.only is not None:
            return None
        return [LeaseColumns(self.LEASE_COLUMNS, self.lease_values), WATTS_COLUMN]

    def add_lease(self, lease: Lease) -> None:
        """Count ``lease``'s reservations in the site's power."""
        for nodes, start, end, _, dynamic in self._pieces(lease):
            self._nodes.append(nodes)
            self._deltas.append(dynamic)
            self._starts.append(start)
            self._ends.append(end)
            self._sizes.append(len(nodes))
        for nodes, start, end, watts in self._overheads(lease):
            k = len(nodes)
            self._nodes.append(nodes)
            self._deltas.append(np.full(k, watts))
            self._starts.append(start)
            self._ends.append(end)
            self._sizes.append(k)

    def _lease_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The ended leases' intervals, one a node and piece: nodes, starts, ends, watts."""
        if not self._nodes:
            return np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0), np.zeros(0)
        sizes = self._sizes
        return (np.concatenate(self._nodes), np.repeat(np.array(self._starts, dtype=float), sizes),
                np.repeat(np.array(self._ends, dtype=float), sizes),
                np.concatenate(self._deltas))

    @hookimpl(tryfirst=True)
    def lease_submitted(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if self.only is None or lease.site == self.only:
            self.last_event = max(self.last_event, now)

    @hookimpl(tryfirst=True)
    def lease_ended(self, ctx: RunContext, lease: Lease, now: float) -> None:
        if self.only is None or lease.site == self.only:
            self.last_event = max(self.last_event, now)
            self.add_lease(lease)

    # ---------------------------------------------------------------------- the profile
    def close(self, start: float, end: float) -> None:
        """The run went from ``start`` to ``end``: build the power profile."""
        self.window = (start, end)
        model = self.model
        rows = list(self.states.intervals(start, end))
        self._state_rows = rows
        n = len(model.idle)
        # the states' watts, a row per state of NODE_STATES, a column per node
        watts_of = np.array([model.idle, model.off_watts, model.on_watts,
                             model.off_switch_watts], dtype=float).reshape(len(NODE_STATES), n)
        index = {state: i for i, state in enumerate(NODE_STATES)}
        nodes, states, froms, tos = zip(*rows) if rows else ((), (), (), ())
        s_node = np.array(nodes, dtype=np.intp)
        s_state = np.array([index[state] for state in states], dtype=np.intp)
        s_start = np.array(froms, dtype=float)
        s_end = np.array(tos, dtype=float)
        self._state_columns = (s_node, s_state, s_start, s_end)
        s_watts = watts_of[s_state, s_node]
        l_node, l_start, l_end, l_watts = self._lease_columns()
        l_start, l_end = np.clip(l_start, start, end), np.clip(l_end, start, end)
        starts = np.concatenate([s_start, l_start])
        ends = np.concatenate([s_end, l_end])
        watts = np.concatenate([s_watts, l_watts])
        #: the energy summed interval by interval (checked against the profile's integral)
        self._direct = float(np.dot(watts, ends - starts))
        # per node: its states' energy plus its leases' dynamic energy
        node_energy: np.ndarray = (
            np.bincount(s_node, s_watts * (s_end - s_start), minlength=n)
            + np.bincount(l_node, l_watts * (l_end - l_start), minlength=n))
        self.node_energy = node_energy
        from lease_manager.energy.power_profile import step_profile
        self.profile = step_profile(starts, ends, watts, start, end)
        self._tabulate(start, end)

    def lease_intervals(self, lease: Lease) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The intervals ``lease``'s reservations (used and planned) add to the site's power
        over the nodes' idle power: starts, ends and watts (one entry a node and
        reservation; a migration's overhead too)."""
        parts = [(np.full(len(nodes), a), np.full(len(nodes), b), dynamic)
                 for nodes, a, b, _, dynamic in self._pieces(lease)]
        parts += [(np.full(len(nodes), a), np.full(len(nodes), b), np.full(len(nodes), each))
                  for nodes, a, b, each in self._overheads(lease)]
        if not parts:
            return np.zeros(0), np.zeros(0), np.zeros(0)
        return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]

    def profile_until(self, start: float, end: float,
                      live: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
                      off_from: dict[int, float] | None = None) -> PowerProfile:
        """The site's IT power over ``[start, end]`` as it is known now (a daemon's
        dashboard): the leases that ended, the intervals of the live leases (running and
        planned, :meth:`lease_intervals`) and the nodes' power states, past and planned; a
        node in ``off_from`` is off from that time to ``end`` (off with no boot planned).
        Changes nothing."""
        model = self.model
        watts_of = {
            "on": model.idle, ReservationKind.OFF.value: model.off_watts,
            ReservationKind.SWITCHING_ON.value: model.on_watts,
            ReservationKind.SWITCHING_OFF.value: model.off_switch_watts}
        off_from = off_from or {}
        rows = []
        for node, state, a, b in self.states.intervals(start, end):
            since = off_from.get(node)
            if since is not None and b > since:     # stays off: planned on, it is not
                if a < since:
                    rows.append((node, state, a, since))
                if not rows or rows[-1][0] != node or rows[-1][3] < end:
                    rows.append((node, ReservationKind.OFF.value, max(a, since), end))
                continue
            rows.append((node, state, a, b))
        parts_s = [np.array([r[2] for r in rows], dtype=float)]
        parts_e = [np.array([r[3] for r in rows], dtype=float)]
        parts_w = [np.array([watts_of[r[1]][r[0]] for r in rows], dtype=float)]
        if self._nodes:
            _, ended_s, ended_e, ended_w = self._lease_columns()
            parts_s.append(ended_s)
            parts_e.append(ended_e)
            parts_w.append(ended_w)
        for lease_starts, lease_ends, lease_watts_ in live:
            parts_s.append(lease_starts)
            parts_e.append(lease_ends)
            parts_w.append(lease_watts_)
        starts = np.clip(np.concatenate(parts_s), start, end)
        ends = np.clip(np.concatenate(parts_e), start, end)
        from lease_manager.energy.power_profile import step_profile
        return step_profile(starts, ends, np.concatenate(parts_w), start, end)

    def _tabulate(self, start: float, end: float) -> None:
        """The rows of ``power.csv`` (a row wherever the IT power or the green production
        changes) and the energy's split into green and grid, its cost and carbon (integrated
        over every change of power, green production, price and carbon rate)."""
        model, profile = self.model, self.profile
        green = model.green
        cap = self.states.cap
        envelope = cap.cap if cap is not None else self.envelope
        times = profile.times[:-1]
        if green is not None:
            times = np.union1d(times, green.breakpoints(start, end))
        if envelope is not None:
            times = np.union1d(times, envelope.breakpoints(start, end))
        self._rows_t = np.append(times, end)
        it = profile.at(self._rows_t)
        self._rows_it = it
        self._rows_cap = (envelope.at(self._rows_t) if envelope is not None
                          else np.full(len(self._rows_t), np.nan))
        self._rows_green = (green.at(self._rows_t) if green is not None
                            else np.zeros(len(self._rows_t)))
        fine = np.union1d(times, np.concatenate([model.price.breakpoints(start, end),
                                                 model.carbon.breakpoints(start, end)]))
        dt = np.diff(np.append(fine, end))
        total = profile.at(fine) * model.cooling_factor
        from_green = (np.minimum(total, green.at(fine)) if green is not None
                      else np.zeros(len(fine)))
        grid = total - from_green
        self.green_used = float(np.dot(from_green, dt))
        self.green_produced = (float(np.dot(green.at(fine), dt)) if green is not None
                               else 0.0)
        self.brown = float(np.dot(grid, dt))
        self.cost = float(np.dot(grid * model.price.at(fine), dt)) / JOULES_PER_KWH
        self.carbon = float(np.dot(grid * model.carbon.at(fine), dt)) / JOULES_PER_KWH

    # ------------------------------------------------------------------------ results
    def summary(self) -> dict[str, Any]:
        model = self.model
        it = self.profile.energy
        return {
            "energy_it_joules": it,
            "energy_joules": it * model.cooling_factor,
            "energy_cost": self.cost,
            "carbon_kg": self.carbon,
            "green_used_joules": self.green_used,
            "brown_joules": self.brown,
            "node_switch_ons": int(np.count_nonzero(
                self._state_columns[1] == NODE_STATES.index("switching-on"))),
            "energy_window": list(self.window),
        }

    def write(self, out: Path) -> None:
        """``series/power.csv`` and ``node_states.csv`` under ``out``."""
        write_energy_files(out, [self])

    def power_rows(self) -> Iterator[tuple[str, ...]]:
        """The rows of ``series/power.csv``."""
        factor = self.model.cooling_factor
        for t, p, g, c in zip(self._rows_t.tolist(), self._rows_it.tolist(),
                              self._rows_green.tolist(), self._rows_cap.tolist()):
            yield (num_text(t), self.site, repr(p), repr(p * factor), num_text(g),
                   "" if np.isnan(c) else num_text(c))

    def power_lines(self) -> str:
        """:meth:`power_rows` as the csv module writes them (one text, made by column)."""
        if not len(self._rows_t):
            return ""
        factor = self.model.cooling_factor
        site = csv_field(self.site)
        caps = self._rows_cap
        cap_texts = ([""] * len(caps) if np.isnan(caps).all()
                     else ["" if np.isnan(c) else num_text(c) for c in caps.tolist()])
        return "".join([f"{t},{site},{p!r},{p * factor!r},{g},{c}\n" for t, p, g, c in zip(
            num_texts(self._rows_t), self._rows_it.tolist(), num_texts(self._rows_green),
            cap_texts)])

    def node_rows(self) -> Iterator[tuple[str, ...]]:
        """The rows of ``nodes.csv``: each node's IT energy, seconds in each state and boots."""
        n, k = len(self.node_energy), len(NODE_STATES)
        node, state, a, b = self._state_columns
        # (bincount adds each bin's weights in row order, as a sum row by row would)
        seconds = np.bincount(node * k + state, b - a, minlength=n * k).reshape(n, k).tolist()
        boots = np.bincount(node[state == NODE_STATES.index("switching-on")],
                            minlength=n).tolist()
        for i, joules in enumerate(self.node_energy.tolist()):
            yield (self.site, str(i), repr(joules), *map(num_text, seconds[i]), str(boots[i]))

    def state_intervals(self) -> list[tuple[int, str, float, float]]:
        """Every node's state intervals over the run ``(node, state, from, to)`` (after
        :meth:`close`)."""
        return self._state_rows

    def state_rows(self) -> Iterator[tuple[str, ...]]:
        """The rows of ``node_states.csv``."""
        for node, state, a, b in self._state_rows:
            yield (self.site, str(node), state, num_text(a), num_text(b))

    def state_lines(self) -> str:
        """:meth:`state_rows` as the csv module writes them (one text, made by column)."""
        node, state, a, b = self._state_columns
        if not len(node):
            return ""
        site = csv_field(self.site)
        heads = [f"{site},{i}," for i in range(int(node.max()) + 1)]
        names = [f"{name}," for name in NODE_STATES]
        return "".join([f"{heads[i]}{names[s]}{x},{y}\n" for i, s, x, y in zip(
            node.tolist(), state.tolist(), num_texts(a), num_texts(b))])

    # --------------------------------------------------------------------- invariants
    def violations(self) -> list[str]:
        """What breaks the energy invariants: node states that do not tile the run, leases
        on nodes that are not on, a power profile that does not integrate to the energy."""
        out: list[str] = []
        start, end = self.window
        if not self._states_tile(start, end):   # (then say where, row by row)
            last: dict[int, float] = {}
            for node, state, a, b in self._state_rows:
                if a != last.get(node, start):
                    out.append(f"node {node}: its {state} interval starts at {a:g}, not where "
                               f"the previous one ended ({last.get(node, start):g})")
                last[node] = b
            for node, b in last.items():
                if b != end:
                    out.append(f"node {node}: its states end at {b:g}, not at the run's end "
                               f"{end:g}")
        out += self._leases_on_nodes_not_on()
        direct, integral = self._direct, self.profile.energy
        if abs(direct - integral) > ENERGY_TOLERANCE * max(abs(direct), 1.0):
            out.append(f"the power profile integrates to {integral!r} J, the intervals sum to "
                       f"{direct!r} J")
        by_node = float(self.node_energy.sum())
        if abs(by_node - direct) > ENERGY_TOLERANCE * max(abs(direct), 1.0):
            out.append(f"the nodes' energies add up to {by_node!r} J, not {direct!r} J")
        if self.green_used > self.green_produced * (1 + ENERGY_TOLERANCE) + 1e-6:
            out.append(f"the site used {self.green_used!r} J of green energy, more than the "
                       f"{self.green_produced!r} J produced")
        if (self.profile.watts < -1e-6).any():
            out.append("the site's power goes below zero")
        # the last row only marks the end of the run (it repeats the power before it, while
        # the cap may change just then): every other row holds for some time
        it, cap_rows = self._rows_it[:-1], self._rows_cap[:-1]
        over = np.flatnonzero(it > cap_rows * (1 + CAP_TOLERANCE) + 1e-6)
        for i in over[:5].tolist():
            out.append(f"the site draws {self._rows_it[i]:g} W at {self._rows_t[i]:g} s, above "
                       f"its power cap of {self._rows_cap[i]:g} W")
        cap = self.states.cap
        if cap is not None:
            out += [f"a plan did not get its power under the cap {why}"
                    for why in cap.unhonoured[:5]]
        return out

    def _states_tile(self, start: float, end: float) -> bool:
        """Whether the state rows, each node's in a block of consecutive rows, tile the run
        node by node (False also when the rows are not in such blocks: read them one by
        one then)."""
        node, _, a, b = self._state_columns
        if not len(node):
            return True
        if len(node) > 1 and (node[1:] < node[:-1]).any():
            return False
        first = np.ones(len(node), dtype=bool)
        first[1:] = node[1:] != node[:-1]
        last = np.ones(len(node), dtype=bool)
        last[:-1] = first[1:]
        previous = np.empty(len(node))
        previous[1:] = b[:-1]
        previous[first] = start
        return bool((a == previous).all() and (b[last] == end).all())

    def _leases_on_nodes_not_on(self) -> list[str]:
        node, state, a, b = self._state_columns
        down = state != NODE_STATES.index("on")
        if not down.any() or not self._nodes:
            return []
        d_node, d_start, d_end = node[down], a[down], b[down]
        l_node, l_start, l_end, _ = self._lease_columns()
        keep = l_end > l_start
        l_node, l_start, l_end = l_node[keep], l_start[keep], l_end[keep]
        n_d, n_l = len(d_node), len(l_node)
        node = np.concatenate([d_node, d_node, l_node, l_node])
        time = np.concatenate([d_start, d_end, l_start, l_end])
        is_start = np.concatenate([np.ones(n_d), np.zeros(n_d), np.ones(n_l), np.zeros(n_l)])
        down_step = np.concatenate([np.ones(n_d), -np.ones(n_d), np.zeros(2 * n_l)])
        lease_step = np.concatenate([np.zeros(2 * n_d), np.ones(n_l), -np.ones(n_l)])
        order = np.lexsort((is_start, time, node))     # per node, by time, ends first
        both = (np.cumsum(down_step[order]) > 0) & (np.cumsum(lease_step[order]) > 0)
        return [f"a lease holds node {int(node[order][i])} at {time[order][i]:g} while the "
                f"node is not on" for i in np.flatnonzero(both)[:5].tolist()]


