"""Bad values for every form field kind: each gets a clear message keyed by its field, nothing is
evaluated, and the model is unchanged whether the value comes through Form, PatchLog or the
widget's request handler."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
import torch.nn as nn

from torchxray.forms import FormError, form
from torchxray.patch import PatchLog

from .invariants import assert_untouched, state_fingerprint

MARKER = Path("/tmp/torchxray-zoo-injected")  # created only if a string is ever executed


class Custom(nn.Module):
    """A user class with the field kinds torch.nn does not use: str, class, **kwargs."""

    def __init__(
        self,
        name: str = "block",
        act: type[nn.Module] = nn.ReLU,
        mode: Literal["sum", "mean"] = "sum",
        width: int = 4,
        **extra: Any,
    ) -> None:
        super().__init__()
        self.name, self.mode, self.extra = name, mode, extra
        self.act = act()
        self.fc = nn.Linear(width, width)

    def forward(self, x: Any) -> Any:
        return self.act(self.fc(x))


class Holder(nn.Module):
    """Puts the module under test at path "m" so PatchLog.edit has a slot to change."""

    def __init__(self, m: nn.Module) -> None:
        super().__init__()
        self.m = m


INJECTIONS = (
    f"__import__('os').system('touch {MARKER}')",
    f"open('{MARKER}', 'w')",
    "().__class__.__base__.__subclasses__()",
    "lambda: 0",
    "exec('import os')",
    "1; import os",
    "{{7*7}}",
    "<script>alert(1)</script>",
)
UNICODE = ("४", "ｔｒｕｅ", "🙂", "\u202etxt", "\x00", "é" * 3)
HUGE = ("9" * 5000, "[" * 5000, "(1,) * 10**9")

# kind -> (factory, field, wrong type, out of range (or None), empty-is-invalid)
SAMPLES: dict[str, tuple[Callable[[], nn.Module], str, tuple[Any, ...], tuple[Any, ...], bool]] = {
    "int": (lambda: nn.Linear(4, 4), "out_features", ("abc", "1.5", "[1, 2]", None, 2.5), ("-3", "0"), True),
    "float": (lambda: nn.Dropout(0.1), "p", ("'x'", "[0.5]", "None"), ("1.5", "-0.1", "1e999", "nan"), True),
    "bool": (lambda: nn.Linear(4, 4), "bias", ("maybe", "2", "[]", 3), (), True),
    "choice": (lambda: nn.Conv2d(2, 3, 3), "padding_mode", ("ZEROS", 5, "zeros;x"), (), True),
    "int_or_tuple": (lambda: nn.Conv2d(2, 3, 3), "kernel_size", ("'3'", "((1,),)", "(1e9, 1e9)"), ("(3, -1)", "0"), True),
    "dtype": (lambda: nn.Linear(4, 4), "dtype", ("float33", "os.system", "3"), (), False),
    "device": (lambda: nn.Linear(4, 4), "device", ("gpu", "os.system", "[0]"), (), False),
    "callable": (lambda: nn.TransformerEncoderLayer(8, 2, 16), "activation", ("os.system", "builtins.eval", "subprocess.Popen"), (), True),
    "literal": (lambda: nn.Upsample(scale_factor=2.0), "scale_factor", ("__import__('os')", "x"), (), False),
    "tensor": (lambda: nn.Embedding(5, 3), "_weight", ("torch.zeros(10**12)", "''"), (), False),
    "varargs": (lambda: nn.Sequential(nn.ReLU()), "args", ("'abc'", "(nn.ReLU(),)"), (), True),
    "str": (Custom, "name", (3, None, ["a"]), (), False),
    "class": (Custom, "act", ("os.system", "subprocess.Popen", "int", "builtins.eval"), (), True),
    "varkw": (Custom, "extra", ("'abc'", "[1, 2]", "{1: 2}"), (), False),
}  # fmt: skip


def _values(kind: str) -> list[tuple[str, Any]]:
    _factory, _field, wrong, out_of_range, empty_invalid = SAMPLES[kind]
    vals = [("wrong type", v) for v in wrong] + [("out of range", v) for v in out_of_range]
    vals += [("empty", "")] if empty_invalid else []
    if kind == "str":  # a str field takes any text: long, unicode or code-like text is a value
        return vals
    vals += [("huge", v) for v in HUGE]
    vals += [("unicode", v) for v in UNICODE]
    vals += [("injection", v) for v in INJECTIONS]
    return vals


CASES = [(k, cat, v) for k in SAMPLES for cat, v in _values(k)]


@pytest.fixture(autouse=True)
def _no_marker() -> Any:
    MARKER.unlink(missing_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    assert not MARKER.exists(), "a form value was executed"


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_sample_has_that_kind(kind: str) -> None:
    factory, name, *_ = SAMPLES[kind]
    assert form(factory())[name].kind == kind


def _clear(message: str, name: str) -> None:
    assert isinstance(message, str) and message.strip()
    assert "Traceback" not in message and "frame #" not in message, message
    assert len(message) < 600, f"message for {name} is {len(message)} characters"


@pytest.mark.parametrize(
    ("kind", "category", "value"), CASES, ids=[f"{k}-{c}-{i}" for i, (k, c, _) in enumerate(CASES)]
)
def test_bad_value_is_reported_per_field(kind: str, category: str, value: Any) -> None:
    factory, name, *_ = SAMPLES[kind]
    model = Holder(factory())
    before = state_fingerprint(model)
    f = form(model.m)
    errors = f.validate(**{name: value})
    assert name in errors, f"{kind} field {name!r} accepted {category} value {value!r}: {errors}"
    _clear(errors[name], name)
    with pytest.raises(FormError) as info:
        f.build(**{name: value})
    assert name in info.value.errors
    log = PatchLog(model)
    with pytest.raises(FormError) as info:
        log.edit("m", **{name: value})
    assert name in info.value.errors
    assert not log.can_undo and not log.entries
    assert_untouched(before, model, f"rejected {kind} value")


@pytest.mark.parametrize(
    ("factory", "name", "value"),
    [
        (lambda: nn.Linear(4, 4), "out_features", "1000000000000"),  # 16 TB: allocation fails
        (lambda: nn.Linear(4, 4), "out_features", "100000000000000000000"),  # int64 overflow
        (lambda: nn.Linear(4, 4), "dtype", "torch.int64"),  # parameters must be floating point
        (lambda: nn.Embedding(5, 3), "_weight", "[1, 2]"),  # wrong shape
        (lambda: nn.Sequential(nn.ReLU()), "args", "(1, 2)"),  # not modules
    ],
)
def test_constructor_refusal_is_clear(
    factory: Callable[[], nn.Module], name: str, value: str
) -> None:
    """Values only the constructor can reject: a FormError with a short message, model unchanged."""
    model = Holder(factory())
    before = state_fingerprint(model)
    with pytest.raises(FormError) as info:
        PatchLog(model).edit("m", **{name: value})
    assert info.value.errors
    for key, message in info.value.errors.items():
        _clear(message, key)
    assert_untouched(before, model, "constructor refusal")


def test_unknown_field_names_the_fields() -> None:
    model = Holder(nn.Linear(4, 4))
    before = state_fingerprint(model)
    errors = form(model.m).validate(out_featurs="8")
    assert "out_featurs" in errors and "out_features" in errors["out_featurs"]
    with pytest.raises(FormError):
        PatchLog(model).edit("m", out_featurs=8)
    assert_untouched(before, model, "unknown field")


@pytest.mark.parametrize(
    ("kind", "category", "value"), [c for c in CASES if isinstance(c[2], str)][::3]
)
def test_widget_edit_request_reports_field(kind: str, category: str, value: str) -> None:
    """The same bad text through the widget's request handler: an error reply naming the field."""
    from torchxray._view.session import Session

    factory, name, *_ = SAMPLES[kind]
    model = Holder(factory())
    before = state_fingerprint(model)
    session = Session(model)
    reply, _changed = session.handle({"kind": "edit", "path": "m", "changes": {name: value}})
    assert reply["kind"] == "error", reply
    fields = reply.get("fields") or {}
    assert name in fields or name in reply["message"], reply
    assert not session.log.can_undo
    assert_untouched(before, model, "rejected widget edit")
