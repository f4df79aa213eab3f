"""The probe: what runs next to a student's code. Its JSON codec must round-trip every answer
type exactly and refuse anything malformed; its calls must survive whatever the answer does; and
it holds nothing an answer could use instead of doing the work. (The implementations handed to a
student's test are checked here too: they live in the checker's process.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from attention_lab.exercises.implementations import Readout, make_impl, make_readout
from attention_lab.exercises import probe


def roundtrip(obj):
    return probe.decode(json.loads(json.dumps(probe.encode(obj), allow_nan=False)))


@pytest.mark.parametrize("dtype", probe.DTYPES)
def test_arrays_round_trip_exactly_in_every_dtype(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        a = rng.random((2, 3)) < 0.5
    elif dtype.startswith("float"):
        a = (rng.normal(size=(2, 3)) * 1e3).astype(dtype)
        a.flat[0], a.flat[1], a.flat[2] = np.nan, np.inf, -np.inf
    else:
        info = np.iinfo(dtype)
        a = np.array([[info.min, 0, info.max]], dtype=dtype)
    b = roundtrip(a)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def test_containers_scalars_and_markers_round_trip():
    obj = {"t": (1, 2.5, "x"), "l": [np.float16(0.1), np.int64(3), None, True], "e": ...,
           "empty": np.zeros((0, 3)), "zero_d": np.array(2.0), "big": 2 ** 80, "nan": float("nan")}
    back = roundtrip(obj)
    assert back["t"] == (1, 2.5, "x") and isinstance(back["t"], tuple)
    assert back["l"][0] == np.float16(0.1) and back["l"][0].dtype == np.float16
    assert back["e"] is Ellipsis and back["big"] == 2 ** 80 and np.isnan(back["nan"])
    assert back["empty"].shape == (0, 3) and back["zero_d"].shape == ()


class Hostile:
    def __repr__(self):
        raise RuntimeError("no")


def test_unsupported_and_oversized_outputs_are_described_not_stored():
    assert isinstance(roundtrip(lambda x: x), probe.Unsupported)
    g = roundtrip(x for x in range(3))
    assert isinstance(g, probe.Unsupported) and g.what == "generator"
    h = roundtrip(Hostile())
    assert isinstance(h, probe.Unsupported) and "repr raised" in h.text
    big = roundtrip(np.zeros(probe.MAX_ELEMENTS + 1))
    assert isinstance(big, probe.TooLarge) and big.shape == (probe.MAX_ELEMENTS + 1,)
    assert isinstance(roundtrip(np.array([1 + 2j])), probe.Unsupported)
    assert isinstance(roundtrip({1: 2}), probe.Unsupported)
    long = roundtrip("x" * (probe.MAX_STRING + 5))
    assert len(long) == probe.MAX_STRING


@pytest.mark.parametrize("data", [
    [1, 2], {}, {"__pickle__": "x"}, {"__ndarray__": {"dtype": "object", "shape": [1], "data": [1]}},
    {"__ndarray__": {"dtype": "float64", "shape": [2], "data": [1.0]}},
    {"__ndarray__": {"dtype": "float64", "shape": [-1], "data": []}},
    {"__ndarray__": {"dtype": "float64", "shape": [1], "data": ["1e400"]}},
    {"__ndarray__": {"dtype": "float64", "shape": [1], "data": [True]}},
    {"__ndarray__": {"dtype": "float32", "shape": [1], "data": [[1.0]]}},
    {"__ndarray__": {"dtype": "bool", "shape": [1], "data": [1]}},
    {"__ndarray__": {"dtype": "int64", "shape": [1], "data": [1.5]}},
    {"__seq__": "set", "items": []}, {"__bigint__": "12a"}, {"__impl__": "A"},
    {"__callable__": {"key": "k", "name": "attend"}},
])
def test_decode_refuses_malformed_data(data):
    with pytest.raises(ValueError):
        probe.decode(data)


def test_decode_depth_limit():
    data = 1
    for _ in range(probe.MAX_DEPTH + 5):
        data = {"__seq__": "list", "items": [data]}
    with pytest.raises(ValueError):
        probe.decode(data)


def test_call_records_everything_and_never_raises():
    assert probe.call(lambda: np.ones(2), (), 1)["out"]["__ndarray__"]["data"] == [1.0, 1.0]
    r = probe.call(lambda: 1 / 0, (), 1)
    assert r["raised"]["type"] == "ZeroDivisionError" and "lambda" in r["raised"]["where"]

    def leave():
        raise SystemExit(2)

    assert probe.call(leave, (), 1)["raised"]["type"] == "SystemExit"

    def stubborn():
        while True:
            try:
                time.sleep(0.01)
            except BaseException:
                pass

    answer = probe.call(stubborn, (), 0.2)  # returns although the call swallows the interrupts
    assert set(answer) == {"timeout", "seconds"} and answer["timeout"] == 0.2
    assert answer["seconds"] >= 0.2  # it ran until its limit

    def talk():
        print("hello" * 1000)
        return 1

    r = probe.call(talk, (), 1)
    assert r["printed"] == 5001 and r["out"] == 1

    a = np.zeros(3)

    def mutate(x):
        x[0] = 1

    assert probe.call(mutate, (a,), 1)["mutated"] == [0]


def test_probe_stops_after_stub_and_timeouts():
    inputs = [{"args": [probe.encode(np.ones(2))], "fn": 0}] * 3

    def stub(x):
        raise NotImplementedError

    rec = probe.probe("function", stub, inputs)
    assert [list(c)[0] for c in rec["calls"]] == ["raised", "skipped", "skipped"]
    assert probe.probe("function", probe.MISSING, inputs) == {"kind": "missing"}
    assert probe.probe("function", 3, inputs)["kind"] == "notcallable"
    assert probe.probe("function", (stub,), inputs, n_functions=2)["kind"] == "shape"


def test_attention_implementations_for_the_query_test():
    K = np.array([[1.0, 0.0], [0.0, 1.0]])
    V = np.array([[1.0, 0.0], [0.0, 1.0]])
    q1, q2 = np.array([2.0, 0.0]), np.array([0.0, 2.0])
    differs = {c: not np.allclose(make_impl(c)(q1, K, V), make_impl(c)(q2, K, V))
               for c in "ABCDEF"}
    assert differs == {"A": True, "B": False, "C": False, "D": True, "E": True, "F": False}
    with pytest.raises(ValueError, match="takes query"):
        make_impl("A")(np.ones(3), K, V)


def test_masked_softmax_implementations_for_the_masking_tests():
    """G-O: what each does with an ordinary row (masked key 3) and with an all-masked row."""
    scores = np.array([[-1.0, 2.0, 0.5, 3.0], [0.2, 0.1, 0.0, -0.3]])
    mask = np.array([[True, True, True, False], [False, False, False, False]])
    exact = np.exp(scores[0, :3] - 2.0) / np.exp(scores[0, :3] - 2.0).sum()
    rows = {}
    for c in "GHIJKLMNO":
        fn = make_impl(c)
        assert fn.__name__ == "masked_softmax"
        try:
            rows[c] = fn(scores, mask)
        except ValueError:
            rows[c] = "raise"
    assert rows["I"] == "raise" and np.allclose(make_impl("I")(scores[:1], mask[:1])[0, :3],
                                                exact)
    for c in "GHN":  # correct on the ordinary row, exact zeros at the masked key
        assert np.allclose(rows[c][0, :3], exact) and rows[c][0, 3] == 0
    assert (rows["G"][1] == 0).all() and np.isnan(rows["H"][1]).all()
    assert np.allclose(rows["N"][1], 0.25)
    assert rows["J"][0, 3] == 0 and rows["J"][0].sum() < 0.9  # not renormalised
    assert 0 < rows["K"][0, 3] < 1e-12  # tiny, not zero
    assert rows["L"][0, 3] > 0 and rows["M"][0, 3] > 0.5 and rows["O"][0, 3] == 1.0


def test_the_readout_layer_is_the_toy_models_layers_after_the_context():
    rng = np.random.default_rng(0)
    params = {"h": rng.normal(size=2), "W_c": rng.normal(size=(3, 5)), "b_c": rng.normal(size=3),
              "W_o": rng.normal(size=(4, 3)), "b_o": rng.normal(size=4)}
    assert "4 output symbols" in repr(Readout(params))
    readout = make_readout(params)
    p = readout(np.ones(3))
    assert p.shape == (4,) and np.isclose(p.sum(), 1) and readout(np.ones((2, 3))).shape == (2, 4)
    logits = params["W_o"] @ np.tanh(params["W_c"] @ np.r_[params["h"], np.ones(3)]
                                      + params["b_c"]) + params["b_o"]
    assert np.allclose(p, np.exp(logits) / np.exp(logits).sum())
    with pytest.raises(ValueError, match="context of width 3"):
        readout(np.ones(4))


def test_a_function_argument_is_whatever_the_caller_makes_of_its_key():
    made = []
    fn = probe.decode({"__callable__": {"key": "3:0", "name": "attend"}},
                      callables=lambda key, name: made.append((key, name)) or len)
    assert fn is len and made == [("3:0", "attend")]


def test_the_probe_holds_nothing_an_answer_could_use():
    """No softmax, no attention, no implementation of a test's cases, no readout: the graded
    kernel gets this module's source, and an answer can reach everything in it."""
    def code_objects(co):
        yield co
        for c in co.co_consts:
            if hasattr(c, "co_names"):
                yield from code_objects(c)

    source = Path(probe.__file__).read_text(encoding="utf-8")
    codes = list(code_objects(compile(source, "probe", "exec")))
    used = {n for co in codes for n in co.co_names}
    assert not used & {"exp", "expm1", "tanh", "logaddexp"}, used & {"exp", "expm1", "tanh"}
    functions = {co.co_name for co in codes}  # (the marker classes Impl and Readout hold data)
    assert not [f for f in functions if "softmax" in f or "attend" in f or f == "readout"
                or f.startswith("make_")], sorted(functions)


def test_a_part_no_case_calls_is_recorded_as_a_declared_value():
    inputs = [{"args": [probe.encode(np.ones(2))], "fn": 1}]
    rec = probe.probe("test", ("zeros", lambda x: x.sum()), inputs, n_functions=2)
    assert rec["values"] == {"0": "zeros"} and rec["calls"][0]["out"] == 2.0
    assert probe.probe("test", ("zeros", 3), inputs, n_functions=2)["kind"] == "notcallable"


def test_the_probe_names_the_watched_functions_an_answer_enters():
    """Student side, ``check`` watches the package's reference files: a call into one of them is
    recorded (the outermost only), wherever the answer hides it."""
    from attention_lab import softmax as reference

    watch = {reference.__code__.co_filename}

    def answer(x):
        return reference(x)

    rec = probe.call(answer, (np.ones(3),), 5, watch)
    assert rec["reference"] == ["attention_lab.softmax.softmax"] and "out" in rec
    assert "reference" not in probe.call(lambda x: x * 2, (np.ones(3),), 5, watch)
    assert "reference" not in probe.call(answer, (np.ones(3),), 5)  # nothing watched
