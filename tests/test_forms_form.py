"""forms.py: fields, kinds, value recovery, parsing UI strings, validation, build, recording."""

from __future__ import annotations

import enum
import functools
import inspect
import threading
import typing
from collections.abc import Callable
from typing import Literal

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from torchxray.forms import Field, Form, FormError, form, record_init_args


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


class Custom(nn.Module):
    def __init__(
        self,
        width: int,
        scale: float = 1.0,
        mode: Literal["a", "b"] = "a",
        speed: Mode = Mode.FAST,
        norm_layer: Callable[..., nn.Module] | None = None,
        act: type[nn.Module] = nn.ReLU,
        extra: dict | None = None,
        *args: int,
        **kwargs: str,
    ) -> None:
        super().__init__()
        self.width = width
        self.fc = nn.Linear(width, width)
        self.norm = (norm_layer or nn.LayerNorm)(width)
        self.act = act()


def _field(f: Form, name: str) -> Field:
    return f[name]


# --- fields and kinds -------------------------------------------------------------------------


def test_class_form_gives_defaults_and_required() -> None:
    f = form(nn.Linear)
    assert f.cls is nn.Linear
    assert [x.name for x in f.fields] == ["in_features", "out_features", "bias", "device", "dtype"]
    assert f["in_features"].required and f["in_features"].value is None
    assert f["bias"].value is True and f["bias"].origin == "default"
    assert f.values["out_features"] is None


def test_kinds_of_a_custom_signature() -> None:
    f = form(Custom)
    kinds = {x.name: x.kind for x in f.fields}
    assert kinds == {
        "width": "int",
        "scale": "float",
        "mode": "choice",
        "speed": "choice",
        "norm_layer": "class",
        "act": "class",
        "extra": "literal",
        "args": "varargs",
        "kwargs": "varkw",
    }
    assert f["mode"].choices == ("a", "b")
    assert f["speed"].choices == ("FAST", "SLOW")
    assert f["norm_layer"].optional and "torch.nn.BatchNorm2d" in f["norm_layer"].choices
    assert f["act"].text == "torch.nn.ReLU"


def test_torch_kinds() -> None:
    conv = form(nn.Conv2d(3, 8, 3))
    assert conv["kernel_size"].kind == "int_or_tuple"
    assert conv["padding"].choices == ("same", "valid")
    assert conv["padding_mode"].choices == ("zeros", "reflect", "replicate", "circular")
    assert conv["dtype"].kind == "dtype" and conv["device"].kind == "device"
    assert form(nn.Upsample(scale_factor=2))["mode"].kind == "choice"
    assert form(nn.RNNCell(2, 3))["nonlinearity"].choices == ("tanh", "relu")
    assert form(nn.MSELoss())["reduction"].choices == ("mean", "sum", "none")
    assert form(nn.GELU())["approximate"].choices == ("none", "tanh")
    assert form(nn.Embedding(4, 2))["max_norm"].optional
    assert form(nn.CrossEntropyLoss(torch.ones(3)))["weight"].kind == "tensor"
    assert form(nn.AdaptiveAvgPool2d((2, None)))["output_size"].value == (2, None)


def test_respects_signature_and_wraps() -> None:
    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(fn)
        def inner(*a: object, **k: object) -> None:
            fn(*a, **k)

        return inner

    class Wrapped(nn.Module):
        @deco
        def __init__(self, size: int = 4) -> None:
            super().__init__()
            self.size = size

    class Declared(nn.Module):
        __signature__ = inspect.Signature(
            [inspect.Parameter("depth", inspect.Parameter.KEYWORD_ONLY, default=2, annotation=int)]
        )

        def __init__(self, **kw: int) -> None:
            super().__init__()
            self.depth = kw.get("depth", 2)

    assert [x.name for x in form(Wrapped(7)).fields] == ["size"]
    assert form(Wrapped(7))["size"].value == 7
    f = form(Declared(depth=5))
    assert [x.name for x in f.fields] == ["depth"] and f["depth"].value == 5
    assert f.build(depth="3").depth == 3


