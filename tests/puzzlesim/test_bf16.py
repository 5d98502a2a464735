"""The bf16 decision: from CPU capabilities (no multi-second probe), forced by argument or SCENEMETRICS_BF16, and
cached per machine in ``$SCENEMETRICS_HOME/puzzlesim/bf16.json``."""

from __future__ import annotations

import json
import time

import pytest
import torch

from scenemetrics.puzzlesim import PuzzleSimMemory
from scenemetrics.puzzlesim import bf16 as B
from scenemetrics.puzzlesim import search as S

from .naive import smooth_images

X86_PLAIN = {
    "arch": "x86_64",
    "model": "AMD EPYC",
    "avx512_bf16": False,
    "amx_bf16": False,
    "arm_bf16": None,
    "torch_capability": "AVX2",
}
X86_BF16 = {**X86_PLAIN, "model": "Intel Xeon", "avx512_bf16": True, "amx_bf16": True, "torch_capability": "AVX512"}
ARM = {
    "arch": "aarch64",
    "model": "Neoverse",
    "avx512_bf16": None,
    "amx_bf16": None,
    "arm_bf16": True,
    "torch_capability": "SVE256",
}


@pytest.fixture
def fresh(monkeypatch):
    """No process cache, no environment override; returns a list recording probe calls (probe mocked)."""
    monkeypatch.setattr(B, "_process_cache", {})
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    calls: list[int] = []
    result = {"speedup": 3.0, "max_error": 2.0**-9, "fast": True, "accurate": True, "shape": [1, 1, 1]}

    def probe(*args, **kwargs):
        calls.append(1)
        return dict(result)

    monkeypatch.setattr(B, "probe_bf16_gemm", probe)
    calls_and_result = (calls, result)
    return calls_and_result


def use_caps(monkeypatch, caps):
    monkeypatch.setattr(B, "cpu_bf16_capabilities", lambda: dict(caps))


def test_x86_without_bf16_instructions_decides_without_probing(fresh, monkeypatch):
    calls, _ = fresh
    use_caps(monkeypatch, X86_PLAIN)
    d = B.bf16_decision()
    assert d["enabled"] is False and d["source"] == "capabilities" and d["mode"] == "auto"
    assert "AVX512-BF16" in d["reason"]
    assert calls == []


@pytest.mark.parametrize("caps", [X86_BF16, ARM], ids=["x86-bf16", "arm"])
@pytest.mark.parametrize(
    ("fast", "accurate", "enabled"), [(True, True, True), (False, True, False), (True, False, False)]
)
def test_capable_or_unknown_cpus_run_the_short_probe(fresh, monkeypatch, caps, fast, accurate, enabled):
    calls, result = fresh
    result.update(fast=fast, accurate=accurate, speedup=3.0 if fast else 0.8)
    use_caps(monkeypatch, caps)
    d = B.bf16_decision()
    assert calls == [1]
    assert d["enabled"] is enabled and d["source"] == "probe"
    assert d["fast"] is fast and d["accurate"] is accurate


def test_forcing_by_argument_and_environment(fresh, monkeypatch):
    calls, _ = fresh
    use_caps(monkeypatch, X86_PLAIN)
    assert B.bf16_decision("on")["enabled"] is True
    assert B.bf16_decision("off")["enabled"] is False
    monkeypatch.setenv("SCENEMETRICS_BF16", "on")
    assert B.bf16_decision()["enabled"] is True and B.bf16_decision()["source"] == "forced"
    assert B.bf16_decision("auto")["enabled"] is False  # the argument wins over the environment
    monkeypatch.setenv("SCENEMETRICS_BF16", "OFF ")
    use_caps(monkeypatch, X86_BF16)
    assert B.bf16_decision()["enabled"] is False
    assert calls == []  # forced answers never probe
    monkeypatch.setenv("SCENEMETRICS_BF16", "")
    monkeypatch.setattr(B, "_process_cache", {})
    assert B.bf16_decision()["enabled"] is True  # empty = auto
    assert calls == [1]


def test_bad_modes_raise(fresh, monkeypatch):
    with pytest.raises(ValueError, match="`mode`"):
        B.bf16_decision("yes")
    monkeypatch.setenv("SCENEMETRICS_BF16", "fast")
    with pytest.raises(ValueError, match=r"SCENEMETRICS_BF16.*'fast'"):
        B.bf16_decision()


