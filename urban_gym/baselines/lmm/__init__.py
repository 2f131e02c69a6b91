"""Language-model baselines, split as in BALROG: the client (HTTP), the prompt builder
(which messages), the agent (the loop); plus the scripted loopback server used as the
test double of the whole path, and the demo.
"""

from urban_gym.baselines.lmm.agent import LMMAgent, run_episode
from urban_gym.baselines.lmm.client import ChatClient, ChatResponse, ClientConfig, ModelError
from urban_gym.baselines.lmm.prompt import PromptBuilder, prompt_builder_for
from urban_gym.baselines.lmm.server import ScriptedServer, wrap_reply

__all__ = [
    "ChatClient",
    "ChatResponse",
    "ClientConfig",
    "LMMAgent",
    "ModelError",
    "PromptBuilder",
    "ScriptedServer",
    "prompt_builder_for",
    "run_episode",
    "wrap_reply",
]