def test_rnn_family_shows_rnnbase_fields() -> None:
    f = form(nn.LSTM(4, 8, num_layers=2, batch_first=True, proj_size=2))
    names = [x.name for x in f.fields]
    assert "mode" not in names and "nonlinearity" not in names
    assert f.values["proj_size"] == 2 and f.values["batch_first"] is True
    assert form(nn.RNN(2, 3, nonlinearity="relu")).values["nonlinearity"] == "relu"


# --- value recovery -----------------------------------------------------------------------------


def test_origins_attribute_and_derived() -> None:
    f = form(nn.Linear(3, 4, bias=False))
    assert f["in_features"].origin == "attribute"
    assert f["bias"].origin == "derived" and f["bias"].value is False
    assert f["dtype"].value == torch.float32 and f["device"].text == "cpu"
    mha = form(nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4))
    assert mha.values["add_bias_kv"] is True and mha["add_bias_kv"].origin == "derived"
    assert mha.values["kdim"] == 4 and mha.values["vdim"] is None
    emb = form(nn.Embedding(5, 3, _freeze=True))
    assert emb.values["_freeze"] is True and emb.values["_weight"] is None


def test_transformer_layer_like_vit() -> None:
    layer = nn.TransformerEncoderLayer(
        16, 4, 32, 0.2, activation="gelu", batch_first=True, norm_first=True
    )
    f = form(layer)
    assert f.values["d_model"] == 16 and f.values["nhead"] == 4
    assert f.values["dim_feedforward"] == 32 and f.values["dropout"] == 0.2
    assert f["activation"].kind == "callable" and f["activation"].text.endswith("gelu")
    new = f.build(activation="relu", dim_feedforward="64")
    assert new.activation is F.relu and new.linear1.out_features == 64
    assert new.norm_first and new.self_attn.batch_first


def test_custom_class_guesses_are_flagged() -> None:
    m = Custom(6, scale=2.0)
    f = form(m)
    assert f["width"].origin == "attribute" and f["width"].value == 6
    # scale is not stored under its own name: the view must show a guess.
    assert f["scale"].origin == "default" and f["scale"].value == 1.0


# --- parsing UI strings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "name", "text", "value"),
    [
        (lambda: nn.Linear(2, 3), "out_features", "7", 7),
        (lambda: nn.Linear(2, 3), "bias", "false", False),
        (lambda: nn.Dropout(), "p", "0.25", 0.25),
        (lambda: nn.Conv2d(1, 1, 3), "kernel_size", "(3, 1)", (3, 1)),
        (lambda: nn.Conv2d(1, 1, 3), "kernel_size", "5", 5),
        (lambda: nn.Conv2d(1, 1, 3), "stride", "2, 1", (2, 1)),
        (lambda: nn.Conv2d(1, 1, 3), "padding", "same", "same"),
        (lambda: nn.Conv2d(1, 1, 3), "dtype", "float16", torch.float16),
        (lambda: nn.Conv2d(1, 1, 3), "dtype", "torch.bfloat16", torch.bfloat16),
        (lambda: nn.Conv2d(1, 1, 3), "device", "cuda:0", torch.device("cuda:0")),
        (lambda: nn.Conv2d(1, 1, 3), "device", "None", None),
        (lambda: nn.Embedding(3, 2), "padding_idx", "None", None),
        (lambda: nn.Upsample(scale_factor=2), "mode", "bilinear", "bilinear"),
        (
            lambda: nn.TransformerEncoderLayer(8, 2),
            "activation",
            "torch.nn.functional.gelu",
            F.gelu,
        ),
        (lambda: Custom(2), "act", "torch.nn.GELU", nn.GELU),
        (lambda: Custom(2), "act", "GELU", nn.GELU),
        (lambda: Custom(2), "speed", "SLOW", Mode.SLOW),
        (lambda: Custom(2), "extra", "{'a': (1, 2)}", {"a": (1, 2)}),
        (lambda: Custom(2), "args", "(1, 2)", (1, 2)),
    ],
)
def test_parse_strings(
    factory: Callable[[], nn.Module], name: str, text: str, value: object
) -> None:
    assert form(factory()).parse(name, text) == value


