"""A RASP program of your own, compiled by path:

    expressivity rasp compile experiments/rasp_frac_a.py:make_program --vocab a,b,c --max-len 8
"""

from expressivity import rasp


def make_program():
    """The fraction of the tokens so far that are "a" (tracr's frac_prevs)."""
    is_a = rasp.numerical(rasp.Map(lambda t: 1 if t == "a" else 0, rasp.tokens)).named("is_a")
    so_far = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ).named("so_far")
    return rasp.numerical(rasp.Aggregate(so_far, is_a, default=0)).named("frac_a")
