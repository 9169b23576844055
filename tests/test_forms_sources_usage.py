"""How a constructor uses each argument (stage 2, ``_forms/sources/usage.py``), read from its AST
on the hand-written zoo's classes (``tests/handwritten``): kept under another name, unpacked,
iterated, measured, used as a number, read by its fields or keys, looked up in a table, handed
to a layer; and which values such uses allow."""

from __future__ import annotations

import argparse
import warnings

import pytest
from torch import nn

from torchxray._forms.sources.usage import Handed, Usage, fits, usage

warnings.filterwarnings("ignore")


def test_an_argument_kept_iterated_and_measured_is_a_sequence() -> None:
    from tests.handwritten.scans import DeepSpeech
    from tests.handwritten.sequence import CharRNN

    tokens = usage(CharRNN, "tokens")
    assert tokens.kept == ("chars",)  # self.chars = tokens
    labels = usage(DeepSpeech, "labels")
    assert labels.sequence and labels.measured and not labels.number  # len(labels)
    assert not fits(labels, 9) and fits(labels, "abc") and fits(labels, None)


def test_an_argument_unpacked_through_a_function_takes_a_pair() -> None:
    from tests.handwritten.attention import ViT

    u = usage(ViT, "image_size")  # image_height, image_width = pair(image_size)
    assert u.unpacked == 2
    # patch_height, patch_width = pair(patch_size); self.patch_height, ... = patch_height, ...
    assert usage(ViT, "patch_size").items_kept == ("patch_height", "patch_width")
    assert fits(u, (16, 24)) and fits(u, 16) and not fits(u, (3, 2, 2))


def test_an_argument_used_as_a_number_or_handed_to_a_layer() -> None:
    from tests.handwritten.classifiers import _DenseBlock
    from tests.handwritten.generative import GAN, Generator
    from tests.handwritten.signals import TemporalBlock

    assert usage(Generator, "img_size").number  # int(math.log2(img_size))
    assert usage(_DenseBlock, "num_layers").number  # range(num_layers)
    assert usage(_DenseBlock, "num_input_features").number  # num_input_features + i * k
    n_inputs = usage(TemporalBlock, "n_inputs")
    assert Handed(nn.Conv1d, "in_channels", "conv1") in n_inputs.handed
    assert not fits(n_inputs, (8, 8, 8, 8)) and fits(n_inputs, 4)
    ngf = usage(GAN, "ngf")
    assert ngf.handed == (Handed(Generator, "ngf", "G"),)  # self.G = Generator(nz, ngf, ...)


def test_an_argument_read_by_its_fields_keys_or_as_a_tables_key() -> None:
    from tests.handwritten.calling import ConfigAutoencoder, MLPBlock
    from tests.handwritten.scans import RWKVBlock

    args = usage(RWKVBlock, "args")
    assert args.fields == ("n_embd",)
    assert fits(args, argparse.Namespace(n_embd=16)) and not fits(args, (16,))
    cfg = usage(ConfigAutoencoder, "cfg")
    assert {"encoder", "input_dim", "latent_dim"} <= set(cfg.keys)
    assert not fits(cfg, 12) and fits(cfg, {"encoder": {}})
    norm = usage(MLPBlock, "norm")  # {"batch": nn.BatchNorm1d, "layer": nn.LayerNorm}[norm]
    assert norm.table == ("batch", "layer")
    assert norm.table_values == (nn.BatchNorm1d, nn.LayerNorm)
    assert not fits(norm, nn.LayerNorm(4)) and fits(norm, "layer")


def test_a_transformers_model_the_constructor_imports_itself_is_a_layer_it_hands_to() -> None:
    pytest.importorskip("transformers")
    from tests.handwritten.multimodal import TinyDecoder, TinyLlava

    assert usage(TinyLlava, "vision_config").fields == ("hidden_size",)
    n_layer = usage(TinyDecoder, "n_layer")  # nn.TransformerEncoder(layer, n_layer)
    assert n_layer.number and n_layer.handed[0].param == "num_layers"


def test_nothing_is_known_of_torchs_own_classes_or_code_without_source() -> None:
    assert usage(nn.Conv2d, "in_channels") == Usage()
    made = type("Made", (nn.Module,), {"__init__": lambda self, x: nn.Module.__init__(self)})
    assert not usage(made, "x").known  # a lambda's source is the line around it
    assert fits(Usage(), object())
