"""The compiled step of N StreetGraph episodes (numba, ``nogil``): the state half of
:meth:`StreetGraphEnv._step_core <urban_gym.families.streetgraph.env.StreetGraphEnv>` for
a batch, over the arrays of :mod:`urban_gym.families.streetgraph.batch`.

It does what the single env's ``_decode`` / ``_apply`` / ``_travel`` / ``_reward`` /
``_check_end`` do, with every float it adds or compares computed beforehand by the same
Python expressions (street and link lengths from ``math.dist``, headings from
``math.atan2``), so the sums, rewards and headings are bit-equal to the single env's. What
needs Python -- a stop's verdict, an episode's metrics -- is left to the caller through
the ``end`` codes.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

_JIT: dict[str, Any] = {"cache": True, "nogil": True}  # numba.njit keyword arguments

# columns of the integer state (N, 10)
NODE, TRANS, DECIS, STEPS, INVALID, TLEN, OD, LINK, MAXT, MAXD = range(10)
# columns of the float state (N, 3)
HEADING, DIST, PROGRESS = range(3)

# step codes: what the action was (the invalid ones last: code >= NO_OPTION)
GO, STOP, SKIPPED, NO_OPTION, NO_STOP, OUTSIDE = range(6)
# end codes: how the step ended the episode
RUNNING, ARRIVED, TRANSITION_LIMIT, DECISION_LIMIT, STOPPED = range(5)


@numba.njit(**_JIT)
def step_envs(
    actions,
    active,
    ist,
    fst,
    goal_d,
    goal_in,
    traj,
    before,
    after,
    deg,
    opt_ptr,
    st_len,
    st_ptr,
    st_nodes,
    link_len,
    link_head,
    table_n,
    invalid_reward,
    reward,
    code,
    end,
):
    """Step every env ``i`` with ``active[i]`` by table index ``actions[i]`` (``table_n``
    entries, the last ``stop``; an invalid one earns ``invalid_reward``): ``ist`` /
    ``fst`` its state (columns above), ``goal_d`` / ``goal_in`` its goal distances and
    goal nodes over the graph's nodes, ``traj`` its trajectory (``ist[i, TLEN]`` long),
    ``before`` / ``after`` its per-decision remaining distances. Writes ``reward``,
    ``code`` and ``end`` of each env.
    """
    n = actions.shape[0]
    for i in range(n):
        if not active[i]:
            code[i] = SKIPPED
            end[i] = RUNNING
            reward[i] = 0.0
            continue
        ist[i, STEPS] += 1
        u = ist[i, NODE]
        od = ist[i, OD] != 0
        a = actions[i]
        was = goal_d[i, u]
        c = GO
        if a < 0 or a >= table_n:
            c = OUTSIDE
        elif a == table_n - 1:
            c = NO_STOP if od else STOP
        elif a >= deg[u]:
            c = NO_OPTION
        code[i] = c
        if c != GO and c != STOP:
            ist[i, INVALID] += 1
            reward[i] = invalid_reward
            end[i] = DECISION_LIMIT if ist[i, STEPS] >= ist[i, MAXD] else RUNNING
            continue
        if c == GO:
            s = opt_ptr[u] + a
            last = _travel(i, s, u, od, ist, fst, goal_in, traj, st_len, st_ptr, st_nodes, link_len)
            if last >= 0 and not np.isnan(link_head[last]):
                fst[i, HEADING] = link_head[last]
            d = ist[i, DECIS]
            ist[i, DECIS] = d + 1
            now = goal_d[i, ist[i, NODE]]
            if d < before.shape[1]:  # always, while the limits hold (the buffers fit them)
                before[i, d] = was
                # a change under 1 mm is float noise (positions from lat/lon), not progress
                after[i, d] = was if abs(now - was) <= 1e-3 else now
        x = was - goal_d[i, ist[i, NODE]]
        reward[i] = fst[i, PROGRESS] * (x if np.isfinite(x) else 0.0)
        if c == STOP:
            end[i] = STOPPED
        elif od and goal_in[i, ist[i, NODE]]:
            end[i] = ARRIVED
        elif ist[i, TRANS] >= ist[i, MAXT]:
            end[i] = TRANSITION_LIMIT
        elif ist[i, STEPS] >= ist[i, MAXD]:
            end[i] = DECISION_LIMIT
        else:
            end[i] = RUNNING


@numba.njit(**_JIT)
def _travel(i, s, u, od, ist, fst, goal_in, traj, st_len, st_ptr, st_nodes, link_len):
    """Env ``i`` at node ``u`` travels street ``s``: all of it when it may (no link
    travel, within the transition limit, no goal node on it), else link by link until
    the transition limit, a goal node or (link travel) one link. Returns the index of the
    last link taken (into ``st_nodes``), -1 for none.
    """
    a, b = st_ptr[s], st_ptr[s + 1]
    moved_from = ist[i, TRANS]
    link = ist[i, LINK] != 0
    whole = not link and moved_from + (b - a) <= ist[i, MAXT]
    if whole and od:
        if goal_in[i, u]:
            whole = False
        else:
            for j in range(a, b):
                if goal_in[i, st_nodes[j]]:
                    whole = False
                    break
    t = ist[i, TLEN]
    if whole:
        fst[i, DIST] += st_len[s]
        ist[i, TRANS] = moved_from + (b - a)
        for j in range(a, min(b, a + traj.shape[1] - t)):
            traj[i, t] = st_nodes[j]
            t += 1
        ist[i, TLEN] = t
        ist[i, NODE] = st_nodes[b - 1]
        return b - 1
    last = -1
    stop = a + 1 if link else b
    for j in range(a, stop):
        if ist[i, TRANS] >= ist[i, MAXT] or t >= traj.shape[1]:
            break
        node = st_nodes[j]
        fst[i, DIST] += link_len[j]
        ist[i, TRANS] += 1
        traj[i, t] = node
        t += 1
        ist[i, NODE] = node
        last = j
        if od and goal_in[i, node]:
            break
    ist[i, TLEN] = t
    return last
