"""TRL's ``GRPOTrainer`` with lvt's token-wise RLVR loss (:func:`lvt_trainer.rlvr_loss`).

::

    from trl import GRPOConfig
    from lvt_trainer import RLVRLossConfig
    from lvt_trainer.integrations.trl import LvtGRPOTrainer

    trainer = LvtGRPOTrainer(model, reward_funcs=reward, args=GRPOConfig(..., beta=0.04),
                             train_dataset=ds, processing_class=tok,
                             lvt_config=RLVRLossConfig(kl_mode="k3"))   # the one-line change
    trainer.train()

Everything but the loss is TRL's: generation, rewards, group advantages, the reference
model, logging. The loss maps TRL's tensors to lvt's:

============================  ==========================================================
TRL (``inputs`` / forward)    :func:`lvt_trainer.rlvr_loss`
============================  ==========================================================
``per_token_logps``           ``logp_new`` (recomputed with gradient, TRL's fused head)
``old_per_token_logps``       ``logp_old`` (``None``: on-policy, ``w = 1``)
``sampling_per_token_logps``  ``logp_behavior`` (vLLM; used when ``tis_cap`` is set)
``ref_per_token_logps``       ``ref_logp`` (``kl_mode`` ``"k1"`` / ``"k2"`` / ``"k3"``)
``advantages``                ``advantages`` (``(B,)``, or ``(B, T)`` from subclasses)
``completion_mask``           ``loss_mask`` (times ``tool_mask`` in tool-calling runs)
entropies                     ``entropy`` (metrics; the loss when ``entropy_coef`` is set)
``args.beta``                 ``beta`` (the gate ``gamma = gate(A)`` scales it per token)
============================  ==========================================================

With ``kl_mode="exact"`` (and ``beta != 0``) the policy and the reference are run on the
completion positions with full logits (divided by the sampling temperature, as TRL's head
does) and the exact per-token ``KL(pi || pi_ref)`` over the vocabulary comes from
:func:`lvt_trainer.token_stats`; this materialises ``(B, T, V)`` logits of both models, the
price of an exact KL. The sampled estimators use TRL's ``ref_per_token_logps``.

Normalisation is lvt's (``RLVRLossConfig.normalization``; TRL's ``loss_type`` is not used)
and counts the whole optimizer step: TRL's ``num_items_in_batch`` (loss tokens of the
generation batch on all processes) and the matching count of non-empty sequences, scaled by
``gradient_accumulation_steps / steps_per_generation``. With TRL's default
``steps_per_generation = gradient_accumulation_steps`` the count is exact, so the summed
micro-batch losses are the step's loss on the concatenated batch (TRL's trainer does not
rescale them, ``loss_is_scaled_for_ga``); otherwise it is the same average TRL's ``dapo``
loss uses. Data-parallel ranks are handled by lvt (``grad_reduction="mean"``, DDP).

TRL options that change its own loss and have no lvt counterpart are refused with a
:class:`~lvt_trainer.errors.TrainerConfigError` (sequence-level importance sampling,
``top_entropy_quantile``, ``off_policy_mask_threshold``, ``delta``, TRL's entropy bonus:
use ``RLVRLossConfig.entropy_coef``; vLLM importance-sampling correction without
``tis_cap``). ``use_bias_correction_kl`` has no effect: lvt's KL term is not importance
weighted. A learnable gate's controller is not stepped by the trainer.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from trl import GRPOTrainer
from trl.trainer.utils import use_adapter

from ..config import RLVRLossConfig
from ..errors import TrainerConfigError
from ..gate import FixedGate, Gate
from ..kl import token_stats
from ..loss import rlvr_loss

__all__ = ["LOGGED_METRICS", "LvtGRPOTrainer"]

#: lvt metric -> name under which :class:`LvtGRPOTrainer` logs it (means of the step).
LOGGED_METRICS: dict[str, str] = {
    "clip_frac": "lvt/clip_frac",
    "clip_frac_neg_adv": "lvt/clip_frac_neg_adv",
    "weight_mean": "lvt/weight_mean",
    "weight_max": "lvt/weight_max",
    "tis_mean": "lvt/tis_mean",
    "ppo_kl": "lvt/ppo_kl",
    "gate_mean": "lvt/gate_mean",
    "kl_mean": "kl",
    "gated_kl_mean": "lvt/gated_kl_mean",
    "entropy_mean": "entropy",
}

_SEQ_COUNT = "lvt_num_sequences"


class LvtGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` whose loss is :func:`lvt_trainer.rlvr_loss` (see the module doc).

    Args:
        *args, **kwargs: as for ``trl.GRPOTrainer``.
        lvt_config: the loss settings (clip mode, proximal cap, TIS cap, ``kl_mode``,
            normalisation, entropy bonus); default :class:`RLVRLossConfig` ``()``.
        gate: maps advantages to the per-token KL weight ``gamma`` (default
            ``sigmoid(1.0 * A)``; ``None``: ``gamma = 1``).

    Raises:
        TrainerConfigError: a TRL option this loss does not implement (module doc).
    """

    def __init__(
        self,
        *args: Any,
        lvt_config: RLVRLossConfig | None = None,
        gate: Gate | None = FixedGate(1.0),  # noqa: B008 - immutable in practice
        **kwargs: Any,
    ) -> None:
        cfg = RLVRLossConfig() if lvt_config is None else lvt_config
        if not isinstance(cfg, RLVRLossConfig):
            raise TrainerConfigError(
                f"lvt_config must be an RLVRLossConfig, got {type(cfg).__name__}"
            )
        self.lvt_config = cfg
        self.lvt_gate = gate
        exact = kwargs.get("processing_class")
        loop = _tool_loop_tokenizer(exact, kwargs.get("tools"))
        if loop is not None:  # TRL would swap its own Jinja template in for a non-prefix one
            kwargs["processing_class"] = loop
        super().__init__(*args, **kwargs)
        self._lvt_loop_tokenizer = loop
        if loop is not None:
            if self.chat_template is not None:
                raise TrainerConfigError(f"TRL found format {loop.lvt_format!r} not prefix "
                                         "preserving; lvt cannot run its tool loop")
            self.processing_class = self._tokenizer = exact  # prompts: the exact format
        self._check_lvt_options()

    def _get_tool_suffix_ids(self, tool_messages: Any) -> Any:
        """The ids TRL appends after a tool-calling turn (the tool results and the next
        generation prompt), taken from the prefix-preserving ``-stable`` render when the exact
        format is not: after a call, both write the same results and prompt."""
        loop = getattr(self, "_lvt_loop_tokenizer", None)
        if loop is None:
            return super()._get_tool_suffix_ids(tool_messages)
        exact = self.processing_class
        self.processing_class = loop
        try:
            return super()._get_tool_suffix_ids(tool_messages)
        finally:
            self.processing_class = exact

    # -- configuration ----------------------------------------------------------------------

    @property
    def lvt_exact_kl(self) -> bool:
        """Whether the loss computes the exact KL from both models' logits."""
        return self.lvt_config.kl_mode == "exact" and self.beta != 0.0

    def _check_lvt_options(self) -> None:
        args = self.args
        refused = []
        if self.importance_sampling_level != "token":
            refused.append(f"importance_sampling_level={self.importance_sampling_level!r} "
                           "(lvt weights tokens)")
        if self.top_entropy_quantile < 1.0:
            refused.append(f"top_entropy_quantile={self.top_entropy_quantile}")
        if self.off_policy_mask_threshold is not None:
            refused.append(f"off_policy_mask_threshold={self.off_policy_mask_threshold}")
        if getattr(args, "delta", None) is not None:
            refused.append(f"delta={args.delta} (use clip_mode='proximal' and proximal_cap)")
        if getattr(self, "_entropy_bonus_enabled", False):
            refused.append("TRL's entropy bonus (entropy_coef / use_adaptive_entropy; use "
                           "RLVRLossConfig.entropy_coef)")
        if self.use_vllm and self.vllm_importance_sampling_correction and (
            self.lvt_config.tis_cap is None
        ):
            refused.append("vllm_importance_sampling_correction without RLVRLossConfig.tis_cap "
                           "(set tis_cap for lvt's truncated IS, or turn TRL's correction off)")
        if self.lvt_exact_kl and self.aux_loss_enabled:
            refused.append("kl_mode='exact' with a MoE router aux loss (use a sampled kl_mode)")
        if refused:
            raise TrainerConfigError(
                "LvtGRPOTrainer cannot honour these GRPOConfig settings: " + "; ".join(refused)
            )

    # -- inputs -----------------------------------------------------------------------------

    def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
        """TRL's batch, plus the global count of sequences with a loss token (seq modes)."""
        out = super()._generate_and_score_completions(inputs)
        mask = _loss_mask(out)
        out[_SEQ_COUNT] = self.accelerator.gather((mask.sum(-1) > 0).sum()).sum()
        return out

    def lvt_step_counts(self, inputs: dict[str, Any]) -> tuple[Tensor, Tensor]:
        """``(tokens, sequences)`` with a loss token in this optimizer step, all ranks.

        Raises:
            TrainerConfigError: the batch lacks the sequence count (it was not built by
                :meth:`_generate_and_score_completions` of this class).
        """
        tokens = torch.as_tensor(inputs["num_items_in_batch"]).to(torch.float64)
        seqs = inputs.get(_SEQ_COUNT)
        if seqs is None:
            raise TrainerConfigError(
                f"the batch has no {_SEQ_COUNT!r}: build it with "
                "LvtGRPOTrainer._generate_and_score_completions (call super() when overriding)"
            )
        seqs = torch.as_tensor(seqs).to(device=tokens.device, dtype=torch.float64)
        if self.model.training:
            scale = self.current_gradient_accumulation_steps / self.args.steps_per_generation
            tokens, seqs = tokens * scale, seqs * scale
        return tokens, seqs

    def lvt_loss_inputs(
        self, model: Any, inputs: dict[str, Any]
    ) -> tuple[dict[str, Any], Tensor | None]:
        """The keyword arguments of :func:`rlvr_loss` for this micro-batch, and TRL's MoE
        router aux loss (``None`` when disabled)."""
        prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]
        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        n_keep = completion_ids.size(1)
        mask = _loss_mask(inputs)
        kl: Tensor | None = None
        ref_logp: Tensor | None = None
        aux: Tensor | None = None
        if self.lvt_exact_kl:
            if inputs.get("pixel_values") is not None:
                raise TrainerConfigError("kl_mode='exact' supports text-only models in TRL")
            logits = self._lvt_logits(model, input_ids, attention_mask, n_keep)
            with torch.no_grad():
                ref_logits = self._lvt_ref_logits(input_ids, attention_mask, n_keep)
            logp, entropy, kl = token_stats(
                logits, completion_ids, ref_logits, chunk_size=self.lvt_config.kl_chunk_size
            )
        else:
            logp, entropy, aux = self._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                n_keep,
                compute_entropy=True,
                compute_aux_loss=self.aux_loss_enabled,
                **{k: inputs.get(k) for k in _FORWARD_KEYS},
            )
            if self.beta != 0.0 and self.lvt_config.kl_mode != "none":
                ref_logp = inputs["ref_per_token_logps"]
        logp_old = inputs.get("old_per_token_logps")
        behavior = inputs.get("sampling_per_token_logps")
        if behavior is not None:
            # tokens the engine could not score carry NaN: no correction there (rho = 1)
            base = logp.detach() if logp_old is None else logp_old
            behavior = torch.where(torch.isnan(behavior), base, behavior)
        tokens, seqs = self.lvt_step_counts(inputs)
        kwargs = {
            "logp_new": logp,
            "advantages": inputs["advantages"],
            "loss_mask": mask,
            "logp_old": logp_old,
            "logp_behavior": behavior,
            "kl": kl,
            "ref_logp": ref_logp,
            "entropy": entropy,
            "beta": float(self.beta),
            "gate": self.lvt_gate,
            "config": self.lvt_config,
            "global_token_count": tokens,
            "global_seq_count": seqs,
        }
        return kwargs, aux

    def _lvt_logits(self, model: Any, input_ids: Tensor, attention_mask: Tensor, n: int) -> Tensor:
        """Temperature-scaled logits that score the last ``n`` tokens, ``(B, n, V)``."""
        with self.accelerator.autocast():
            out = model(input_ids=input_ids, attention_mask=attention_mask,
                        logits_to_keep=n + 1, use_cache=False)
        return out.logits[:, :-1, :] / self.temperature

    def _lvt_ref_logits(self, input_ids: Tensor, attention_mask: Tensor, n: int) -> Tensor:
        if self.ref_model is not None:
            return self._lvt_logits(self.ref_model, input_ids, attention_mask, n).detach()
        base = self.accelerator.unwrap_model(self.model)  # PEFT: the adapter-free model
        with use_adapter(base, adapter_name="ref" if "ref" in base.peft_config else None):
            return self._lvt_logits(self.model, input_ids, attention_mask, n).detach()

    # -- loss -------------------------------------------------------------------------------

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Tensor:
        kwargs, aux = self.lvt_loss_inputs(model, inputs)
        loss, metrics = rlvr_loss(**kwargs)
        mode = "train" if self.model.training else "eval"
        if aux is not None:
            norm = self.current_gradient_accumulation_steps if mode == "train" else 1.0
            loss = loss + self.router_aux_loss_coef * aux / norm
            self._metrics[mode]["aux_loss"].append(
                self.accelerator.gather_for_metrics(aux.detach()).mean().item()
            )
        for key, name in LOGGED_METRICS.items():
            if key in metrics and (key not in ("kl_mean", "gated_kl_mean") or kwargs["beta"]):
                self._metrics[mode][name].append(float(metrics[key]))
        return loss


