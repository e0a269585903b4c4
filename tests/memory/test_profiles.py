"""The GPU profiles: every required card, consistent figures, lookup by name with a clear error."""

import pytest

from minigrad.memory.profiles import CUDA_CONTEXT_BYTES, PROFILES, GPUProfile, get_profile, profiles_table

GiB = 1024**3

REQUIRED = {  # short name: (GiB, compute capability, has tensor cores)
    "gtx1050": (2, (6, 1), False), "mx150": (2, (6, 1), False), "gtx1050ti": (4, (6, 1), False),
    "gtx1650": (4, (7, 5), False), "rtx3050": (8, (8, 6), True), "rtx3060": (12, (8, 6), True),
    "rtx4060": (8, (8, 9), True), "t4": (16, (7, 5), True),
}


@pytest.mark.parametrize("short", list(REQUIRED))
def test_required_cards_have_their_memory_and_architecture(short):
    gib, capability, tensor_cores = REQUIRED[short]
    profile = PROFILES[short]
    assert profile.memory_bytes == gib * GiB
    assert profile.compute_capability == capability
    assert (profile.tensor_cores > 0) == tensor_cores
    assert profile.usable_bytes == profile.memory_bytes - profile.context_bytes > 0
    assert profile.bandwidth_gb_s > 0 and profile.fp32_tflops > 0 and profile.fp16_tflops > 0


def test_figures_follow_the_published_ratios():
    assert PROFILES["gtx1050"].fp32_tflops == pytest.approx(1.862, abs=0.001)  # 640 cores x 2 x 1455 MHz
    assert PROFILES["rtx3060"].fp32_tflops == pytest.approx(12.74, abs=0.01)
    assert PROFILES["t4"].fp32_tflops == pytest.approx(8.1, abs=0.05)
    for profile in PROFILES.values():
        major = profile.compute_capability[0]
        ratio = profile.fp16_tflops / profile.fp32_tflops
        expected = 1 / 64 if major == 6 else 2 if profile.compute_capability == (7, 5) else 1
        assert ratio == pytest.approx(expected, rel=0.01), profile.short_name
    assert all(p.context_bytes == CUDA_CONTEXT_BYTES for p in PROFILES.values())


@pytest.mark.parametrize("name", ["gtx1050", "GTX 1050", "NVIDIA GeForce GTX 1050", "geforce gtx-1050"])
def test_lookup_by_short_or_full_name(name):
    assert get_profile(name) is PROFILES["gtx1050"]


def test_lookup_keeps_ti_apart_and_accepts_a_profile():
    assert get_profile("GTX 1050 Ti") is PROFILES["gtx1050ti"]
    custom = GPUProfile("My card", "mine", 3 * GiB, 100.0, 1.0, 1.0, 0, (6, 1))
    assert get_profile(custom) is custom


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown GPU 'gtx9999'") as info:
        get_profile("gtx9999")
    assert all(short in str(info.value) for short in REQUIRED)
    with pytest.raises(TypeError, match="expected a GPU name"):
        get_profile(1050)


def test_profile_prints_its_figures():
    text = str(PROFILES["rtx3060"])
    assert "RTX 3060" in text and "12 GiB" in text and "360 GB/s" in text and "compute capability 8.6" in text


def test_the_table_has_a_row_per_card():
    lines = profiles_table().splitlines()
    assert lines[0].split()[:3] == ["name", "GPU", "memory"]
    rows = {line.split()[0]: line for line in lines[2:2 + len(PROFILES)]}
    assert set(rows) == set(PROFILES)
    assert "GTX 1050 Ti" in rows["gtx1050ti"] and "4 GiB" in rows["gtx1050ti"] and rows["t4"].endswith("7.5")
    assert len(profiles_table(["t4", "mx150"]).splitlines()) == 2 + 2 + 2  # header, rule, rows, two notes
    # the FP16 column is the CUDA cores' rate; the tensor cores' rate stands beside it where NVIDIA publishes one
    assert "FP16 non-tensor" in lines[0] and "FP16 tensor" in lines[0]
    assert rows["t4"].split()[-3] == "65" and rows["rtx3060"].split()[-3] == "—" and rows["gtx1050"].split()[-3] == "none"
