"""lvt's token-wise RLVR loss inside third-party RL trainers.

Each submodule imports its trainer on import, so ``import lvt_trainer`` never needs them:

* :mod:`lvt_trainer.integrations.trl`: :class:`~lvt_trainer.integrations.trl.LvtGRPOTrainer`,
  TRL's ``GRPOTrainer`` with :func:`lvt_trainer.rlvr_loss` as its loss (extra ``lvt[trl]``).
* :mod:`lvt_trainer.integrations.verl`: the loss registered in verl's policy-loss registry
  as ``"lvt_token_rlvr"`` (and ``"lvt_token_rlvr_ppo"``); loaded by ``import verl`` itself
  through the ``verl.plugins`` entry point (verl is installed by ``scripts/bootstrap``).
* :mod:`lvt_trainer.integrations.verl_agent`: :class:`~lvt_trainer.integrations.verl_agent.
  LvtAgentLoop`, verl's agent loop ``"lvt_agent"`` on lvt's render and reader, sampled ids kept.
"""

from __future__ import annotations

__all__: list[str] = []