def test_a_word_where_a_literal_is_read_says_to_quote_it() -> None:
    with pytest.raises(FormError) as e:
        form(Custom(2)).parse("extra", "zero")
    assert "write a string in quotes, 'zero'" in str(e.value)
    assert form(Custom(2)).parse("extra", "'zero'") == "zero"


def test_code_injection_is_rejected() -> None:
    attack = "__import__('os').system('echo pwned')"
    for factory, name in [
        (lambda: nn.Linear(2, 3), "out_features"),
        (lambda: Custom(2), "extra"),
        (lambda: nn.Conv2d(1, 1, 3), "kernel_size"),
        (lambda: Custom(2), "act"),
        (lambda: nn.TransformerEncoderLayer(8, 2), "activation"),
    ]:
        f = form(factory())
        errors = f.validate(**{name: attack})
        assert name in errors and errors[name].startswith(f"{name}: expected"), errors
        with pytest.raises(FormError):
            f.build(**{name: attack})
    msg = form(Custom(2)).validate(extra=attack)["extra"]
    assert "never evaluated" in msg


# --- validation and build -----------------------------------------------------------------------


def test_validate_messages() -> None:
    f = form(nn.Linear(2, 3))
    assert f.validate() == {}
    errors = f.validate(out_features="abc", in_features=0, bais=True)
    assert errors["out_features"] == "out_features: expected an integer, got 'abc'"
    assert errors["in_features"] == "in_features: expected a size >= 1, got 0"
    assert "did you mean bias" in errors["bais"]
    assert form(nn.Dropout()).validate(p=1.5) == {
        "p": "p: expected a probability in [0, 1], got 1.5"
    }
    assert "dropout" in form(nn.TransformerEncoderLayer(8, 2)).validate(dropout="2")
    assert form(nn.Linear(2, 3)).validate(bias="maybe")["bias"] == (
        "bias: expected True or False, got 'maybe'"
    )
    assert "mode" in form(nn.Upsample(scale_factor=2)).validate(mode="cubic")


def test_build_with_changes_keeps_the_rest() -> None:
    m = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False, padding_mode="reflect")
    new = form(m).build(out_channels="16")
    assert isinstance(new, nn.Conv2d) and new is not m
    assert new.out_channels == 16 and new.stride == (2, 2) and new.bias is None
    assert new.padding_mode == "reflect" and m.out_channels == 8
    half = form(nn.Linear(2, 3)).build(dtype="float16")
    assert half.weight.dtype == torch.float16


def test_build_errors_are_form_errors() -> None:
    f = form(nn.Linear)
    with pytest.raises(FormError) as info:
        f.build(in_features=3)
    assert isinstance(info.value, ValueError)
    assert "out_features" in info.value.errors and "required" in str(info.value)
    with pytest.raises(FormError) as info2:
        form(nn.Conv2d(4, 4, 3)).build(groups=3)
    assert "__init__" in info2.value.errors and "divisible" in str(info2.value)


def test_type_errors_for_bad_input() -> None:
    for bad in (3, "Linear", int, nn.functional.relu):
        with pytest.raises(TypeError, match="nn.Module"):
            form(bad)  # type: ignore[arg-type]


# --- recording ------------------------------------------------------------------------------