#: optional model inputs TRL's log-prob pass takes from the batch (multimodal models).
_FORWARD_KEYS = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def _tool_loop_tokenizer(tok: Any, tools: Any) -> Any | None:
    """For a tool-calling run on an lvt tokenizer whose format TRL's dummy check finds not
    prefix preserving (Qwen3 gives the last assistant turn an empty think block), the same
    tokenizer with the format's ``-stable`` variant, which TRL uses for the tool suffix only;
    ``None`` when none is needed.

    Raises:
        TrainerConfigError: the format is not prefix preserving and has no ``-stable`` variant.
    """
    from trl.chat_template_utils import is_chat_template_prefix_preserving

    from lvt import formats
    from lvt.hf import LvtTokenizerMixin, wrap

    if not tools or not isinstance(tok, LvtTokenizerMixin):
        return None
    if is_chat_template_prefix_preserving(tok):
        return None
    stable = formats.FORMATS.get(tok.lvt_format + "-stable")
    if stable is None:
        raise TrainerConfigError(
            f"format {tok.lvt_format!r} renders a tool-calling turn differently once a tool "
            "result follows, and has no -stable variant for TRL's tool loop")
    opts = {k: v for k, v in tok.lvt_options.items() if k in stable.options}
    return wrap(tok.lvt_wrapped, stable.name, **opts)


def _loss_mask(inputs: dict[str, Any]) -> Tensor:
    mask = inputs["completion_mask"]
    tool = inputs.get("tool_mask")
    return mask if tool is None else mask * tool
