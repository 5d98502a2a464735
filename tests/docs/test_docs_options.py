"""Every metric option, as the schemas declare it: the `scenemetrics eval` flags, the nerfstudio fields, docs/eval.md.

The table in docs/eval.md (between the ``options-table`` markers) is rendered from the adapters' option schemas;
when they differ, the test prints the table to paste (``python -m tests.docs.test_docs_options`` prints it too).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from scenemetrics.evaluation import cli as eval_cli
from scenemetrics.registry import OptionFlag, get_metric, metric_names, option_flags

DOCS = Path(__file__).resolve().parents[2] / "docs" / "eval.md"
BUILTINS = (
    *("psnr", "ssim", "lpips", "puzzlesim", "osim", "prism", "prism_mmd"),
    *("ssim_map", "lpips_map", "abs_error"),
    *("osim_patch_psnr", "osim_patch_ssim", "osim_patch_lpips", "osim_patch_clip"),  # OSIM's Bbox-patch baselines
    *("ssim_3dgs", "ssim_nerfbaselines", "lpips_vgg", "lpips_3dgs"),  # the published protocols' variants
)
START, END = "<!-- options-table:start -->", "<!-- options-table:end -->"


def _value(flag: OptionFlag) -> str:
    opt = flag.option
    allowed = opt.allowed()
    if allowed is not None:
        return "one of " + ", ".join(f"`{v}`" for v in allowed)
    text = opt.type_text
    if opt.low is not None and opt.high is not None:
        text += f" in [{opt.low:g}, {opt.high:g}]"
    elif opt.low is not None:
        text += f" >= {opt.low:g}"
    elif opt.high is not None:
        text += f" <= {opt.high:g}"
    return text


def render_table(names: tuple[str, ...] = BUILTINS) -> str:
    rows = [
        "| flag (nerfstudio field) | metrics | value | default | changes scores | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for flag in option_flags(names):
        opt = flag.option
        name = "--" + flag.name.replace("_", "-")
        default = "—" if opt.default is None else f"`{opt.default}`"
        rows.append(
            f"| `{name}` (`{flag.name}`) | {', '.join(flag.metrics)} | {_value(flag)} | {default} | "
            f"{'yes' if opt.scores else 'no'} | {opt.help}{' (required)' if opt.required else ''} |"
        )
    return "\n".join(rows)


def _documented() -> str:
    text = DOCS.read_text()
    return text[text.index(START) + len(START) : text.index(END)].strip()


def test_docs_table_is_the_schemas() -> None:
    expected = render_table()
    assert _documented() == expected, f"docs/eval.md's table of options is out of date; paste:\n{expected}"


def test_every_eval_flag_comes_from_a_schema() -> None:
    parser = argparse.ArgumentParser(prog="scenemetrics")
    eval_cli.register(parser.add_subparsers())
    sub = parser._subparsers._group_actions[0].choices["eval"]  # the `eval` parser
    families = r"--(lpips|puzzlesim|osim|prism|ssim-map|inception|clip|dino)-"
    flags = {s for a in sub._actions for s in a.option_strings if re.match(families, s)}
    derived = {"--" + f.name.replace("_", "-") for f in option_flags()}
    # the built-in families' flags (a plugin that another test loaded adds its own to the registry)
    assert flags == {flag for flag in derived if re.match(families, flag)}
    # every option of every built-in metric has its flag; a family's flag sets all its metrics that declare the key
    for name in metric_names():
        adapter = get_metric(name)
        if name in BUILTINS or adapter.family in ("inception", "clip", "dino"):  # the built-ins and the baselines
            for key in adapter.option_keys:
                assert adapter.flag(key) in derived, (name, key)
    args = parser.parse_args(["eval", "--out", "o", "--prism-model", "m", "--puzzlesim-layers", "2,3"])
    options = eval_cli.options_from_args(args)
    assert options["prism"]["model"] == options["prism_mmd"]["model"] == "m"
    assert options["puzzlesim"]["layers"] == [2, 3]


@pytest.mark.nerfstudio
def test_nerfstudio_fields_come_from_the_schemas() -> None:
    import dataclasses

    from scenemetrics.callbacks.nerfstudio import SceneMetricsNerfstudioConfig

    fields = {f.name for f in dataclasses.fields(SceneMetricsNerfstudioConfig)}
    derived = {f.name for f in option_flags()}
    own = {"metrics", "every_n_steps", "num_eval_views", "max_reference_views", "max_image_side", "log_maps",
           "max_logged_images", "map_colormap", "prefix", "eval_at_start", "metric_options", "panel_map", "map_range",
           "strip_steps", "background", "max_pending"}  # fmt: skip
    assert own <= fields and fields - own <= derived  # every other field comes from a schema
    # every built-in family's option is a field (a plugin another test loaded may add its own, before or after the
    # config class was built)
    builtin = re.compile(r"(lpips|puzzlesim|osim|prism|ssim_map|inception|clip|dino)_")
    assert {f for f in fields - own if builtin.match(f)} == {f for f in derived if builtin.match(f)}


if __name__ == "__main__":  # pragma: no cover
    print(render_table())
