"""A list the constructor keeps as a tensor of another shape (stage 2,
``_forms/sources/tensor_lists.py``): the lists the tensor may have been given as, the draft
of an argument whose default is a sequence, on models of the zoo and one of a set's habits."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchxray as tx
from tests.handwritten import CASES
from torchxray._forms.sources.tensor_lists import as_lists
from torchxray._forms.sources.uses import Usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_tensor_is_offered_as_rows_flattened_nested_flat_and_split() -> None:
    t = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]])
    got = as_lists([t], Usage(sequence=True))
    assert got[:3] == [
        [[1, 2, 3, 4], [5, 6, 7, 8]],  # rows flattened: whole numbers as ints
        [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
        [1, 2, 3, 4, 5, 6, 7, 8],
    ]
    assert [[1, 2], [3, 4], [5, 6], [7, 8]] in got  # in rows of two
    assert as_lists([torch.tensor([0.5, 1.5])], Usage(sequence=True))[0] == [0.5, 1.5]


def test_nothing_is_offered_for_an_argument_not_read_as_a_sequence_or_a_meta_tensor() -> None:
    assert as_lists([torch.ones(2, 2)], Usage(number=True)) == []
    assert as_lists([torch.ones(2, 2, device="meta")], Usage(sequence=True)) == []


class _Detect(nn.Module):
    """Anchors as rows of flattened pairs, kept as (levels, anchors, 2); the count per level
    read off a row."""

    def __init__(self, classes=80, anchors=(), ch=()):
        super().__init__()
        self.na = len(anchors[0]) // 2
        self.register_buffer("anchors", torch.tensor(anchors).float().view(len(anchors), -1, 2))
        self.m = nn.ModuleList(nn.Conv2d(c, (classes + 5) * self.na, 1) for c in ch)


def test_rows_of_flattened_pairs_kept_as_a_tensor_of_pairs_are_the_draft() -> None:
    anchors = [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119]]
    f = tx.form(_Detect(3, anchors, (8, 16)))
    assert f.inexact == ""
    assert f["anchors"].value == anchors and f["anchors"].origin == "derived"


@pytest.mark.parametrize("name", ["list_as_flat_tensor", "flat_list_as_pairs"])
def test_the_zoos_lists_kept_as_tensors_are_exact(name: str) -> None:
    f = tx.form(CASES[name].build())
    assert f.inexact == ""


class _Normalize(nn.Module):
    def __init__(self, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25)):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))


def test_a_flat_default_drafts_flat_with_the_decimals_a_person_wrote() -> None:
    f = tx.form(_Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))
    assert f.inexact == ""
    assert f["mean"].value == [0.485, 0.456, 0.406] and f["std"].value == [0.229, 0.224, 0.225]
