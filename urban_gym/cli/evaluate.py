"""``urban-gym`` commands that evaluate agents and read runs: eval, report, sensitivity,
cost, gepa.
"""

from __future__ import annotations

import argparse
import os
import sys

from urban_gym.cli._common import command, csv_list, json_arg, task_env_kwargs, task_ids

# ------------------------------------------------------------------ the harness


def _add_lmm_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """Client settings of a language model (``prefix``: e.g. ``judge-``)."""
    from urban_gym.baselines.lmm.options import add_lmm_options

    add_lmm_options(p, json_arg, prefix)


def lmm_options(args: argparse.Namespace) -> dict:
    """The ``lmm`` agent's options from the parsed arguments."""
    from urban_gym.baselines.lmm.options import lmm_options as options

    return options(args)


def _add_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="a registered id (UrbanGym/...)")
    p.add_argument("--out", required=True, help="run folder (rerun the command to resume)")
    p.add_argument(
        "--agent",
        default="oracle",
        help="oracle | random | lmm | sb3:PATH | module:Class (default oracle)",
    )
    p.add_argument(
        "--agent-kwargs", type=json_arg, default=None, help="JSON options of the agent class"
    )
    p.add_argument("--suite", default=None, help="suite name of the family or a JSONL path")
    p.add_argument("--env-kwargs", type=json_arg, default=None, help="gym.make kwargs (JSON)")
    p.add_argument("--task-types", default=None, help="comma-separated task types")
    p.add_argument("--difficulties", default=None, help="comma-separated difficulties")
    p.add_argument("--task-ids", default=None, help="comma-separated task ids or @FILE")
    p.add_argument("--seeds", type=int, default=1, help="repeats per task (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument(
        "--seeding",
        default="repeat",
        choices=("repeat", "task"),
        help="repeat: repeat r resets with seed+r; task: task i with seed+i (+r*n)",
    )
    p.add_argument("--workers", type=int, default=1, help="episodes in parallel")
    p.add_argument("--backend", default="local", choices=("local", "ray"))
    p.add_argument("--address", default=None, help="Ray cluster address (default: local Ray)")
    p.add_argument(
        "--force", action="store_true", help="move a different run in --out aside and start"
    )
    p.add_argument("--max-episodes", type=int, default=None, help="stop after N new episodes")
    p.add_argument(
        "--episode-deadline",
        type=float,
        default=7200.0,
        help="seconds an episode may take (default 7200; 0: none); an agent still acting "
        "then ends it with termination episode_deadline",
    )
    p.add_argument("--no-visibility", action="store_true", help="do not record goal_visible")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--judge",
        default="rules",
        choices=("rules", "lmm"),
        help="fuzzy_match judge of answers: rules (names + aliases) or lmm",
    )
    p.add_argument("--judge-prompt", default=None, help="judge prompt file (see judge.py)")
    _add_lmm_options(p)
    _add_lmm_options(p, "judge-")


@command(
    "eval",
    "evaluate any agent on any registered id and suite into a run folder (resumable, "
    "parallel): manifest.json, episodes.jsonl, per-step traces",
)(_add_eval)
def run_eval(args: argparse.Namespace) -> int:
    """Run (or resume) an evaluation into ``args.out`` and print its tallies."""
    from urban_gym.eval.runner import run

    kwargs = task_env_kwargs(args)
    if args.location_prior is not None and args.agent != "lmm":
        # the lmm agent's face adds (or leaves out) the location map itself, on any family
        kwargs["location_prior"] = args.location_prior
    from urban_gym.eval.presets import agent_options

    options = agent_options(args)
    judge = None
    if args.judge == "lmm":
        judge = {
            "kind": "lmm",
            "base_url": args.judge_base_url or args.base_url,
            "model": args.judge_model or args.model,
            "prompt_file": args.judge_prompt,
        }
        judge = {k: v for k, v in judge.items() if v is not None}
    if args.episode_deadline < 0:
        from urban_gym.errors import InputError

        raise InputError(f"--episode-deadline {args.episode_deadline!r}: must be >= 0 s (0: none)")
    res = run(
        args.env_id,
        args.out,
        agent=args.agent,
        agent_options=options,
        env_kwargs=kwargs,
        task_ids=task_ids(args.task_ids),
        seeds=args.seeds,
        seed=args.seed,
        seeding=args.seeding,
        workers=args.concurrency if args.concurrency else args.workers,
        backend=args.backend,
        address=args.address,
        force=args.force,
        track_visibility=not args.no_visibility,
        judge=judge,
        progress=not args.no_progress,
        command=["urban-gym", *sys.argv[1:]] if sys.argv and sys.argv[0] else None,
        max_episodes=args.max_episodes,
        episode_deadline_s=args.episode_deadline or None,
    )
    done = res.done_before + res.ran
    print(
        f"{res.run_dir}: {done}/{res.total} episodes recorded ({res.ran} now, "
        f"{res.done_before} before); {res.successes}/{res.ran} successful now; "
        f"{res.tokens:,} tokens; {res.errors} errors; {res.wall_s:.1f} s"
    )
    if res.parallel:
        from urban_gym.eval.backends import format_parallel

        print(f"  {format_parallel(res.parallel)}")
    print(f"  report: urban-gym report {res.run_dir}")
    return 0


