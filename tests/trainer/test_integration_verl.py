"""lvt's policy loss looked up through verl's registry, against ``rlvr_loss`` and verl's own
PPO loss on random tensors in verl's layout (``(B, T)`` response tensors, bool mask)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config import ActorConfig

import lvt_trainer.integrations.verl as lvt_verl
from lvt_trainer import RLVRLossConfig, TrainerConfigError, rlvr_loss

B, T = 6, 9
MODES = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
#: verl loss_agg_mode -> lvt normalisation (what rlvr_loss is called with)
LVT_NORM = {
    "token-mean": "token_mean",
    "seq-mean-token-mean": "seq_mean_token_mean",
    "seq-mean-token-sum": "seq_mean_token_sum",
    "seq-mean-token-sum-norm": "seq_mean_token_sum",
}


def batch(seed: int, spread: float = 2.5) -> dict[str, torch.Tensor]:
    """Random verl tensors: ragged right-padded mask with one empty row, per-token advantages
    of both signs, log ratios up to ``spread`` (proximal cap 5 is exceeded at 2.5)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([9, 7, 1, 0, 5, 8])
    mask = torch.arange(T)[None, :] < lengths[:, None]
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 4
    ratio = (torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 1) * spread
    logp = (old + ratio).clamp(max=0.0)
    adv = torch.randn(B, generator=g, dtype=torch.float64)[:, None].expand(B, T).clone()
    adv = torch.where(mask, adv, torch.zeros(()))
    old = torch.where(mask, old, torch.full((), float("nan")))  # padding is never read
    return {"old": old, "logp": logp, "adv": adv, "mask": mask}


def actor_config(mode: str, **info: float | int | None) -> ActorConfig:
    cfg = ActorConfig(
        strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=2,
        clip_ratio_low=0.2, clip_ratio_high=0.28, loss_agg_mode=mode,
    )
    cfg.global_batch_info.update(info)
    return cfg


def run_verl(name: str, b: dict[str, torch.Tensor], mode: str, cfg: ActorConfig,
             weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, dict]:
    lp = b["logp"].clone().requires_grad_(True)
    loss, metrics = get_policy_loss_fn(name)(
        old_log_prob=b["old"], log_prob=lp, advantages=b["adv"], response_mask=b["mask"],
        loss_agg_mode=mode, config=cfg, rollout_is_weights=weights,
    )
    loss.backward()
    return loss.detach(), lp.grad, metrics


def run_lvt(
    b: dict[str, torch.Tensor], config: RLVRLossConfig, **kw: torch.Tensor | float
) -> tuple[torch.Tensor, torch.Tensor]:
    lp = b["logp"].clone().requires_grad_(True)
    loss, _ = rlvr_loss(lp, b["adv"], b["mask"], logp_old=b["old"], config=config, **kw)
    loss.backward()
    return loss.detach(), lp.grad


def test_registered_by_import_verl_alone():
    """The ``verl.plugins`` entry point: a process that only imports verl has the names."""
    code = (
        "import verl\n"
        "from verl.trainer.ppo.core_algos import get_policy_loss_fn\n"
        "print(get_policy_loss_fn('lvt_token_rlvr').__module__, "
        "get_policy_loss_fn('lvt_token_rlvr_ppo').__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["lvt_trainer.integrations.verl"] * 2


def test_a_plugin_that_fails_to_load_says_why():
    """When the integration cannot be imported, ``import verl`` warns with the cause and the
    lvt loss modes raise it when chosen (verl alone logs it at debug level and later says
    'Unsupported loss mode')."""
    from lvt_trainer.integrations import verl_plugin

    assert verl_plugin.LOAD_ERROR is None
    assert verl_plugin.LOSS_NAMES == (lvt_verl.DEFAULT_NAME, lvt_verl.PPO_NAME)
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('always')\n"
        "sys.modules['lvt_trainer.integrations.verl'] = None  # the integration breaks\n"
        "import verl\n"
        "from verl.trainer.ppo.core_algos import get_policy_loss_fn\n"
        "try:\n"
        "    get_policy_loss_fn('lvt_token_rlvr_ppo')()\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RuntimeWarning: lvt's verl plugin failed to load (ModuleNotFoundError" in out.stderr
    assert out.stdout.startswith("LvtPluginError lvt's verl plugin failed to load (ModuleNotFound")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("distributed", [False, True])
def test_proximal_equals_rlvr_loss(mode: str, distributed: bool):
    b = batch(1)
    lvt_cfg = RLVRLossConfig(normalization=LVT_NORM[mode])
    w = torch.exp(b["logp"] - b["old"].nan_to_num())
    assert bool(((w > 5.0) & (b["adv"] < 0) & b["mask"]).any())  # the cap is exercised
    if distributed:  # this rank's micro-batch of a 2-rank mini-batch: verl's global counts
        info = {"dp_size": 2, "batch_num_tokens": 71, "global_batch_size": 13,
                "loss_scale_factor": 4}
        counts = {"global_token_count": 71.0, "global_seq_count": 13.0}
        scale = 2.0 / (4.0 if mode == "seq-mean-token-sum-norm" else 1.0)
    else:
        info, counts = {}, {}
        scale = 1.0 / (T if mode == "seq-mean-token-sum-norm" else 1.0)
    got, g_got, metrics = run_verl("lvt_token_rlvr", b, mode, actor_config(mode, **info))
    want, g_want = run_lvt(b, lvt_cfg, **counts)
    torch.testing.assert_close(got, want * scale, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_got, g_want * scale, rtol=1e-12, atol=1e-12)
    assert got.abs() > 0
    _, m = rlvr_loss(b["logp"], b["adv"], b["mask"], logp_old=b["old"], config=lvt_cfg)
    assert metrics["actor/pg_clipfrac"] == pytest.approx(m["clip_frac"])
    assert metrics["actor/ppo_kl"] == pytest.approx(m["ppo_kl"])
    assert metrics["actor/lvt_weight_max"] == pytest.approx(m["weight_max"])


@pytest.mark.parametrize("mode", MODES)
def test_ppo_variant_equals_verl_vanilla(mode: str):
    """With ratios below verl's dual-clip bound (3), lvt's PPO clipping with verl's clip range
    is verl's own ``vanilla`` loss, rollout importance weights (some 0) included."""
    b = batch(2, spread=1.0)
    g = torch.Generator().manual_seed(3)
    weights = torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    weights[0, :3] = 0.0
    weights = torch.where(b["mask"], weights, torch.zeros(()))
    b_verl = dict(b, old=b["old"].nan_to_num())  # verl's loss reads padding (times 0)
    info = {"dp_size": 2, "batch_num_tokens": 60, "global_batch_size": 11, "loss_scale_factor": 7}
    for w in (None, weights):
        cfg = actor_config(mode, **info)
        got, g_got, _ = run_verl("lvt_token_rlvr_ppo", b_verl, mode, cfg, w)
        want, g_want, _ = run_verl("vanilla", b_verl, mode, actor_config(mode, **info), w)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-12)
        torch.testing.assert_close(g_got, g_want, rtol=1e-6, atol=1e-12)


