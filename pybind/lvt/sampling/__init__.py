"""The sampling side: what a policy sampled, read without touching the ids the trainer learns.

:func:`read_completion` reads a sampled assistant turn the way serving engines' parsers do
(content, reasoning, tool calls, how it ended, whether it is canonical); :func:`stop_ids` gives
the ids a sampler stops on. ``ChatEncoder.read_completion`` and ``ChatEncoder.stop_ids`` are
the same functions bound to an encoder. :func:`run_agent` runs a token-in/token-out tool
loop on any engine; :func:`sampled_block` is a sampled turn as the history and the trainer
hold it; :class:`CompletionStream` reads a completion as it streams.
"""

from lvt.sampling.completion import Completion, Problem, ReadCall, Termination, call_id
from lvt.sampling.read import prompt_ids, read_completion, stop_ids
from lvt.sampling.rollout import (
    Rollout,
    RolloutError,
    Turn,
    arun_agent,
    run_agent,
    sampled_block,
)
from lvt.sampling.stream import CompletionStream, Delta

__all__ = ["Completion", "CompletionStream", "Delta", "Problem", "ReadCall", "Rollout",
           "RolloutError", "Termination", "Turn", "arun_agent", "call_id", "prompt_ids",
           "read_completion", "run_agent", "sampled_block", "stop_ids"]
