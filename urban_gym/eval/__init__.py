"""The evaluation harness: any agent on any registered id, into a run folder, and reports.

=====================  =====================================================================
module                 its one job
=====================  =====================================================================
``runner``             ``urban-gym eval``: tasks, episode keys and seeds, manifest, resume,
                       the serial loop (:func:`runner.run`)
``backends``           episodes in local worker processes or on Ray
``trace``              one episode of any agent: the per-step trace and the record; replays
``records``            the run folder: manifest, whole-line records, torn-line repair, traces
``tracefile``          trace format 2: an episode's steps as one line of a part file
``jsonlines``          strict JSON lines, fast (the C encoder, checked)
``categories``         each task's category and the facts the analyses need
``stats``              bootstrap CIs over tasks, paired bootstrap, exact McNemar, kappa
``failures``           the five failure causes of 360CityArena as rules over a trace
``labeler``            a model's failure labels and their agreement with the rules
``labeler_images``     the views and maps the labeller sees, replayed within a byte budget
``judging``            which fuzzy-match judge scored a run: its manifest entry, its label
``report``             ``urban-gym report``: tables, comparisons, leaderboard (report.json/md)
``sensitivity``        ``urban-gym sensitivity``: success at scaled radii, Kendall's tau
``plots``              the report's PNGs
``replay``             GIFs of the best and worst episodes, from exact replays
``judge_agreement``    the language-model judge against the deterministic one
``legacy``             the ``*-eval`` commands as aliases of the harness
``episodes``           one episode of the oracle or the random agent (used by tests)
=====================  =====================================================================

Agents follow :class:`urban_gym.baselines.agents.Agent`. Nothing here is imported by
``import urban_gym``.
"""
