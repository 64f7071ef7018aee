"""A verl agent loop that renders with lvt and keeps the sampled ids (``"lvt_agent"``).

verl's own ``tool_agent`` loop re-tokenizes through the Jinja template and a tool parser of its
choice; this loop runs :func:`lvt.sampling.arun_agent` on verl's server manager instead: the prompt
of every turn is lvt's render of the history, each assistant turn stays the ids the engine
sampled (a :class:`~lvt.model.Sampled` block), the calls are read by lvt's reader
(:meth:`~lvt.encoder.ChatEncoder.read_completion`), and every turn is checked to extend what the
engine saw and sampled. The output row is lvt's training render of the finished conversation:

* ``prompt_ids``: the first turn's prompt (lvt's render with its generation prompt);
* ``response_ids``: the rest of the final render (sampled turns, tool results, headers);
* ``response_mask``: lvt's loss mask there, checked to select exactly the sampled ids, in order
  (the ``mask_sampled`` theorem), else a :class:`~lvt.sampling.RolloutError`;
* ``response_logprobs``: the engine's log-probabilities at the sampled positions, 0 elsewhere
  (``None`` when the engine returned none).

Register it in verl's agent-loop config file (``actor_rollout_ref.rollout.agent.
agent_loop_config_path``)::

    - name: lvt_agent
      _target_: lvt_trainer.integrations.verl_agent.LvtAgentLoop
      lvt_format: qwen3          # optional: detected from the tokenizer's template otherwise
      lvt_options: {enable_thinking: true}

and set the dataset's ``agent_name`` to ``lvt_agent``. Importing this module imports verl's
agent-loop stack (``lvt[verl]`` lists what that needs besides verl itself).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    ToolListWrap,
    register,
)
from verl.tools.function_tool import FunctionTool, normalize_function_tool_return

from lvt import ChatEncoder
from lvt.sampling import ReadCall, Rollout, RolloutError, arun_agent

__all__ = ["AGENT_NAME", "LvtAgentLoop", "verl_rows"]

logger = logging.getLogger(__name__)

#: The name the loop is registered under in verl's agent-loop registry.
AGENT_NAME = "lvt_agent"


def verl_rows(rollout: Rollout, logprobs: Sequence[Sequence[float] | None] | None = None
              ) -> tuple[list[int], list[int], list[int], list[float] | None]:
    """verl's row of a finished rollout: ``(prompt_ids, response_ids, response_mask,
    response_logprobs)``.

    ``logprobs[t]`` are the engine's log-probabilities of turn ``t``'s sampled ids (one per id),
    or ``None``; the result's log-probabilities are ``None`` unless every turn has them.

    Raises:
        RolloutError: the training render does not start with the first prompt, learns a
            prompt token, or its learned tokens are not the sampled ids in order; or a turn's
            log-probabilities do not match its sampled ids in number.
    """
    enc = rollout.encoded
    ids = [int(x) for x in enc.ids]
    mask = [int(x) for x in enc.mask]
    prompt = list(rollout.turns[0].prompt_ids)
    if ids[:len(prompt)] != prompt:
        raise RolloutError(0, 0, "the training render does not start with the first prompt")
    if any(mask[:len(prompt)]):
        raise RolloutError(0, mask.index(1), "the training render learns a prompt token")
    sampled = [x for t in rollout.turns for x in t.sampled_ids]
    learned = [x for x, m in zip(ids, mask, strict=True) if m]
    if learned != sampled:
        raise RolloutError(len(rollout.turns) - 1, len(prompt),
                           f"the loss mask selects {len(learned)} tokens, not the "
                           f"{len(sampled)} sampled ids in order")
    response, rmask = ids[len(prompt):], mask[len(prompt):]
    lp: list[float] | None = None
    if logprobs is not None and len(logprobs) == len(rollout.turns) and all(
            x is not None for x in logprobs):
        flat: list[float] = []
        for t, (turn, x) in enumerate(zip(rollout.turns, logprobs, strict=True)):
            if len(x) != len(turn.sampled_ids):  # type: ignore[arg-type]
                raise RolloutError(t, 0, f"{len(x)} log-probabilities for "  # type: ignore[arg-type]
                                   f"{len(turn.sampled_ids)} sampled ids")
            flat += [float(v) for v in x]  # type: ignore[union-attr]
        it = iter(flat)
        lp = [next(it) if m else 0.0 for m in rmask]
    return prompt, response, rmask, lp


def _tool_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


@register(AGENT_NAME)
class LvtAgentLoop(AgentLoopBase):
    """verl's agent loop on lvt's render and reader (see the module docstring).

    Args:
        tools: verl's tools (``FunctionTool`` or ``BaseTool``), as verl's ``tool_agent`` gets
            them.
        lvt_format: an lvt format or model entry (``lvt formats``); ``None`` detects the entry
            from the tokenizer's chat template (:meth:`lvt.ChatEncoder.from_hf`).
        lvt_options: template options for that entry (``enable_thinking``, ...).
        *args, **kwargs: what verl passes every agent loop (``AgentLoopBase``).
    """

    def __init__(self, *args: Any, tools: ToolListWrap | None = None,
                 lvt_format: str | None = None, lvt_options: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        opts = dict(lvt_options or {})
        self.encoder = (ChatEncoder.from_hf(self.tokenizer, **opts) if lvt_format is None
                        else ChatEncoder.from_tokenizer(self.tokenizer, lvt_format, **opts))
        tool_list = tools.tools if tools else []
        self.tools = {t.name: t for t in tool_list}
        self.tool_schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True)
                             for t in tool_list]
        mt = self.rollout_config.multi_turn
        self.max_turns = int(mt.get("max_assistant_turns") or 8)
        self.response_length = int(self.rollout_config.response_length)

    async def _execute(self, call: ReadCall, tools_kwargs: Mapping[str, Any]) -> str:
        """Run one call read from the sample; what goes wrong becomes the tool's answer (the
        model sampled it, it is not bad input), as verl's ``tool_agent`` does."""
        tool = self.tools.get(call.name)
        if tool is None:
            return f"Unknown function '{call.name}'. Available tools: {sorted(self.tools)}"
        if not call.valid or call.arguments is None:
            return f"Invalid arguments for '{call.name}': {call.raw!r}"
        instance_id = None
        try:
            if isinstance(tool, FunctionTool):
                response, _, _ = normalize_function_tool_return(await tool.call(call.arguments))
            else:
                kw = tools_kwargs.get(call.name, {})
                instance_id, _ = await tool.create(create_kwargs=kw.get("create_kwargs", {}))
                response, _, _ = await tool.execute(instance_id, call.arguments)
        except Exception as e:  # a tool failing is an observation for the model
            logger.warning("tool %r failed: %s", call.name, e)
            return f"Error executing tool '{call.name}': {e}"
        finally:
            if instance_id is not None and not isinstance(tool, FunctionTool):
                await tool.release(instance_id)
        return _tool_text(response.text or "")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """One trajectory: ``kwargs["raw_prompt"]`` (OpenAI messages) through the agent loop on
        verl's server manager, returned as verl's row (see :func:`verl_rows`)."""
        messages = list(kwargs["raw_prompt"])
        tools_kwargs = dict(kwargs.get("tools_kwargs") or {})
        request_id = uuid4().hex  # one id for the whole trajectory: sticky routing, prefix cache
        logprobs: list[list[float] | None] = []
        caller_stops = [int(x) for x in sampling_params.get("stop_token_ids") or []]

        async def generate(prompt_ids: list[int], params: dict[str, Any]) -> list[int]:
            sp = {**sampling_params, **params}
            sp["stop_token_ids"] = sorted(set(caller_stops) | set(params["stop_token_ids"]))
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=prompt_ids, sampling_params=sp)
            logprobs.append(list(out.log_probs) if out.log_probs else None)
            return list(out.token_ids)

        async def execute(call: ReadCall) -> str:
            return await self._execute(call, tools_kwargs)

        rollout = await arun_agent(self.encoder, messages, generate, execute,
                                   tools=self.tool_schemas or None, max_turns=self.max_turns)
        prompt, response, rmask, lp = verl_rows(rollout, logprobs)
        n = self.response_length
        return AgentLoopOutput(
            prompt_ids=prompt, response_ids=response[:n], response_mask=rmask[:n],
            response_logprobs=lp[:n] if lp is not None else None,
            num_turns=len(rollout.conversation.messages), metrics=AgentLoopMetrics(),
            extra_fields={"lvt_stop": rollout.stop, "turn_scores": [], "tool_rewards": []})