def test_record_init_args_exact_and_restored() -> None:
    init = nn.Module.__init__
    with record_init_args():
        m = Custom(5, 3.0, "b", extra={"k": 1})
        with record_init_args():  # re-entrant
            inner = nn.Linear(2, 2)
    assert nn.Module.__init__ is init
    f = form(m)
    assert f["scale"].origin == "recorded" and f["scale"].value == 3.0
    assert f.values["mode"] == "b" and f.values["extra"] == {"k": 1}
    assert all(x.origin == "recorded" for x in f.fields)
    assert form(inner)["in_features"].origin == "recorded"
    # Not recorded outside the block; copies (deepcopy skips __init__) are not recorded either.
    assert form(Custom(5, 3.0))["scale"].origin == "default"
    import copy

    assert form(copy.deepcopy(m))["scale"].origin == "default"
    assert form(m).build().fc.in_features == 5


def test_record_init_args_threads() -> None:
    made: list[nn.Module] = []
    init = nn.Module.__init__

    def work() -> None:
        with record_init_args():
            made.append(nn.Linear(3, 4))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert nn.Module.__init__ is init
    assert all(form(m)["out_features"].origin == "recorded" for m in made)


def test_record_restores_on_error() -> None:
    init = nn.Module.__dict__["__init__"]
    with pytest.raises(RuntimeError), record_init_args():
        raise RuntimeError("boom")
    assert nn.Module.__dict__["__init__"] is init
    assert nn.Linear(2, 2).in_features == 2


# --- models as found in the wild ------------------------------------------------------------------


class BasicBlock(nn.Module):
    """ResNet-style block with a torchvision-style norm_layer argument."""

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)


class TinyViT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, 4)
        self.norm = nn.LayerNorm(16, eps=1e-6)
        self.attn = nn.MultiheadAttention(16, 4, dropout=0.1, batch_first=True)
        self.act = nn.GELU()
        self.enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(
                16, 4, 32, activation="gelu", batch_first=True, norm_first=True
            ),
            2,
            enable_nested_tensor=False,
        )


@pytest.mark.parametrize("model", [BasicBlock(8, 16, 2), TinyViT()], ids=["resnet", "vit"])
def test_every_submodule_of_common_models_round_trips(model: nn.Module) -> None:
    for name, sub in model.named_modules():
        if not type(sub).__module__.startswith("torch.nn"):
            continue
        built = form(sub).build()
        assert type(built) is type(sub), name
        assert repr(built) == repr(sub), name
        shapes = [(n, p.shape) for n, p in built.named_parameters()]
        assert shapes == [(n, p.shape) for n, p in sub.named_parameters()], name


def test_form_does_not_touch_the_module() -> None:
    m = nn.Linear(2, 3)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    form(m).build(out_features=5)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    assert m.out_features == 3


# --- odd cases ------------------------------------------------------------------------------------


class Odd(nn.Module):
    def __init__(
        self,
        level: Literal[1, 2, 3] = 1,
        norm: type[nn.Module] = nn.LayerNorm,
        dropout: float = 0.0,
        hidden: int = 4,
    ) -> None:
        super().__init__()
        self.norm = norm(hidden)  # same name as the parameter, but an instance
        self.dropout = nn.Dropout(dropout)
        self.level = level

    @property
    def hidden(self) -> int:
        raise RuntimeError("property that raises")


def test_odd_attributes_fall_back_or_derive() -> None:
    f = form(Odd(level=2, dropout=0.3))
    assert f["norm"].origin == "default" and f["norm"].value is nn.LayerNorm
    assert f["dropout"].origin == "derived" and f["dropout"].value == 0.3
    assert f["hidden"].origin == "default"
    assert f["level"].value == 2 and f["level"].choices == ("1", "2", "3")
    assert f.parse("level", "3") == 3
    assert f.validate(level=4) == {"level": "level: expected one of 1, 2, 3, got 4"}
    assert isinstance(f.build(level="3").norm, nn.LayerNorm)


def test_module_docstring_examples_run() -> None:
    import doctest

    from torchxray import forms

    assert doctest.testmod(forms).failed == 0