def test_rollout_weights_are_lvt_tis():
    """Positive rollout weights on the proximal loss equal lvt's own truncated IS with
    behaviour log-probs ``old - log(w)`` and a cap above every weight."""
    b = batch(4)
    g = torch.Generator().manual_seed(5)
    weights = 0.25 + torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    got, g_got, _ = run_verl("lvt_token_rlvr", b, "token-mean", actor_config("token-mean"), weights)
    behavior = b["old"] - torch.log(weights)
    want, g_want = run_lvt(b, RLVRLossConfig(tis_cap=1e6), logp_behavior=behavior)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-10, atol=1e-12)
    plain, _, _ = run_verl("lvt_token_rlvr", b, "token-mean", actor_config("token-mean"))
    assert not math.isclose(float(got), float(plain))


def test_unsupported_settings_are_refused():
    b = batch(6)
    with pytest.raises(TrainerConfigError, match="token-sum"):
        run_verl("lvt_token_rlvr", b, "token-sum", actor_config("token-sum"))
    with pytest.raises(TrainerConfigError, match="dp_size=2"):
        run_verl("lvt_token_rlvr", b, "token-mean", actor_config("token-mean", dp_size=2))
    with pytest.raises(TrainerConfigError, match="entropy"):
        lvt_verl.make_policy_loss(RLVRLossConfig(entropy_coef=0.01))
    with pytest.raises(TrainerConfigError, match="rollout"):
        lvt_verl.make_policy_loss(RLVRLossConfig(tis_cap=2.0))


def test_register_custom_config():
    b = batch(7)
    fn = lvt_verl.register("lvt_test_cap2", RLVRLossConfig(proximal_cap=2.0))
    assert get_policy_loss_fn("lvt_test_cap2") is fn
    got, _, _ = run_verl("lvt_test_cap2", b, "token-mean", actor_config("token-mean"))
    want, _ = run_lvt(b, RLVRLossConfig(proximal_cap=2.0))
    default, _, _ = run_verl("lvt_token_rlvr", b, "token-mean", actor_config("token-mean"))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert not math.isclose(float(got), float(default))


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_through_verl_actor_loss(mode: str):
    """verl's own actor loss (``workers.utils.losses.ppo_loss``) with
    ``policy_loss.loss_mode="lvt_token_rlvr"``: unpadded log-probs in, verl's call site and
    global batch info, value and gradient equal rlvr_loss on the padded tensors."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.config.actor import PolicyLossConfig
    from verl.workers.utils.losses import ppo_loss

    b = batch(8)
    prompt = 3
    lengths = b["mask"].sum(-1)
    lp = b["logp"].clone().requires_grad_(True)
    # verl's no-padding layout: sequences back to back, the log-prob of response token j of
    # row r at offset_r + prompt - 1 + j (left-shifted by one)
    seq = prompt + lengths
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), seq.cumsum(0)[:-1]])
    rows, cols = b["mask"].nonzero(as_tuple=True)
    flat = torch.zeros(int(seq.sum()), dtype=lp.dtype).index_put(
        (offsets[rows] + prompt - 1 + cols,), lp[rows, cols]
    )
    data = TensorDict({
        "prompts": torch.ones(B, prompt, dtype=torch.long),
        "responses": torch.ones(B, T, dtype=torch.long),
        "attention_mask": torch.cat([torch.ones(B, prompt, dtype=torch.long),
                                     b["mask"].long()], 1),
        "response_mask": b["mask"].long(),
        "old_log_probs": b["old"].nan_to_num(),
        "advantages": b["adv"],
    }, batch_size=[B])
    tu.assign_non_tensor(data, dp_size=2, batch_num_tokens=71, global_batch_size=13)
    cfg = ActorConfig(
        strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=2, loss_agg_mode=mode,
        policy_loss=PolicyLossConfig(loss_mode="lvt_token_rlvr"),
    )
    got, metrics = ppo_loss(cfg, {"log_probs": flat}, data)
    got.backward()
    want, g_want = run_lvt(b, RLVRLossConfig(normalization=LVT_NORM[mode]),
                           global_token_count=71.0, global_seq_count=13.0)
    torch.testing.assert_close(got.detach(), 2 * want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(lp.grad, 2 * g_want, rtol=1e-12, atol=1e-12)
    assert "actor/lvt_weight_mean" in metrics
