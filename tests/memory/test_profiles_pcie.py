"""Each card's PCIe link: generation and lanes, the theoretical rate per direction, shown on request."""

import math

import pytest

from minigrad.memory.profiles import PROFILES, GPUProfile, pcie_gb_s, profiles_table

LINKS = {"mx150": "3.0 x4", "gtx1050": "3.0 x16", "gtx1050ti": "3.0 x16", "gtx1650": "3.0 x16",
         "rtx3050": "4.0 x8", "rtx3060": "4.0 x16", "rtx4060": "4.0 x8", "t4": "3.0 x16"}


def test_every_card_has_its_link_and_rate():
    assert set(LINKS) == set(PROFILES)
    for short, link in LINKS.items():
        assert PROFILES[short].pcie_link == link
    assert PROFILES["gtx1050"].pcie_gb_s == pytest.approx(15.75, abs=0.01)  # 16 lanes x 8 GT/s x 128/130 / 8
    assert PROFILES["mx150"].pcie_gb_s == pytest.approx(3.94, abs=0.01)
    assert PROFILES["rtx3060"].pcie_gb_s == pytest.approx(31.5, abs=0.02)
    assert PROFILES["rtx4060"].pcie_gb_s == PROFILES["gtx1050"].pcie_gb_s  # 4.0 x8 = 3.0 x16


def test_link_rate_from_its_name_and_bad_links():
    assert pcie_gb_s("4.0 x16") == pytest.approx(2 * pcie_gb_s("3.0 x16"), abs=0.02)
    assert pcie_gb_s("3.0 x16") == pytest.approx(4 * pcie_gb_s("3.0 x4"), abs=0.01)
    for bad in ("5.0 x16", "3.0 x3", "3.0", "x16", "3.0 x16 "):
        with pytest.raises(ValueError, match="pcie_gb_s: expected a link such as '3.0 x16'"):
            pcie_gb_s(bad)


def test_custom_profiles_may_leave_it_out_but_not_give_nonsense():
    plain = GPUProfile("My card", "mine", 2**31, 100.0, 1.0, 1.0, 0, (6, 1))
    assert plain.pcie_gb_s is None and "PCIe" not in str(plain)
    assert "PCIe 12 GB/s" in str(GPUProfile("My card", "mine", 2**31, 100.0, 1.0, 1.0, 0, (6, 1), pcie_gb_s=12.0))
    for bad in (0, -1.0, math.nan, math.inf, True, "16"):
        with pytest.raises(ValueError, match="pcie_gb_s must be a positive number of GB/s"):
            GPUProfile("x", "x", 2**31, 1.0, 1.0, 1.0, 0, (6, 1), pcie_gb_s=bad)


def test_the_table_shows_the_link_on_request_only():
    assert "PCIe" not in profiles_table().splitlines()[0]  # chapter 08 prints the table as it was
    lines = profiles_table(["gtx1050", "rtx3060"], pcie=True).splitlines()
    assert lines[0].split()[-2:] == ["PCIe", "GB/s"]
    assert lines[2].endswith("3.0 x16      15.75") and lines[3].endswith("4.0 x16      31.51")
    assert "theoretical rate per direction" in lines[-1]
    assert "PCIe 4.0 x16 31.51 GB/s per direction" in str(PROFILES["rtx3060"])
