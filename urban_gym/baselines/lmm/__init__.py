"""Language-model baselines, split as in BALROG: the client (HTTP, :mod:`.client`), the
prompt builder (which messages, :mod:`.prompt`), the agent (:class:`LMMAgent`); plus the
scripted loopback server used as the test double of the whole path, and the demo. Their
episodes run in the one episode loop, :func:`urban_gym.eval.trace.run_episode`.
"""

from urban_gym.baselines.lmm.agent import LMMAgent
from urban_gym.baselines.lmm.client import ChatClient, ChatResponse, ClientConfig
from urban_gym.baselines.lmm.prompt import PromptBuilder, prompt_builder_for
from urban_gym.baselines.lmm.server import ScriptedServer, wrap_reply
from urban_gym.errors import ModelError

__all__ = [
    "ChatClient",
    "ChatResponse",
    "ClientConfig",
    "LMMAgent",
    "ModelError",
    "PromptBuilder",
    "ScriptedServer",
    "prompt_builder_for",
    "wrap_reply",
]
