"""Human play in the browser: people play the same tasks as the agents, and their episodes
are recorded as a run of the evaluation harness (the human baseline).

``urban-gym play ENV_ID [--suite ...] [--tasks ...] [--out RUN_DIR] [--port 0]`` starts a
web server on loopback and prints the page's URL. Each browser session gets its own env;
the page shows what the agent observes -- never ``info`` -- and offers every action of the
family as buttons with keyboard shortcuts (:mod:`urban_gym.play.controls`). The records
are the harness's: ``RUN_DIR/manifest.json`` with ``agent: {"spec": "human", "kind":
"human"}``, ``episodes.jsonl`` and the traces, so ``urban-gym report RUN_DIR`` builds the
human table with confidence intervals, and ``urban-gym report HUMAN_RUN MODEL_RUN`` the
paired comparison.

=============  ==================================================================
module         its one job
=============  ==================================================================
``controls``   the buttons and keys of each family, and the action of each command
``view``       the page's state from an observation (images, texts, options, mask)
``session``    one browser session: its env, the episode thread, the human agent,
               abandonment
``run``        the run folder, the episode keys, which session plays which, records
``app``        the Starlette app and the uvicorn server (``urban-gym play``)
``browser``    headless Chromium driving the page by keys (tests and benchmarks)
=============  ==================================================================

This layer sits above :mod:`urban_gym.eval` (it imports the harness; nothing below imports
it). Starlette and uvicorn (the ``play`` extra) are imported only here, never by
``import urban_gym``.
"""