def _add_gepa(p: argparse.ArgumentParser) -> None:
    from urban_gym.eval.gepa import add_gepa_arguments

    add_gepa_arguments(p, _add_lmm_options, json_arg)


@command("gepa", "evolve a language-model agent's instructions on the val split")(_add_gepa)
def run_gepa(args: argparse.Namespace) -> int:
    """Evolve the agent's instructions; the ``--preset``'s settings fill what is not given."""
    from urban_gym.eval.gepa import run_gepa_command
    from urban_gym.eval.presets import lmm_preset

    given = lmm_options(args)
    model = given.get("model") or os.environ.get("URBAN_GYM_LMM_MODEL")
    preset = lmm_preset(args.preset, model) if args.preset else {}
    return run_gepa_command(args, {**preset, **given})


def _add_cost(p: argparse.ArgumentParser) -> None:
    from urban_gym.baselines.lmm.costs import add_cost_arguments

    add_cost_arguments(p)


@command("cost", "tokens and US dollars of run folders (an editable price table)")(_add_cost)
def run_cost(args: argparse.Namespace) -> int:
    """Print the tokens and dollar cost of run folders."""
    from urban_gym.baselines.lmm.costs import run_cost_command
    from urban_gym.eval.records import RunDir

    def read(folder: os.PathLike) -> tuple[dict, list[dict]]:
        d = RunDir(folder)
        return d.read_manifest(), d.read_episodes()

    return run_cost_command(args, read)


def _add_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", help="run folders (the first is the baseline)")
    p.add_argument(
        "--out", default=None, help="output folder (default RUN_DIR/report; several runs: report)"
    )
    p.add_argument("--names", default=None, help="comma-separated display names of the runs")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--no-plots", action="store_true", help="no PNG plots")
    p.add_argument("--no-gifs", action="store_true", help="no GIFs of best/worst episodes")
    p.add_argument("--no-failures", action="store_true", help="no failure-cause breakdown")
    p.add_argument(
        "--layout",
        default="standard",
        help="standard (default), or a layout a family offers for its paper's tables, "
        "added to report.md and printed (an unknown name lists the layouts)",
    )
    p.add_argument("--labeler", default="rules", choices=("rules", "lmm"))
    p.add_argument("--labeler-max", type=int, default=200, help="failed episodes labeled per run")
    p.add_argument(
        "--labeler-images",
        action="store_true",
        help="--labeler lmm also sees each failed episode's views and location maps (replayed "
        "from its trace) at evenly spaced steps and the last, with the thoughts",
    )
    p.add_argument(
        "--labeler-image-budget",
        type=int,
        default=None,
        help="bytes of images (base64 data URLs) per labelled episode (default 4,000,000)",
    )
    _add_lmm_options(p, "labeler-")


