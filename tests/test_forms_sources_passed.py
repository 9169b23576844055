"""The values an argument's uses lead to (stage 2, ``_forms/sources/passed.py``), on the hand-written
zoo's classes: the layer it was handed to (its own form), the attribute it was kept under, the
namespace the modules around it keep, the key of the class it made; each class's form is then
exact, its unchanged rebuild equal to the live module."""

from __future__ import annotations

import argparse
import warnings

import pytest
from fixtures.forms import exact

import torchxray as tx
from torchxray._forms.sources.passed import handed, holders, kept, keys
from torchxray._forms.sources.usage import usage

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_an_argument_handed_to_a_layer_is_read_off_the_layers_own_form() -> None:
    from tests.handwritten.generative import GAN

    gan = GAN(nz=16, ngf=4, ndf=4, img_size=16)
    assert handed(gan, usage(GAN, "ngf"), tx.form) == [4]
    # int(math.log2(img_size)) - 3 layers: 16 to 31 build the same generator; the form says
    # what the generator's own form says.
    size = tx.form(gan.G)["img_size"].value
    assert handed(gan, usage(GAN, "img_size"), tx.form)[:1] == [size]
    f = exact(gan)
    assert (f["ngf"].value, f["ndf"].value, f["img_size"].value) == (4, 4, size)
    # Handed only to layers of the user's, whose parts do not show it: no more proven here
    # than in the generator's form (``candidates/__init__.py: _shown``), a guess.
    assert tx.form(gan.G)["img_size"].note.startswith("a guess")
    assert f["img_size"].note.startswith("a guess") and not f["ngf"].note


def test_a_size_torch_keeps_expanded_is_offered_as_the_int_first() -> None:
    from tests.handwritten.signals import TemporalBlock

    block = TemporalBlock(4, 8, 3, stride=1, dilation=2, padding=4, dropout=0.1)
    assert handed(block, usage(TemporalBlock, "kernel_size"), tx.form)[:2] == [3, (3,)]
    f = exact(block)
    assert (f["n_inputs"].value, f["kernel_size"].value, f["padding"].value) == (4, 3, 4)


def test_an_argument_kept_under_another_name() -> None:
    from tests.handwritten.sequence import CharRNN

    rnn = CharRNN(tuple("abcdefghijkl"), n_hidden=16, n_layers=2, drop_prob=0.3)
    assert kept(rnn, usage(CharRNN, "tokens")) == [tuple("abcdefghijkl")]
    assert exact(rnn)["tokens"].value == tuple("abcdefghijkl")


def test_a_namespace_the_model_keeps_is_given_to_the_blocks_that_read_its_fields() -> None:
    from tests.handwritten.scans import RWKV, RWKVBlock

    args = argparse.Namespace(n_embd=16, n_layer=2, vocab_size=40)
    model = RWKV(args)
    block = model.blocks[1]
    assert holders(block, usage(RWKVBlock, "args"))[0] is args
    f = exact(block)
    assert f["args"].value.n_embd == 16 and f["layer_id"].value == 1


def test_a_key_looked_up_in_a_table_is_the_one_of_the_class_it_made() -> None:
    from tests.handwritten.calling import MLPBlock

    block = MLPBlock(16, 8, "relu", "layer", 0.1)
    assert keys(block, "norm", usage(MLPBlock, "norm")) == ["layer", "batch"]
    assert exact(block)["norm"].value == "layer"


def test_a_count_named_like_a_layer_is_read_as_a_number() -> None:
    from tests.handwritten.multimodal import TinyDecoder

    f = exact(TinyDecoder(100, 32, 2, 4))
    assert f["n_layer"].value == 2 and f["n_layer"].kind != "class"
