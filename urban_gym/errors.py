"""Every error urban_gym raises, in one module, under one root: :class:`UrbanGymError`.

Catch :class:`UrbanGymError` for anything of urban_gym's own. Each error is also the
built-in it resembles, so code that knows nothing of urban_gym catches it too:

==============================  ================================================  =======================
error                           raised for                                         also a
==============================  ================================================  =======================
:class:`InputError`             bad input: an argument, option, action set,        ``ValueError``
                                name or file content urban_gym cannot use
:class:`CityLoadError`          a city that cannot be loaded                       ``ValueError``
:class:`CityNotFoundError`      a city file that does not exist                    ``FileNotFoundError``
:class:`BundleError`            a saved city bundle missing a file or malformed    ``ValueError``
:class:`TaskError`              a malformed task or suite, an unknown task         ``ValueError``
:class:`SuiteNotFoundError`     a suite file that does not exist                   ``FileNotFoundError``
:class:`SuiteGenerationError`   a city that supports no task type of a family      ``ValueError``
:class:`MissingFileError`       any other file that does not exist (a              ``FileNotFoundError``
                                checkpoint, a config, a list of task ids)
:class:`JSONDataError`          JSON data that breaks its schema                   ``ValueError``
:class:`GraphError`             a family's graph (file, nodes, links) malformed    ``ValueError``
:class:`GoalModeError`          a ``goal=`` mode unknown or not applicable         ``ValueError``
:class:`RenderError`            a renderer's bad argument                          ``ValueError``
:class:`InfoSchemaError`        an ``info`` dict that breaks the shared schema     ``ValueError``
:class:`RecordsError`           a run folder that cannot be read or written        ``ValueError``
:class:`ManifestMismatch`       a run folder made with other settings              ``ValueError``
:class:`TraceFormatError`       a per-step trace file that is malformed            ``ValueError``
:class:`JudgeError`             a judge that cannot be set up                      ``ValueError``
:class:`ControlError`           a play-page command the page cannot have meant     ``ValueError``
:class:`SessionBusy`            a play session asked while busy                    ``RuntimeError``
:class:`WorkerError`            a vector env's worker process that died, or whose   ``RuntimeError``
                                error did not pickle
:class:`ModelError`             a language model that could not be reached or      ``RuntimeError``
                                gave no usable completion
:class:`AgentGaveUp`            an agent that cannot go on (the harness ends the   --
                                episode with its ``termination``)
:class:`InvalidAction`          an action an env cannot carry out (inside ``step``  --
                                it becomes an invalid-action step, never escapes)
==============================  ================================================  =======================

Messages name the bad value and say what was wrong with it. A family may subclass these
for its own data (its graph's errors subclass :class:`GraphError`).
"""

from __future__ import annotations

from typing import Any


class UrbanGymError(Exception):
    """The root of every error of urban_gym."""


class InputError(UrbanGymError, ValueError):
    """Bad input: an argument, option, name or file content urban_gym cannot use."""


class MissingFileError(InputError, FileNotFoundError):
    """A file urban_gym was asked to read does not exist."""


class CityLoadError(InputError):
    """A city could not be loaded: missing or unreadable file, not OSM data, an extract
    without buildings or walkable ways, an empty bounding box, an unknown city name.
    """


class CityNotFoundError(CityLoadError, FileNotFoundError):
    """A city file that does not exist."""


class BundleError(CityLoadError):
    """A saved city bundle is missing a file or holds malformed data."""


class TaskError(InputError):
    """A malformed task or suite, an unknown task id, type or difficulty."""


class SuiteNotFoundError(TaskError, FileNotFoundError):
    """A suite file that does not exist."""


class SuiteGenerationError(TaskError):
    """A city that supports no task type of a family; the message names what it lacks.

    ``report`` holds the per-type :class:`~urban_gym.tasks.report.GenerationReport`.
    """

    def __init__(self, report: Any) -> None:
        super().__init__(
            f"city {report.city!r} supports no {report.family} task type:\n{report.format()}"
        )
        self.report = report


class JSONDataError(InputError):
    """JSON data that breaks its schema: a wrong type, a missing or unknown key."""


class GraphError(InputError):
    """A family's graph that is malformed: its file, its nodes or its links."""


class GoalModeError(InputError):
    """A ``goal=`` mode that is unknown or cannot apply to the env."""


class RenderError(InputError):
    """A renderer's bad argument: a size, a position, a field of view, an image."""


class InfoSchemaError(InputError):
    """An ``info`` dict that breaks the shared schema (:mod:`urban_gym.envs.info`)."""


class RecordsError(InputError):
    """A run folder that cannot be read or written: a torn manifest, a malformed record."""


class ManifestMismatch(RecordsError):
    """A run folder made with other settings than the run resuming it."""


class TraceFormatError(InputError):
    """A per-step trace file (a run folder's ``traces/``) that is malformed."""


class JudgeError(InputError):
    """An answer judge that cannot be set up: a bad endpoint, prompt or cache."""


class ControlError(InputError):
    """A command the play page cannot have meant: an unknown control or a parameter that
    is not a number (a bug of the page, answered with HTTP 400; never an env step).
    """


class SessionBusy(UrbanGymError, RuntimeError):
    """A play session asked for something while it is busy (answered with HTTP 409)."""


class WorkerError(UrbanGymError, RuntimeError):
    """A worker process of a vector env that died, or whose error could not be sent back
    as itself (its message and traceback are in the error's notes).
    """


class ModelError(UrbanGymError, RuntimeError):
    """The model could not be reached or gave no usable completion.

    Attributes: ``status`` (last HTTP status, None for connection errors) and ``attempts``.
    """

    def __init__(self, message: str, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class AgentGaveUp(UrbanGymError):
    """Raised by an agent's ``act`` when it cannot go on (e.g. the model client gave up
    after its retries); the harness ends the episode with ``termination`` (one of the
    env's termination reasons, e.g. ``model_error``) and records ``str(exc)``.
    """

    def __init__(self, termination: str, message: str) -> None:
        super().__init__(message)
        self.termination = termination


class InvalidAction(UrbanGymError):
    """An agent's action that cannot be carried out; the message is shown to the agent
    (inside ``step`` it becomes an invalid-action step).
    """


class CityLoadWarning(UserWarning):
    """A city loaded, with a caveat: features dropped for bad coordinates, a cache that
    could not be written. Turn it into an error with
    ``warnings.simplefilter("error", CityLoadWarning)``.
    """


__all__ = [
    "AgentGaveUp",
    "BundleError",
    "CityLoadError",
    "CityLoadWarning",
    "CityNotFoundError",
    "ControlError",
    "GoalModeError",
    "GraphError",
    "InfoSchemaError",
    "InputError",
    "InvalidAction",
    "JSONDataError",
    "JudgeError",
    "ManifestMismatch",
    "MissingFileError",
    "ModelError",
    "RecordsError",
    "RenderError",
    "SessionBusy",
    "SuiteGenerationError",
    "SuiteNotFoundError",
    "TaskError",
    "TraceFormatError",
    "UrbanGymError",
]
