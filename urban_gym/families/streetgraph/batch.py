"""The batched state of N StreetGraph episodes on one graph (symbolic observations): what
:class:`~urban_gym.families.streetgraph.vector.StreetGraphVectorEnv` steps with one compiled
call (:func:`~urban_gym.families.streetgraph.batch_kernel.step_envs`) instead of N env
objects.

* :class:`OptionTables` -- a graph's options as flat arrays (CSR): per node its streets in
  the order the env lists them (:func:`~urban_gym.families.streetgraph.dynamics.ordered_streets`),
  per street its length and its nodes after the first, per link of a street its length
  and heading; per node its padded bearings and the unpadded list ``info`` shows. Built
  once per graph and process (:func:`option_tables`).
* :class:`BatchEpisodes` -- the N episodes as arrays: node, heading, distance, counts,
  limits, the goal's distances and nodes, the trajectory and the per-decision remaining
  distances; :meth:`~BatchEpisodes.load` reads one env object's episode into them (after
  its reset), :meth:`~BatchEpisodes.store` writes them back (when the episode ends, or
  before anyone reads the env objects), so metrics and final infos come from the env's
  own code. Observations and the ``info`` columns are built from the arrays directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.envs.actions import describe_value
from urban_gym.envs.base import INVALID_ACTION_REWARD
from urban_gym.families.streetgraph import batch_kernel as K
from urban_gym.families.streetgraph.actions import STOP_UNAVAILABLE, missing_option
from urban_gym.families.streetgraph.dynamics import option_bearings, ordered_streets

if TYPE_CHECKING:
    from urban_gym.families.streetgraph.env import StreetGraphEnv
    from urban_gym.families.streetgraph.world import StreetGraph


@dataclass(frozen=True)
class OptionTables:
    """A graph's options as flat arrays (see the module docstring). Node and street indices
    are int64; street ``s`` of node ``u`` is ``opt_ptr[u] + k`` for its option ``k``; its
    nodes after the first are ``st_nodes[st_ptr[s]:st_ptr[s + 1]]``, the link into
    ``st_nodes[j]`` being ``link_len[j]`` metres long with heading ``link_head[j]`` (degrees
    in [0, 360), NaN where both ends lie on one point).
    """

    deg: np.ndarray
    opt_ptr: np.ndarray
    st_len: np.ndarray
    st_ptr: np.ndarray
    st_nodes: np.ndarray
    link_len: np.ndarray
    link_head: np.ndarray
    bearings: np.ndarray
    bearing_lists: list[list[float]]
    ids: np.ndarray
    x: np.ndarray
    y: np.ndarray


_TABLES: dict[tuple[str, int], OptionTables] = {}


def option_tables(graph: StreetGraph, key: str, max_degree: int) -> OptionTables:
    """The :class:`OptionTables` of ``graph`` (whose :func:`graph_key` is ``key``), bearings
    padded to ``max_degree``; memoised per process.
    """
    got = _TABLES.get((key, max_degree))
    if got is None:
        got = _TABLES[(key, max_degree)] = _build(graph, max_degree)
    return got


def _build(graph: StreetGraph, max_degree: int) -> OptionTables:
    xy = graph._xy_list
    n = graph.num_nodes
    deg = np.zeros(n, np.int64)
    bearings = np.zeros((n, max_degree), np.float32)
    lists: list[list[float]] = []
    opt_ptr, st_len, st_ptr = [0], [], [0]
    st_nodes: list[int] = []
    link_len: list[float] = []
    link_head: list[float] = []
    for u in range(n):
        opts = ordered_streets(graph, u)
        deg[u] = len(opts)
        b = option_bearings(opts, max_degree)
        bearings[u] = b
        lists.append([float(v) for v in b[: len(opts)]])
        for st in opts:
            st_len.append(st.length)
            for prev, node in zip(st.nodes, st.nodes[1:]):
                st_nodes.append(node)
                # the same expressions as StreetGraphEnv._travel, so the sums are bit-equal
                link_len.append(math.dist(xy[prev], xy[node]))
                (x0, y0), (x1, y1) = xy[prev], xy[node]
                same = (x0, y0) == (x1, y1)
                link_head.append(
                    math.nan if same else math.degrees(math.atan2(x1 - x0, y1 - y0)) % 360.0
                )
            st_ptr.append(len(st_nodes))
        opt_ptr.append(len(st_len))
    ids = np.empty(n, dtype=object)
    ids[:] = list(graph.ids)
    xs = np.array([p[0] for p in xy], dtype=np.float64)
    ys = np.array([p[1] for p in xy], dtype=np.float64)
    return OptionTables(
        deg=deg,
        opt_ptr=np.asarray(opt_ptr, np.int64),
        st_len=np.asarray(st_len, np.float64),
        st_ptr=np.asarray(st_ptr, np.int64),
        st_nodes=np.asarray(st_nodes, np.int64),
        link_len=np.asarray(link_len, np.float64),
        link_head=np.asarray(link_head, np.float64),
        bearings=bearings,
        bearing_lists=lists,
        ids=ids,
        x=xs,
        y=ys,
    )


def batchable(env: StreetGraphEnv) -> str:
    """Why ``env`` cannot run in a batch ("" when it can): the batch reproduces symbolic
    observations without a goal mode or visibility tracking, on tasks of one graph drawn
    from a fixed list.
    """
    if env.images:
        return "image observations"
    if env.goal_mode != "none":
        return f"goal={env.goal_mode!r}"
    if env.track_visibility:
        return "track_visibility=True"
    if getattr(env, "task_source", None) is not None:
        return "tasks drawn on the fly"
    keys = {env._key_of(t) for t in env.tasks}
    if len(keys) > 1:
        return f"tasks on {len(keys)} graphs"
    return ""


class BatchEpisodes:
    """The episodes of ``envs`` (all batchable, see :func:`batchable`, on one graph) as
    arrays (see the module docstring).
    """

    def __init__(self, envs: list[StreetGraphEnv]) -> None:
        first = envs[0]
        n = len(envs)
        self.n = n
        self.key = first._graph_key
        self.graph = first.graph
        self.table_n = int(first.action_space.n)
        self.max_degree = first.max_degree
        self.tables = option_tables(first.graph, self.key, self.max_degree)
        v = first.graph.num_nodes
        self.ist = np.zeros((n, 10), np.int64)
        self.fst = np.zeros((n, 3), np.float64)
        self.goal_d = np.zeros((n, v), np.float64)
        self.goal_in = np.zeros((n, v), np.bool_)
        self.traj = np.zeros((n, 1), np.int64)
        self.before = np.zeros((n, 1), np.float64)
        self.after = np.zeros((n, 1), np.float64)
        self.done = np.ones(n, np.bool_)
        self.valid = np.ones(n, np.bool_)
        self.blank = np.full(n, "", dtype=object)
        self.messages = self.blank.copy()
        self.task = np.full(n, None, dtype=object)
        self.task_id = np.full(n, None, dtype=object)
        self.instruction: list[str] = [""] * n
        self.reward = np.zeros(n, np.float64)
        self.code = np.zeros(n, np.int64)
        self.end = np.zeros(n, np.int64)
        self.rows = np.arange(n)
        self.every = np.ones(n, np.bool_)
        d = self.max_degree
        # action masks by degree (row 2 * degree + instruction task)
        masks = np.zeros((2 * (d + 1), d + 1), np.int8)
        for k in range(d + 1):
            masks[2 * k : 2 * k + 2, :k] = 1
            masks[2 * k + 1, -1] = 1
        self.mask_table = masks
        self.mask_bool = masks.astype(bool)
        #: each row's line of the mask tables (None: to be found again)
        self.which: np.ndarray | None = None
        self.step(np.zeros(n, np.int64), np.zeros(n, np.bool_))  # compile (or load) the kernel now

    # ------------------------------------------------------------------ env objects
    def fits(self, env: StreetGraphEnv) -> bool:
        """Whether ``env``'s running episode is on the batch's graph and action table."""
        return (
            env._graph_key == self.key
            and env.max_degree == self.max_degree
            and int(env.action_space.n) == self.table_n
        )

    def load(self, i: int, env: StreetGraphEnv) -> None:
        """Read ``env``'s episode (its state after ``reset`` or any step) into row ``i``."""
        self.which = None
        ist, fst = self.ist, self.fst
        traj = env.trajectory
        self._room(max(env.max_transitions + 1, len(traj)), max(env.max_decisions, env.decisions))
        od = env.task.type == "origin_destination"
        ist[i] = (
            env.node,
            env.transitions,
            env.decisions,
            env.steps,
            env.invalid_actions,
            len(traj),
            od,
            env.link_travel,
            env.max_transitions,
            env.max_decisions,
        )
        fst[i] = (env.heading, env.distance_m, env.progress_reward)
        self.goal_d[i] = env.goal_distances
        row = self.goal_in[i]
        row[:] = False
        row[list(env.goal_nodes)] = True
        self.traj[i, : len(traj)] = traj
        k = len(env._before)
        self.before[i, :k] = env._before
        self.after[i, :k] = env._after
        self.done[i] = env._done
        self.messages[i] = env.last_action_error
        self.valid[i] = not env.last_action_error
        self.task[i] = env.task
        self.task_id[i] = env.task.id
        self.instruction[i] = env._instruction_text()

    def _room(self, most: int, decisions: int) -> None:
        """Grow the trajectory and decision buffers to hold ``most`` nodes and
        ``decisions`` decisions.
        """
        if self.traj.shape[1] < most:
            grown = np.zeros((self.n, most), np.int64)
            grown[:, : self.traj.shape[1]] = self.traj
            self.traj = grown
        if self.before.shape[1] < decisions:
            for name in ("before", "after"):
                old = getattr(self, name)
                grown = np.zeros((self.n, decisions), np.float64)
                grown[:, : old.shape[1]] = old
                setattr(self, name, grown)

    def store(self, i: int, env: StreetGraphEnv) -> None:
        """Write row ``i`` back into ``env`` (the inverse of :meth:`load`)."""
        node, trans, decis, steps, invalid, tlen = self.ist[i, :6].tolist()
        heading, dist = self.fst[i, :2].tolist()
        env.node = node
        env.heading = heading
        env.distance_m = dist
        env.transitions = trans
        env.decisions = decis
        env.steps = steps
        env.invalid_actions = invalid
        env.trajectory = self.traj[i, :tlen].tolist()
        env._before = self.before[i, :decis].tolist()
        env._after = self.after[i, :decis].tolist()
        env.last_action_error = self.messages[i]
        env.options = env._options_at(node)

    # ------------------------------------------------------------------ step
    def step(self, actions: np.ndarray, active: np.ndarray) -> None:
        """Step the ``active`` rows by the table indices ``actions`` (:attr:`reward`,
        :attr:`code`, :attr:`end` hold what happened; :attr:`messages` why an invalid
        action was).
        """
        t = self.tables
        acts = actions.astype(np.int64, copy=False)
        K.step_envs(
            acts,
            active,
            self.ist,
            self.fst,
            self.goal_d,
            self.goal_in,
            self.traj,
            self.before,
            self.after,
            t.deg,
            t.opt_ptr,
            t.st_len,
            t.st_ptr,
            t.st_nodes,
            t.link_len,
            t.link_head,
            self.table_n,
            INVALID_ACTION_REWARD,
            self.reward,
            self.code,
            self.end,
        )
        # rows left alone (SKIPPED) are reset and read again before anyone looks at them
        code = self.code
        bad = code >= K.NO_OPTION
        np.logical_not(bad, out=self.valid)
        self.messages = messages = self.blank.copy()
        for i in np.flatnonzero(bad).tolist():
            messages[i] = self._message(int(code[i]), actions[i], i)

    def _message(self, code: int, action: Any, i: int) -> str:
        if code == K.NO_STOP:
            return STOP_UNAVAILABLE
        if code == K.NO_OPTION:
            return missing_option(int(action), int(self.tables.deg[self.ist[i, K.NODE]]))
        return (
            f"action index {describe_value(int(action))} is outside the action table "
            f"[0, {self.table_n - 1}]"
        )

    # ------------------------------------------------------------------ outputs
    def observe(self, buf: dict[str, Any]) -> None:
        """Write every row's observation into the batch buffers ``buf``."""
        t = self.tables
        node = self.ist[:, K.NODE]
        np.take(t.bearings, node, axis=0, out=buf["bearings"])
        h = np.mod(self.fst[:, K.HEADING], 360.0)
        np.minimum(h, 359.999, out=h)
        buf["heading"][:, 0] = h
        self.which = which = 2 * t.deg[node] + (self.ist[:, K.OD] == 0)
        np.take(self.mask_table, which, axis=0, out=buf["action_mask"])
        buf["instruction"][:] = self.instruction

    def masks(self) -> np.ndarray:
        """The ``(N, table_n)`` boolean action masks."""
        which = self.which
        if which is None:
            node = self.ist[:, K.NODE]
            self.which = which = 2 * self.tables.deg[node] + (self.ist[:, K.OD] == 0)
        return self.mask_bool[which]

    def info(self, rows: np.ndarray | None = None) -> dict[str, Any]:
        """The batch ``info`` of the rows ``rows`` (a boolean mask; all by default) in
        the layout of :func:`urban_gym.envs.vector.batch_infos`: the keys of
        ``StreetGraphEnv._info``, each an array over the envs with its ``_key`` mask.
        """
        t = self.tables
        n = self.n
        ist = self.ist
        node = ist[:, K.NODE]
        heading = np.mod(self.fst[:, K.HEADING], 360.0)
        heading[heading >= 360.0] = 0.0
        lists = t.bearing_lists
        bearings = np.empty(n, dtype=object)
        for i, u in enumerate(node.tolist()):
            bearings[i] = lists[u].copy()
        if rows is None:  # every row: the layout written out
            every = self.every
            return {
                "pose": {
                    "x": t.x[node],
                    "y": t.y[node],
                    "heading": heading,
                    "_x": every.copy(),
                    "_y": every.copy(),
                    "_heading": every.copy(),
                },
                "_pose": every.copy(),
                "distance_to_goal_m": self.goal_d[self.rows, node],
                "_distance_to_goal_m": every.copy(),
                "steps": ist[:, K.STEPS].copy(),
                "_steps": every.copy(),
                "invalid_actions": ist[:, K.INVALID].copy(),
                "_invalid_actions": every.copy(),
                "action_valid": self.valid.copy(),
                "_action_valid": every.copy(),
                "invalid_action": self.messages.copy(),
                "_invalid_action": every.copy(),
                "task_id": self.task_id.copy(),
                "_task_id": every.copy(),
                "task": self.task.copy(),
                "_task": every.copy(),
                "node": t.ids[node],
                "_node": every.copy(),
                "option_bearings": bearings,
                "_option_bearings": every.copy(),
                "decisions": ist[:, K.DECIS].copy(),
                "_decisions": every.copy(),
                "transitions": ist[:, K.TRANS].copy(),
                "_transitions": every.copy(),
            }
        cols: dict[str, Any] = {
            "pose": {"x": t.x[node], "y": t.y[node], "heading": heading},
            "distance_to_goal_m": self.goal_d[self.rows, node],
            "steps": ist[:, K.STEPS].copy(),
            "invalid_actions": ist[:, K.INVALID].copy(),
            "action_valid": self.valid.copy(),
            "invalid_action": self.messages.copy(),
            "task_id": self.task_id.copy(),
            "task": self.task.copy(),
            "node": t.ids[node],
            "option_bearings": bearings,
            "decisions": ist[:, K.DECIS].copy(),
            "transitions": ist[:, K.TRANS].copy(),
        }
        return _layout(cols, rows)


def _layout(cols: dict[str, Any], rows: np.ndarray) -> dict[str, Any]:
    """``cols`` (arrays over all envs, dicts of them) with their ``_key`` masks, the
    boolean ``rows``; the rows outside ``rows`` blanked (0 or None) as ``batch_infos``
    leaves them.
    """
    out: dict[str, Any] = {}
    every = bool(rows.all())
    for key, col in cols.items():
        if isinstance(col, dict):
            out[key] = _layout(col, rows)
        else:
            if not every:
                col[~rows] = None if col.dtype == object else 0
            out[key] = col
        out["_" + key] = rows.copy()
    return out


__all__ = ["BatchEpisodes", "OptionTables", "batchable", "option_tables"]