def test_decision_is_written_to_and_read_from_the_cache_file(fresh, monkeypatch):
    calls, _ = fresh
    use_caps(monkeypatch, X86_BF16)
    first = B.bf16_decision()
    assert calls == [1] and first["source"] == "probe"
    data = json.loads(B.cache_path().read_text())
    (entry,) = data["machines"].values()
    assert entry["enabled"] is True and entry["cpu"] == "Intel Xeon"
    # a new process (empty process cache) reads the file and does not probe
    monkeypatch.setattr(B, "_process_cache", {})
    again = B.bf16_decision()
    assert calls == [1] and again["source"] == "cache" and again["enabled"] is True
    # another machine's entry is not used
    monkeypatch.setattr(B, "_process_cache", {})
    use_caps(monkeypatch, ARM)
    assert B.bf16_decision()["source"] == "probe" and calls == [1, 1]
    assert len(json.loads(B.cache_path().read_text())["machines"]) == 2


def test_cache_file_is_honoured_over_capabilities(fresh, monkeypatch):
    """An entry in the cache file wins: e.g. a user who measured that bf16 pays off on a CPU we would not enable."""
    calls, _ = fresh
    use_caps(monkeypatch, X86_PLAIN)
    key = B._fingerprint(X86_PLAIN)
    path = B.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "machines": {key: {"enabled": True, "reason": "measured by hand"}}}))
    d = B.bf16_decision()
    assert d["enabled"] is True and d["source"] == "cache" and d["reason"] == "measured by hand"
    assert B.bf16_decision(refresh=True)["enabled"] is False  # refresh decides again and rewrites the entry
    assert json.loads(path.read_text())["machines"][key]["enabled"] is False
    assert calls == []


@pytest.mark.parametrize("content", ["{not json", '{"format": 1, "machines": []}', '{"format": 99}', "[]"])
def test_a_broken_cache_file_is_replaced(fresh, monkeypatch, content):
    use_caps(monkeypatch, X86_PLAIN)
    path = B.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert B.bf16_decision()["source"] == "capabilities"
    assert next(iter(json.loads(path.read_text())["machines"].values()))["enabled"] is False


def test_an_unwritable_cache_does_not_fail(fresh, monkeypatch, tmp_path):
    use_caps(monkeypatch, X86_PLAIN)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SCENEMETRICS_HOME", str(blocker))  # a file where a folder is expected
    assert B.bf16_decision()["enabled"] is False


def test_the_process_cache_answers_repeated_calls(fresh, monkeypatch):
    calls, _ = fresh
    use_caps(monkeypatch, ARM)
    assert B.bf16_decision() is B.bf16_decision()
    assert calls == [1]


def test_real_capabilities_and_probe_are_quick():
    caps = B.cpu_bf16_capabilities()
    assert {"arch", "model", "avx512_bf16", "amx_bf16", "arm_bf16", "torch_capability"} <= set(caps)
    t0 = time.perf_counter()
    probe = B.probe_bf16_gemm(shape=(64, 256, 512), repeats=2)
    assert time.perf_counter() - t0 < 5.0  # milliseconds on an idle machine; seconds only under heavy load
    assert probe["fast"] == (probe["speedup"] >= 1.5)
    if probe["max_error"] is not None:
        assert probe["accurate"] == (probe["max_error"] <= 2.0**-6)
    else:  # the pre-check found bf16 slower than fp32
        assert probe["speedup"] < 1.0 and probe["fast"] is False


def test_first_map_does_not_time_large_gemms(fresh, monkeypatch, squeeze_ckpt):
    """The decision runs inside the first search; on a CPU without bf16 instructions it costs no probe at all."""
    calls, _ = fresh
    use_caps(monkeypatch, X86_PLAIN)
    memory = PuzzleSimMemory(smooth_images(6, 128, 128, seed=1), weights_path=squeeze_ckpt)
    assert memory.features(2).shape[0] >= 4 * S.BLOCK  # large enough for a pruned search
    used = []
    real = S.screened_max
    monkeypatch.setattr(S, "screened_max", lambda *a, **k: used.append(1) or real(*a, **k))
    memory.similarity_map(smooth_images(1, 40, 40, seed=2))
    assert calls == [] and used == []
    monkeypatch.setenv("SCENEMETRICS_BF16", "on")
    on = memory.similarity_map(smooth_images(1, 40, 40, seed=2))
    assert used and calls == []
    monkeypatch.setenv("SCENEMETRICS_BF16", "off")
    off = memory.similarity_map(smooth_images(1, 40, 40, seed=2))
    torch.testing.assert_close(on, off, atol=1e-6, rtol=0)