def test_parametrized_module_uses_original_class() -> None:
    from torch.nn.utils import parametrize

    class Sym(nn.Module):
        def forward(self, w: torch.Tensor) -> torch.Tensor:
            return w.triu() + w.triu(1).T

    m = nn.Linear(3, 3, bias=False)
    parametrize.register_parametrization(m, "weight", Sym())
    f = form(m)
    assert f.cls is nn.Linear and f.values["bias"] is False
    assert type(f.build()) is nn.Linear


def test_meta_and_lazy_modules() -> None:
    meta = nn.Linear(2, 3, device="meta")
    f = form(meta)
    assert f.values["device"] == torch.device("meta")
    assert f.build().weight.is_meta
    lazy = form(nn.LazyLinear(5))
    assert lazy.values["out_features"] == 5 and lazy.values["bias"] is True


def test_rnn_subclass_and_recorded_rnn() -> None:
    class MyLSTM(nn.LSTM):
        pass

    f = form(MyLSTM(3, 5, 2))
    assert f.values["num_layers"] == 2 and f.cls is MyLSTM
    assert [x.name for x in form(nn.RNN).fields][:4] == [
        "input_size",
        "hidden_size",
        "num_layers",
        "nonlinearity",
    ]
    assert "proj_size" not in form(nn.GRU).values and "proj_size" in form(nn.LSTM).values
    with record_init_args():
        gru = nn.GRU(4, 6, 2, batch_first=True)
    g = form(gru)
    assert g["hidden_size"].origin == "recorded" and g.values["batch_first"] is True
    assert repr(g.build()) == repr(gru)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_optional_str_none_and_script_module() -> None:
    class Named(nn.Module):
        def __init__(self, tag: str | None = "x") -> None:
            super().__init__()
            self.tag = tag

    f = form(Named("y"))
    assert f["tag"].kind == "str" and f["tag"].optional
    assert f.build(tag="None").tag is None and f.build(tag="z").tag == "z"
    with pytest.raises(TypeError, match="ScriptModule"):
        form(torch.jit.script(nn.Linear(2, 2)))


def test_layer_named_ints_are_not_classes() -> None:
    class Net(nn.Module):
        def __init__(self, num_layer: int | None = None, out_layer: int = 3) -> None:
            super().__init__()

    kinds = {f.name: f.kind for f in form(Net).fields}
    assert kinds == {"num_layer": "int", "out_layer": "int"}


def test_zoo_modules_never_crash_and_torch_layers_round_trip() -> None:
    """Every submodule of the robustness zoo: form() works or raises TypeError; torch.nn layers
    (not parametrize internals) rebuild to the same repr."""
    import warnings

    from torch.nn.utils import parametrize

    zoo = pytest.importorskip("zoo.models")
    checked = 0
    for case in zoo.CASES.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = case.build()
        for path, sub in model.named_modules():
            try:
                f = form(sub)
            except TypeError:
                continue  # ScriptModules: said clearly, nothing to rebuild
            # Parametrize internals and bare nn.Module holders (fx) have no constructor state.
            internal = "parametrizations" in path or parametrize.is_parametrized(sub)
            internal = internal or type(sub) is nn.Module
            if not type(sub).__module__.startswith("torch.nn.modules") or internal:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                built = f.build()
            assert type(built) is type(sub), (case.name, path)
            assert repr(built) == repr(sub), (case.name, path)
            checked += 1
    assert checked > 100


def test_sending_every_field_back_unchanged_builds_the_same() -> None:
    for m in (
        nn.ConstantPad2d((1, -1, 0, 2), 0.5),
        nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()),
        nn.Sequential(nn.Linear(2, 3), nn.ReLU()),
        nn.CrossEntropyLoss(torch.rand(100)),
        nn.Upsample(scale_factor=2.0, mode="area"),
    ):
        f = form(m)
        texts = {x.name: x.text for x in f.fields}
        assert f.validate(**texts) == {}, type(m).__name__
        assert repr(f.build(**texts)) == repr(m)


