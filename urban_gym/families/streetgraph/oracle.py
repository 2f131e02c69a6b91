"""The StreetGraph oracle: shortest-path navigation from the privileged goal distances."""

from __future__ import annotations

import math
from typing import Any


class StreetGraphOracle:
    """Solves StreetGraph tasks from ``env.unwrapped``'s privileged state.

    * Origin-destination tasks: at each intersection take the option that minimises the
      walking distance along the street to the first destination node on it, or else the
      street's length plus the precomputed shortest distance from its end
      (``env.unwrapped.goal_distances``). This follows a shortest path, so every reachable
      task is solved.
    * Instruction tasks: follow the reference route (``env.unwrapped.route``) one link at a
      time (``travel="link"``, the default for them) and ``stop`` on its last panorama.

    ``act`` returns canonical structured actions of the env's action set:
    ``{"action": "go", "option": i}`` or ``{"action": "stop"}``.
    """

    def __init__(self) -> None:
        self._k = 0

    def reset(self, env: Any) -> None:
        """Restart at the first instruction step."""
        self._k = 0

    def act(self, env: Any) -> dict[str, Any]:
        """The next structured action: follow the route of an instruction task, else take the
        option with the shortest way to the goal.
        """
        u = env.unwrapped
        if u.task.type == "instruction" and u.route is not None:
            return self._follow_route(u)
        return {"action": "go", "option": self._best_option(u)}

    @staticmethod
    def _best_option(u: Any) -> int:
        xy = u.graph.xy
        dist = u.goal_distances
        goal = u.goal_nodes
        best, best_cost = 0, math.inf
        for i, s in enumerate(u.options):
            acc = 0.0
            cost = math.inf
            nodes = s.nodes[:2] if u.link_travel else s.nodes
            for a, b in zip(nodes[:-1], nodes[1:]):
                acc += math.dist(xy[a], xy[b])
                if b in goal:
                    cost = acc
                    break
            else:
                cost = acc + float(dist[nodes[-1]])
            if cost < best_cost:
                best, best_cost = i, cost
        return best

    def _follow_route(self, u: Any) -> dict[str, Any]:
        route = u.route
        k = self._k
        while k + 1 < len(route) and route[k + 1] == route[k]:
            k += 1
        if u.node != route[k]:
            # resynchronise (e.g. after a reset of the env without reset of the oracle)
            k = route.index(u.node) if u.node in route else 0
        self._k = k
        if k == len(route) - 1:
            return {"action": "stop"}
        nxt = route[k + 1]
        for i, s in enumerate(u.options):
            if s.nodes[1] == nxt:
                self._k = k + 1
                return {"action": "go", "option": i}
        # the next route panorama is not one link away (street travel): head for the goal
        return {"action": "go", "option": self._best_option(u)}
