"""The rule entries (``_forms/candidates/rules/entries.py``) alone, on a real library class: a box coder's
weights, an object attribute, go to the field named for them."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import entries

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_an_entry_of_an_object_attribute_goes_to_the_field_of_its_name() -> None:
    roi_heads = pytest.importorskip("torchvision.models.detection.roi_heads")
    ops = pytest.importorskip("torchvision.ops")
    rcnn = pytest.importorskip("torchvision.models.detection.faster_rcnn")
    base = dict(
        box_roi_pool=ops.MultiScaleRoIAlign(["0"], 7, 2),
        box_head=rcnn.TwoMLPHead(8 * 49, 32),
        box_predictor=rcnn.FastRCNNPredictor(32, 3),
        fg_iou_thresh=0.5,
        bg_iou_thresh=0.5,
        batch_size_per_image=64,
        positive_fraction=0.25,
        score_thresh=0.05,
        nms_thresh=0.5,
        detections_per_img=10,
    )
    live = dict(base, bbox_reg_weights=(10.0, 10.0, 5.0, 5.0))
    built = dict(base, bbox_reg_weights=(1.0, 1.0, 1.0, 1.0))
    got = proposed(entries.propose, roi_heads.RoIHeads, live, built)
    assert got == [{"bbox_reg_weights": (10.0, 10.0, 5.0, 5.0)}]
    assert rebuilds(roi_heads.RoIHeads, live, {**built, **got[0]})