def test_user_mode_param_is_free_text() -> None:
    class Mixer(nn.Module):
        def __init__(self, mode: str = "concat") -> None:
            super().__init__()
            self.mode = mode

    f = form(Mixer("add"))
    assert f["mode"].kind == "str" and f.build(mode="mul").mode == "mul"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_device_is_recovered_and_changeable() -> None:
    m = nn.Linear(2, 3, device="cuda")
    f = form(m)
    assert f["device"].text == "cuda:0"
    assert f.build().weight.is_cuda
    assert f.build(device="cpu").weight.device.type == "cpu"


def test_unresolvable_string_annotations_and_extra_kwargs() -> None:
    # `Thing` exists only for type checkers, so eval_str fails; built from text as in a notebook.
    src = (
        "from __future__ import annotations\n"
        "from torch import nn\n"
        "class StrAnnotated(nn.Module):\n"
        "    def __init__(self, width: int, thing: Thing | None = None, **extra: object):\n"
        "        super().__init__()\n"
        "        self.width = width\n"
        "        self.extra = extra\n"
    )
    namespace: dict[str, object] = {"__name__": "strann"}
    exec(compile(src, "<strann>", "exec"), namespace)  # noqa: S102 - test fixture source
    cls = typing.cast(type[nn.Module], namespace["StrAnnotated"])
    f = form(cls(3))
    assert f["width"].kind == "int" and f["width"].value == 3
    assert f["thing"].kind == "literal" and f["extra"].kind == "varkw"
    built = f.build(width="5", scale="2.5", note="hello")
    assert built.width == 5 and built.extra == {"scale": 2.5, "note": "hello"}


def test_built_modules_have_exact_forms() -> None:
    m = Custom(6, scale=2.0)
    assert form(m)["scale"].origin == "default"
    new = form(m).build(scale="3.5")
    g = form(new)
    assert g["scale"].origin == "recorded" and g["scale"].value == 3.5
    assert g["width"].value == 6
    assert form(g.build(width=8))["scale"].value == 3.5


class _Head(nn.Module):
    def __init__(self, opt):  # type: ignore[no-untyped-def]
        super().__init__()
        self.drop = nn.Dropout(opt.net.p)
        self.fc = nn.Linear(opt.net.width, opt.data.classes)


def test_a_namespace_in_a_namespace_shows_its_fields_and_an_edit_changes_one() -> None:
    import types

    import torchxray as tx

    opt = types.SimpleNamespace(
        net=types.SimpleNamespace(p=0.1, width=8), data=types.SimpleNamespace(classes=3)
    )
    model = _Head(opt)
    f = form(model)
    assert f.inexact == ""
    names = [x.name for x in f.fields]
    assert {"opt.net.p", "opt.net.width", "opt.data.classes"} <= set(names)
    assert f["opt.net.p"].group == "opt" and "opt.net" not in names  # one group, "net.p"
    built = f.build(**{"opt.net.p": 0.3})
    assert (built.drop.p, built.fc.out_features) == (0.3, 3)
    # Through the patch engine: only that field changes, the namespace the model was given is
    # never touched.
    outer = nn.Sequential(model)
    tx.PatchLog(outer).edit("0", **{"opt.net.p": 0.4})
    assert (outer[0].drop.p, outer[0].fc.out_features, opt.net.p) == (0.4, 3, 0.1)


class _SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduction=4):  # noqa: ANN001 - unannotated, as papers write it
        super().__init__()
        self.fc = nn.Linear(channels, channels // reduction)


def test_a_users_int_named_like_a_torch_choice_is_a_number_not_the_choice() -> None:
    """torch's losses take reduction="mean"/"sum"/"none"; a user's ``reduction=4`` is a ratio: the
    field is a number and an edit to 2 applies."""
    f = form(_SqueezeExcite(16))
    assert f.inexact == "" and f["reduction"].value == 4
    assert f["reduction"].kind != "choice"
    assert f.build(reduction=2).fc.out_features == 8
    assert form(nn.CrossEntropyLoss())["reduction"].kind == "choice"
