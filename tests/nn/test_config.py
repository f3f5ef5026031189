"""ModelConfig: validation names the options that do not apply; JSON round trip; unknown keys refused."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.network import PiecewiseLinear
from expressivity.nn import ModelConfig

PL = PiecewiseLinear((0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)).to_dict()


@pytest.mark.parametrize("bad, match", [
    (dict(mixer="conv"), "unknown mixer 'conv'"),
    (dict(rpe="alibi"), "unknown rpe 'alibi'"),
    (dict(ape="rope"), "unknown ape 'rope'"),
    (dict(norm="post"), "unknown norm 'post'"),
    (dict(normalization="sparsemax"), "unknown normalization"),
    (dict(dpfree_normaliser="window"), "unknown dpfree-normaliser"),
    (dict(activation="tanh"), "unknown activation 'tanh'"),
    (dict(activation={"kind": "piecewise", "breakpoints": [0], "slopes": [1, 1], "intercepts": [0, 0]}), "constant piece"),
    (dict(mixer=("attention",), layers=2), "1 mixers given for 2 layers"),
    (dict(activation=("relu", "gelu", "relu")), "3 activations given for 1 layers"),
    (dict(d_model=10, heads=4), "not divisible by heads"),
    (dict(ffn_width=-1), "ffn-width"),
    (dict(layers=0), "layers must be >= 1"),
    (dict(mixer="sepconv", rpe="lin"), "rpe 'lin' applies only to attention and dpfree layers, but the mixers are sepconv"),
    (dict(mixer="bilinear", rotary=True), "rotary applies only to attention layers"),
    (dict(mixer="dpfree", rotary=True), "rotary applies only to attention layers"),
    (dict(mixer="dpfree", normalization="hardmax"), "normalization 'hardmax' applies only to attention layers"),
    (dict(mixer="dpfree", q_bias=True), "q-bias applies only to attention layers"),
    (dict(mixer=("sepconv", "dpfree"), layers=2, qk_scale=0.5), "qk-scale 0.5 applies only to attention layers"),
    (dict(rpe="free", learnable_slopes=True), "learnable slopes \(--learn-slopes\) apply only to rpe lin or log, not 'free'"),
    (dict(mixer="none", ffn_width=0), "does nothing"),
    (dict(mixer="attention", rpe="lin", dpfree_normaliser="infinite"), "dpfree-normaliser 'infinite' applies only to dpfree"),
    (dict(mixer="dpfree", rpe="lin", dpfree_normaliser="infinite", causal=False), "needs a causal model"),
    (dict(mixer="dpfree", rpe="free", dpfree_normaliser="infinite"), "needs rpe lin or log"),
    (dict(mixer="dpfree", dpfree_normaliser="infinite"), "needs rpe lin or log"),
])
def test_invalid_and_inapplicable_options_are_refused_by_name(bad, match):
    with pytest.raises(ExpressivityError, match=match) as info:
        ModelConfig(**bad)
    assert "\n" not in str(info.value)


def test_sepconv_stacks_need_no_head_divisibility():
    assert ModelConfig(mixer="sepconv", d_model=10, heads=4).d_model == 10


def test_config_round_trips_through_json_with_per_layer_activations():
    cfg = ModelConfig(mixer=("attention", "none", "dpfree"), layers=3, activation=("gelu", PL, "relu"), rpe="log",
                      learnable_slopes=True, dpfree_normaliser="infinite", normalization="hardmax", d_model=8, heads=2)
    back = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    kinds = [a.kind for a in back.layer_activations()]
    assert kinds == ["gelu", "piecewise", "relu"] and back.layer_activations()[1] == PiecewiseLinear.from_dict(PL)


def test_from_dict_refuses_unknown_keys_naming_them():
    with pytest.raises(ExpressivityError, match="unknown model config keys 'dropout', 'width'"):
        ModelConfig.from_dict({"width": 3, "dropout": 0.1, "layers": 1})


def test_a_mixer_declares_the_switches_it_reads(monkeypatch):
    """Whether a switch applies is read from the mixers' own declarations: a new mixer that reads
    rotary makes rotary valid on its own and joins the refusal's list of readers."""
    from expressivity.nn.mixers import MIXERS, Mixer, readers, switches_read

    class Rotating(Mixer):
        switches = frozenset({"rotary"})

    monkeypatch.setitem(MIXERS, "rotating", Rotating)
    assert switches_read(("rotating", "sepconv")) == {"rotary", "conv_kernel"}
    assert readers("rotary") == "attention and rotating"
    assert ModelConfig(mixer="rotating", rotary=True).rotary
    with pytest.raises(ExpressivityError, match="rotary applies only to attention and rotating layers"):
        ModelConfig(mixer="dpfree", rotary=True)
    with pytest.raises(ExpressivityError, match="rpe 'lin' applies only to attention and dpfree layers"):
        ModelConfig(mixer="rotating", rpe="lin")