@command(
    "report",
    "report of run folders: tables with bootstrap CIs per type/difficulty/category, paired "
    "comparisons, failure causes, leaderboard, plots, GIFs",
)(_add_report)
def run_report(args: argparse.Namespace) -> int:
    """Build the report of the run folders and write it with its plots and GIFs."""
    from pathlib import Path

    from urban_gym.eval.report import build_report, check_output_folder, write_report

    out = (
        Path(args.out)
        if args.out
        else (Path(args.run_dirs[0]) / "report" if len(args.run_dirs) == 1 else Path("report"))
    )
    check_output_folder(out, own_link_ok=bool(args.out))  # before anything is written
    labeler = None
    if (args.labeler_images or args.labeler_image_budget is not None) and args.labeler != "lmm":
        from urban_gym.errors import InputError

        raise InputError("--labeler-images and --labeler-image-budget need --labeler lmm")
    if args.labeler == "lmm" and not args.no_failures:
        from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
        from urban_gym.eval.labeler import ModelLabeler

        cfg = ClientConfig.from_env(base_url=args.labeler_base_url, model=args.labeler_model)
        labeler = ModelLabeler(
            ChatClient(cfg),
            max_episodes=args.labeler_max,
            images=args.labeler_images,
            image_budget=args.labeler_image_budget,
        )
    report = build_report(
        args.run_dirs,
        names=csv_list(args.names),
        resamples=args.resamples,
        seed=args.seed,
        failures=not args.no_failures,
        labeler=labeler,
        layout=args.layout,
    )
    if not args.no_gifs:
        from urban_gym.eval.replay import episode_gifs
        from urban_gym.eval.report import load_run, name_runs

        runs = [load_run(p) for p in args.run_dirs]
        name_runs(runs, csv_list(args.names))
        report["gifs"] = episode_gifs(runs, out)
    paths = write_report(report, out, plots=not args.no_plots)
    print(f"wrote {paths['md']} and {paths['json']} ({report['build_s']:.1f} s to build)")
    from urban_gym.eval.report import judges_text, layout_markdown

    print("  " + judges_text(report).replace("**", ""))
    for line in layout_markdown(report):
        print(line)
    for row in report["leaderboard"]:
        s = row["success"] or {}
        print(
            f"  {row['run']:<24} {row['env_id']:<36} success {100 * (s.get('mean') or 0):5.1f}% "
            f"[{100 * (s.get('low') or 0):.1f}, {100 * (s.get('high') or 0):.1f}]"
        )
    return 0


def _radii_arg(text: str) -> tuple[str, list[float]]:
    """``--radii TYPE=R1,R2,...``: a task type and its radii in metres."""
    tt, sep, values = text.partition("=")
    try:
        radii = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        radii = []
    if not sep or not tt.strip() or not radii:
        raise argparse.ArgumentTypeError(f"{text!r} is not TYPE=R1,R2,... (radii in metres)")
    return tt.strip(), radii


def _scales_arg(text: str) -> list[float]:
    """``--scales 0.75,1,1.25``: radius factors."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not comma-separated numbers") from None


def _add_sensitivity(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", help="run folders of one family")
    p.add_argument("--names", default=None, help="comma-separated display names of the runs")
    p.add_argument(
        "--out",
        default=None,
        help="folder for sensitivity.json and sensitivity.png (default RUN_DIR/sensitivity; "
        "several runs: sensitivity)",
    )
    p.add_argument(
        "--scales", type=_scales_arg, default=None, help="radius factors (default: the family's)"
    )
    p.add_argument(
        "--radii",
        type=_radii_arg,
        action="append",
        default=None,
        help="TYPE=R1,R2,...: radii (m) of one task type alone, repeatable (default: the family's)",
    )
    p.add_argument("--no-plot", action="store_true", help="no PNG plot")


@command(
    "sensitivity",
    "rescore runs at scaled success radii (and one type's radii alone): success per run "
    "and threshold, Kendall's tau between the runs' rankings, a PNG plot",
)(_add_sensitivity)
def run_sensitivity(args: argparse.Namespace) -> int:
    """Print the threshold sensitivity of the run folders and write its JSON and plot."""
    import json
    from pathlib import Path

    from urban_gym.eval.sensitivity import format_sensitivity, plot_sensitivity, sensitivity
    from urban_gym.strict_json import json_safe

    res = sensitivity(
        args.run_dirs,
        names=csv_list(args.names),
        scales=args.scales,
        radii=dict(args.radii) if args.radii else None,
    )
    print(format_sensitivity(res))
    out = (
        Path(args.out)
        if args.out
        else (
            Path(args.run_dirs[0]) / "sensitivity"
            if len(args.run_dirs) == 1
            else Path("sensitivity")
        )
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "sensitivity.json").write_text(
        json.dumps(json_safe(res), indent=1, ensure_ascii=False, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    wrote = [out / "sensitivity.json"]
    if not args.no_plot:
        wrote.append(plot_sensitivity(res, out / "sensitivity.png"))
    print("wrote " + " and ".join(str(p) for p in wrote))
    return 0
