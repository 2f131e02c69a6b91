"""Tasks: what an agent is asked to do in a world, and how it is scored.

:mod:`~urban_gym.tasks.spec` (``TaskSpec``, task types), :mod:`~urban_gym.tasks.suite`
(JSONL suites and their statistics), :mod:`~urban_gym.tasks.metrics` (the field's metrics
as plain functions), :mod:`~urban_gym.tasks.numbers` (the number an answer states, in
digits or English words), :mod:`~urban_gym.tasks.families` (the one registry of task
families). Each family's own task package lives in its folder (``urban_gym/families/<name>/tasks``).
"""
