"""verl's entry point for lvt (``[project.entry-points."verl.plugins"]``).

``import verl`` loads every ``verl.plugins`` entry point and logs a failure at *debug* level
only, so a broken plugin used to surface much later as verl's "Unsupported loss mode:
lvt_token_rlvr". This module imports :mod:`lvt_trainer.integrations.verl` (which registers the
losses) and, when that fails, says so at once (a :class:`RuntimeWarning` and an error log
naming the cause) and registers each lvt loss name as a function that raises
:class:`LvtPluginError` with that cause, so the run stops where the loss is chosen with the
reason instead of an unknown-mode message.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

__all__ = ["LOAD_ERROR", "LOSS_NAMES", "LvtPluginError"]

#: The loss modes :mod:`lvt_trainer.integrations.verl` registers (``DEFAULT_NAME``,
#: ``PPO_NAME``; a test keeps them equal).
LOSS_NAMES = ("lvt_token_rlvr", "lvt_token_rlvr_ppo")


class LvtPluginError(RuntimeError):
    """lvt's verl integration could not be loaded (the message names the cause)."""


def _load() -> str | None:
    try:
        from lvt_trainer.integrations import verl  # noqa: F401  (registers the losses)
    except Exception as e:  # any failure of the integration is reported, never swallowed
        return f"{type(e).__name__}: {e}"
    return None


#: ``None`` when the losses are registered, else why they could not be.
LOAD_ERROR = _load()

if LOAD_ERROR is not None:
    _msg = (f"lvt's verl plugin failed to load ({LOAD_ERROR}); the loss modes "
            f"{', '.join(LOSS_NAMES)} raise this error when used")
    warnings.warn(_msg, RuntimeWarning, stacklevel=2)
    logging.getLogger("lvt_trainer").error(_msg)
    try:
        from verl.trainer.ppo.core_algos import register_policy_loss
    except Exception:  # verl itself is broken: the warning above is all that can be done
        pass
    else:
        def _failed(*args: Any, **kwargs: Any) -> Any:
            raise LvtPluginError(_msg)

        for _name in LOSS_NAMES:
            register_policy_loss(_name)(_failed)
