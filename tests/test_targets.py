import sys
import types

import numpy as np
import pytest

from expressivity.errors import ExpressivityError
from expressivity.targets import check_equivariance, get_target, list_targets, require_equivariant


@pytest.mark.parametrize("target", list_targets(), ids=lambda t: t.name)
def test_shapes_and_equivariance_flag(target):
    X = np.random.default_rng(0).random((5, 3, 2))
    Y = target.fn(X)
    assert Y.shape == X.shape and np.all(np.isfinite(Y))
    assert check_equivariance(target, 3, 2, samples=32, seed=1).passed == target.equivariant


def test_reverse_values():
    X = np.arange(6, dtype=float).reshape(1, 3, 2)
    assert np.array_equal(get_target("reverse").fn(X)[0], X[0, ::-1])


def test_non_equivariant_refused_with_hint():
    with pytest.raises(ExpressivityError, match="--positional"):
        require_equivariant(get_target("prefix-mean"), 3, 1)


def _install(name, fn):
    mod = types.ModuleType(name)
    mod.f = fn
    sys.modules[name] = mod


@pytest.mark.parametrize("fn,msg", [
    (lambda X: X * np.nan, "NaN"),
    (lambda X: np.full_like(X, np.inf), "inf"),
    (lambda X: X[:, :1], "shape"),
    (lambda X: 1 / 0, "ZeroDivisionError"),
])
def test_user_target_errors(fn, msg):
    _install("_user_bad_target", fn)
    t = get_target("_user_bad_target:f")
    with pytest.raises(ExpressivityError, match=msg):
        t.fn(np.full((2, 3, 1), 0.5))


def test_user_target_ok_and_unknown():
    _install("_user_ok_target", lambda X: 2 * X)
    t = get_target("_user_ok_target:f")
    assert np.allclose(t.fn(np.ones((1, 2, 1))), 2)
    with pytest.raises(ExpressivityError, match="unknown target"):
        get_target("nope")
    with pytest.raises(ExpressivityError, match="cannot import"):
        get_target("no_such_module_xyz:f")


@pytest.mark.parametrize("fn,msg", [
    (lambda X: X + 1j, "complex values"),
    (lambda X: sys.exit(3), "SystemExit"),
    (lambda X: "text", "not a numeric array"),
])
def test_user_target_misbehaviour_is_one_line(fn, msg):
    _install("_user_odd_target", fn)
    with pytest.raises(ExpressivityError, match=msg) as err:
        get_target("_user_odd_target:f").fn(np.full((2, 3, 1), 0.5))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("source, spec, msg", [
    ("def f(X:\n    return X\n", "_syntax_error_target:f", "syntax error \\(line 1"),
    ("import sys\nsys.exit(2)\n", "_exit_on_import_target:f", "SystemExit"),
    ("raise RuntimeError('boom')\n", "_raise_on_import_target:f", "RuntimeError: boom"),
])
def test_broken_user_modules_are_one_line_errors(tmp_path, monkeypatch, source, spec, msg):
    (tmp_path / (spec.split(":")[0] + ".py")).write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ExpressivityError, match=msg) as err:
        get_target(spec)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("spec", ["", ":", "module:", ":f", "  :f"])
def test_empty_names_are_refused(spec):
    with pytest.raises(ExpressivityError, match="unknown target|module:function"):
        get_target(spec)


def test_a_user_target_s_hash_is_of_the_code_that_runs(tmp_path, monkeypatch):
    """A review (2026-11-28): the file was hashed at every get_target, while Python kept the module first imported:
    after the file was rewritten the record named the new code and the function ran the old."""
    import hashlib
    import sys

    from expressivity.targets import get_target

    monkeypatch.setattr("sys.path", [str(tmp_path), *sys.path])
    (tmp_path / "tgt_stale_b.py").write_text("def f(X):\n    return X * 0.25\n")
    first = get_target("tgt_stale_b:f")
    old = hashlib.sha256((tmp_path / "tgt_stale_b.py").read_bytes()).hexdigest()
    (tmp_path / "tgt_stale_b.py").write_text("def f(X):\n    return X * 3.0\n")
    again = get_target("tgt_stale_b:f")   # the module Python holds: the old code
    assert first.source_sha256 == again.source_sha256 == old
    assert float(again(np.full((1, 2, 1), 1.0))[0, 0, 0]) == 0.25
    sys.modules.pop("tgt_stale_b", None)
