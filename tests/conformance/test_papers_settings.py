"""Settings the papers state in a line each, checked against the numbers written out here
(not imported from the code under test): 360CityArena's action names (appendix B.1) and
stopping rules (A.3), CityNav's episode limits (section 5.1) and option views (appendix,
Street View API parameters).
"""

from __future__ import annotations

import inspect

from urban_gym.families.posegraph360.actions import make_action_set
from urban_gym.families.posegraph360.env import PoseGraph360Env
from urban_gym.families.streetgraph import env as streetgraph_env
from urban_gym.families.streetgraph.env import StreetGraphEnv


def defaults(cls):
    return {
        k: p.default
        for k, p in inspect.signature(cls.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_360cityarena_actions_are_the_papers():
    # B.1: W, LEFT/RIGHT/UP, S, Q, E, A, D, ANSWER -- nothing more, nothing less
    paper = {"W", "A", "D", "Q", "E", "S", "LEFT", "UP", "RIGHT", "ANSWER"}
    assert set(make_action_set().names) == paper


def test_360cityarena_stopping_rules_are_the_papers():
    # A.3: 50 steps; 20 steps without moving; 5 steps moving away from the goal
    d = defaults(PoseGraph360Env)
    assert (d["step_limit"], d["stagnation_limit"], d["away_limit"]) == (50, 20, 5)


def test_citynav_limits_and_views_are_the_papers():
    # section 5.1: 150 decision points, 2000 graph transitions per run
    d = defaults(StreetGraphEnv)
    assert (d["max_decisions"], d["max_transitions"]) == (150, 2000)
    # appendix: fov=90, pitch=+30 for every option's view
    assert (streetgraph_env.VIEW_FOV, streetgraph_env.VIEW_PITCH) == (90.0, 30.0)
