"""Which judge a run's ``fuzzy_match`` answers were scored by, as its manifest records it
and its report states it.

Two judges exist: ``rules`` (the offline default, :func:`urban_gym.tasks.metrics.name_judge`:
the normalised answer equals, or contains as whole words, the expected name or one of
its aliases) and ``lmm`` (a language model asked whether the two answers name the same
place, :mod:`urban_gym.baselines.lmm.judge`, built to 360CityArena's judge of appendix
B.4). A run records its judge's setting under ``judge`` in ``manifest.json``:

* ``{"kind": "rules", "rule": "..."}``;
* ``{"kind": "lmm", "model", "base_url", "prompt", "prompt_sha256", ...}`` -- the model,
  the endpoint (without credentials), where the prompt came from (``"urban_gym default"``
  or the prompt file's path) and the SHA-256 of the prompt's text (the system prompt, a
  line ``---user---`` and the user template: the form of a prompt file), so two runs
  judged with different prompts are told apart even when the file names agree.

Runs written before judges were recorded have ``judge: null``: the rules judge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

#: The rules judge's setting.
RULES: dict[str, str] = {
    "kind": "rules",
    "rule": "the normalised answer equals, or contains as whole words, the expected name "
    "or one of its aliases",
}
#: Entries of a setting that describe the judge rather than configure it.
DESCRIPTIVE = ("rule", "prompt", "prompt_sha256")


def prompt_sha256(system_prompt: str, user_template: str) -> str:
    """SHA-256 (hex) of a judge prompt written as a prompt file: the system prompt, a line
    ``---user---``, the user template.
    """
    from urban_gym.baselines.lmm.judge import USER_MARKER

    text = f"{system_prompt.strip()}\n{USER_MARKER}\n{user_template.strip()}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_setting(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The manifest's ``judge`` of a run given the harness's judge ``settings`` (None:
    the rules judge; else a language-model judge's ``base_url``, ``model``,
    ``prompt_file``, ... as :func:`urban_gym.baselines.lmm.judge.make_judge` takes them):
    see the module docstring. A prompt file that cannot be read is an
    :class:`~urban_gym.errors.InputError` naming it.
    """
    if not settings or settings.get("kind") == "rules":
        return dict(RULES)
    from urban_gym.baselines.lmm.judge import SYSTEM_PROMPT, USER_TEMPLATE, load_prompt

    s = {k: v for k, v in settings.items() if k not in DESCRIPTIVE}
    out: dict[str, Any] = {"kind": "lmm"}
    out.update((k, v) for k, v in public_options(s).items() if k != "kind")
    prompt_file = s.get("prompt_file")
    if prompt_file:
        system, user = load_prompt(prompt_file)
        out["prompt"] = str(prompt_file)
    else:
        system, user = SYSTEM_PROMPT, USER_TEMPLATE
        out["prompt"] = "urban_gym default"
    out["prompt_sha256"] = prompt_sha256(system, user)
    return out


def run_judge(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The judge setting a run's manifest records (``null`` or missing: the rules judge)."""
    j = manifest.get("judge")
    if not isinstance(j, Mapping):
        return dict(RULES)
    return {"kind": "lmm", **j}


def judge_identity(setting: Mapping[str, Any] | None) -> dict[str, Any]:
    """What tells two judges apart: the setting without its description (``rule``), the
    rules judge for None.
    """
    s = dict(setting) if setting else dict(RULES)
    s.setdefault("kind", "lmm")
    return {k: v for k, v in s.items() if k != "rule"}


def same_judge(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two recorded judge settings are the same judge: equal on the entries both
    record (a setting written before an entry was recorded lacks it).
    """
    x, y = judge_identity(a), judge_identity(b)
    return all(x[k] == y[k] for k in x.keys() & y.keys())


def judge_label(setting: Mapping[str, Any] | None) -> str:
    """One line for a report: ``rules`` or ``lmm <model> (prompt <source>, sha256
    <first 12 hex digits>)``.
    """
    s = judge_identity(setting)
    if s["kind"] == "rules":
        return "rules"
    sha = str(s.get("prompt_sha256") or "")[:12]
    prompt = s.get("prompt") or s.get("prompt_file") or "urban_gym default"
    where = f"prompt {prompt}" + (f", sha256 {sha}" if sha else "")
    return f"lmm {s.get('model') or '(model not recorded)'} ({where})"


def judges_summary(settings: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Whether runs share one judge: ``{"same": bool, "labels": [label per run]}``."""
    labels = [judge_label(s) for s in settings]
    same = all(same_judge(settings[0], s) for s in settings[1:]) if settings else True
    return {"same": same, "labels": labels}


__all__ = [
    "DESCRIPTIVE",
    "RULES",
    "judge_identity",
    "judge_label",
    "judge_setting",
    "judges_summary",
    "prompt_sha256",
    "run_judge",
    "same_judge",
]


def public_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Options as the manifest records them: URLs without credentials or query
    (:func:`~urban_gym.baselines.lmm.agent.public_url`), values of keys that name a key,
    token, secret or password left out.
    """
    from urban_gym.baselines.lmm.agent import public_url

    out: dict[str, Any] = {}
    for k, v in (options or {}).items():
        low = str(k).lower()
        if any(w in low for w in ("key", "token", "secret", "password")):
            out[k] = "<not recorded>"
        elif "url" in low and isinstance(v, str):
            out[k] = public_url(v)
        else:
            out[k] = v
    return out
