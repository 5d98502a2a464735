"""Paper behaviour with the real YOLOX-x weights (skipped unless the checkpoint is already in the user's cache).

Uchida et al., Fig. 1 and Fig. 4: blurring a salient object lowers OSIM more than blurring the background. The
photo is matplotlib's sample ``grace_hopper.jpg`` (a portrait: COCO "person").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

# resolved at collection, before the test fixtures point every cache at an empty folder
_HOME = Path(os.environ.get("SCENEMETRICS_HOME") or Path(torch.hub.get_dir()) / "scenemetrics").expanduser()
_YOLOX_X = _HOME / "osim" / "yolox_x.pth"


def _photo() -> torch.Tensor:
    cbook = pytest.importorskip("matplotlib.cbook")
    from scenemetrics.image import read_image

    return read_image(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))


def _blur(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    k = 21
    blurred = F.avg_pool2d(F.pad(x[None], (k // 2,) * 4, mode="replicate"), k, stride=1)[0]
    return torch.where(mask, blurred, x)


@pytest.mark.slow
@pytest.mark.weights
@pytest.mark.skipif(not _YOLOX_X.is_file(), reason=f"needs the real YOLOX-x checkpoint at {_YOLOX_X}")
def test_blurring_the_object_lowers_osim_more_than_blurring_the_background() -> None:
    from scenemetrics.osim import YOLOX, osim

    model = YOLOX.from_official("yolox_x", weights_path=_YOLOX_X)
    ref = _photo()
    dets = model.detect(ref).detections[0]
    assert len(dets) > 0 and int(dets.classes[0]) == 0  # the person is found
    H, W = ref.shape[-2:]
    x1, y1, x2, y2 = dets.boxes[0].round().long().clamp(min=0).tolist()
    obj = torch.zeros(H, W, dtype=torch.bool)
    obj[y1 : min(y2, H - 1) + 1, x1 : min(x2, W - 1) + 1] = True
    on_object = osim(_blur(ref, obj), ref, model=model)
    on_background = osim(_blur(ref, ~obj), ref, model=model)
    assert float(on_object.score) < float(on_background.score) < 1.0
