"""``--preset citynav``: the sampling settings CityNav ran its models with (its appendix,
"LLM parameters"), one row per model family.

============  =======================================  ==========================================
row           the paper's models                        settings (the paper's values)
============  =======================================  ==========================================
``openai``    GPT-4o, GPT-4.1 (non-reasoning)           temperature 1.0, top_p 1.0,
                                                        presence_penalty 0, frequency_penalty 0,
                                                        n 1, stream false, max_tokens 8000
``gemini``    Gemini 2.5 Flash                          temperature 1.0, top_p 0.95, top_k 64,
                                                        candidate_count 1, max_tokens 8000
``qwen``      Qwen 2.5-VL (FP16, served by Ollama)      temperature 0.8, top_p 0.9, top_k 40,
                                                        repeat_penalty 1.1, repeat_last_n 64,
                                                        num_predict -1
============  =======================================  ==========================================

How the settings become a chat-completions request: ``temperature`` and ``max_tokens`` are
the client's own settings; the others go into every request body under the paper's names
(``extra_body``), except Gemini's ``candidate_count`` (sent as ``n``, its name on an
OpenAI-compatible endpoint) and Qwen's ``num_predict`` -1, "no limit" (sent as
``max_tokens`` -1, which Ollama's OpenAI-compatible endpoint turns into ``num_predict``
-1; an endpoint that refuses a negative limit needs ``--max-tokens N``, recorded in the
manifest as the user's). Ollama's OpenAI-compatible endpoint reads ``temperature``,
``top_p`` and ``max_tokens`` and ignores ``top_k``, ``repeat_penalty`` and
``repeat_last_n``: set those three as ``PARAMETER`` lines of the model's Modelfile to run
the paper's settings there.

The row is picked by ``--model`` (``gpt-4o``, ``gpt-4.1`` and their dated snapshots;
``gemini-2.5-flash``; any ``qwen2.5-vl`` / ``qwen2.5vl`` model, e.g. Ollama's
``qwen2.5vl:32b``; a provider prefix such as ``openai/`` is ignored) or named with
``--preset citynav:ROW``. The paper lists no settings for its reasoning models (GPT-5 and
o3): for them, and any model in no row, the preset is an error naming the rows.
"""

from __future__ import annotations

from urban_gym.eval.presets import ModelPreset, PresetRow

#: CityNav's model settings (see the module docstring).
CITYNAV = ModelPreset(
    name="citynav",
    source="CityNav, appendix 'LLM parameters'",
    rows=(
        PresetRow(
            "openai",
            ("gpt-4o", "gpt-4o-20*", "gpt-4.1", "gpt-4.1-20*"),
            {
                "temperature": 1.0,
                "max_tokens": 8000,
                "extra_body": {
                    "top_p": 1.0,
                    "presence_penalty": 0,
                    "frequency_penalty": 0,
                    "n": 1,
                    "stream": False,
                },
            },
            "GPT-4o, GPT-4.1 (non-reasoning)",
        ),
        PresetRow(
            "gemini",
            ("gemini-2.5-flash", "gemini-2.5-flash-preview*", "gemini-2.5-flash-0*"),
            {
                "temperature": 1.0,
                "max_tokens": 8000,
                "extra_body": {"top_p": 0.95, "top_k": 64, "n": 1},
            },
            "Gemini 2.5 Flash (candidate_count 1 sent as n 1)",
        ),
        PresetRow(
            "qwen",
            ("qwen2.5-vl*", "qwen2.5vl*", "qwen-2.5-vl*"),
            {
                "temperature": 0.8,
                "max_tokens": -1,
                "extra_body": {
                    "top_p": 0.9,
                    "top_k": 40,
                    "repeat_penalty": 1.1,
                    "repeat_last_n": 64,
                },
            },
            "Qwen 2.5-VL on Ollama (num_predict -1, no limit, sent as max_tokens -1)",
        ),
    ),
    unlisted="the paper gives no settings for its reasoning models, GPT-5 and o3",
)
