"""The torch-free table of what each mixer reads is the mixers' own (the classes take it from there)."""

from expressivity.mixer_switches import MIXER_SWITCHES, unread_settings, unread_variation
from expressivity.nn.mixers import MIXERS
from expressivity.training import RunConfig


def test_the_table_is_what_every_mixer_class_reads():
    assert set(MIXER_SWITCHES) == set(MIXERS)
    for name, cls in MIXERS.items():
        assert MIXER_SWITCHES[name] == (frozenset() if cls is None else cls.switches), name


def test_unread_settings_by_stack():
    assert unread_settings(("attention",)) == ("conv_kernel",)
    assert unread_settings(("sepconv", "dpfree")) == ()
    assert unread_settings(("none", "none")) == ("heads", "d_head", "conv_kernel", "causal")


def test_two_runs_of_one_model_are_found_and_different_models_are_not():
    base = RunConfig.for_task("reverse", {"length": 4}, {"mixer": "sepconv", "d_model": 8})
    same = [base.with_changes(model={"heads": h}).to_dict() for h in (1, 2)]
    assert unread_variation(same).startswith("differ only in model.heads, which no layer of mixer sepconv reads")
    attention = RunConfig.for_task("reverse", {"length": 4}, {"mixer": "attention", "d_model": 8})
    assert unread_variation([attention.with_changes(model={"heads": h}).to_dict() for h in (1, 2)]) is None
