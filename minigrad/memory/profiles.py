"""Profiles of consumer GPUs: the budgets ``minigrad.memory`` simulates on the CPU.

A profile holds what decides whether a training step fits and how fast it can
go: memory, memory bandwidth, FP32 and FP16 arithmetic throughput, tensor
cores, compute capability, the memory the CUDA context itself takes
before the first tensor is allocated, and the PCIe link to the host (what
offloading activations to host memory pays, chapter 10).

Sources (figures as published by NVIDIA for the reference boards; partner
cards may clock differently):

- memory size and bus, bandwidth, CUDA cores and boost clock: the
  "specifications" pages of each product, e.g. "NVIDIA GeForce GTX 1050
  specifications", "NVIDIA GeForce MX150 specifications", "NVIDIA GeForce
  GTX 1650 specifications", "NVIDIA GeForce RTX 3060 family specifications",
  "NVIDIA GeForce RTX 4060 family specifications", and the "NVIDIA T4 Tensor
  Core GPU datasheet";
- FP32 TFLOPS = CUDA cores x 2 (a fused multiply-add) x boost clock;
- FP16 TFLOPS is plain half-precision arithmetic on the CUDA cores: 1/64 of
  FP32 on consumer Pascal (compute capability 6.1: 2 against 128 results per
  clock per multiprocessor in the CUDA C++ Programming Guide's "throughput of
  native arithmetic instructions" table), 2x FP32 on Turing and 1x on Ampere
  GA10x and Ada ("peak FP16 TFLOPS (non-Tensor)" in the "NVIDIA Turing GPU
  architecture", "NVIDIA Ampere GA102 GPU architecture" and "NVIDIA Ada GPU
  architecture" whitepapers). It is *non-tensor* throughput, and the table
  labels it so;
- FP16 tensor TFLOPS: what the tensor cores reach on FP16 matrix products
  (dense, FP32 accumulate), shown only where NVIDIA publishes the figure for
  that very board. The T4: 65 TFLOPS, "Mixed Precision (FP16/FP32)" in the
  "NVIDIA T4 Tensor Core GPU datasheet". The RTX 3050, 3060 and 4060 have
  tensor cores, but "—": the whitepapers' tables list only the top boards
  (the GA102 whitepaper the RTX 3090, 3080 and 3070, the Ada whitepaper the
  RTX 4090 and 4080), the product pages quote "AI TOPS" (with sparsity, in
  other formats), and the third-party figures disagree with each other
  (dense against sparse), so no figure for them could be checked against
  NVIDIA's own documents. Cards without tensor cores show "none";
- tensor cores: 4 per multiprocessor from Turing on (same whitepapers; Pascal
  and the TU117 of the GTX 1650 have none), compute capability: NVIDIA's "CUDA GPUs - compute capability"
  table;
- PCIe link: generation and lanes, and its theoretical rate per direction,
  lanes x 8 GT/s x 128/130 / 8 bits = 0.985 GB/s per lane for PCIe 3.0 and
  twice that (16 GT/s) for PCIe 4.0 (the PCI-SIG's "PCI Express Base
  Specification" 3.0 and 4.0: 8 and 16 GT/s, 128b/130b encoding): 15.75 GB/s
  for 3.0 x16 or 4.0 x8, 31.5 GB/s for 4.0 x16, 3.94 GB/s for 3.0 x4. The
  generation is on each product's specifications page ("Bus support"); the
  lanes: x16 for the GTX 1050, 1050 Ti, 1650 and RTX 3060 (their GP107,
  TU117 and GA106 boards, as listed in the TechPowerUp GPU database), x8 for
  the RTX 3050 (8 GB) and RTX 4060 (GA106/GA107 and AD107: "PCIe 4.0 x8" in
  the same database, which NVIDIA's partners' boards confirm), "x16 PCIe
  Gen3" in the T4 datasheet, and x4 for the MX150, a laptop chip wired with
  four PCIe 3.0 lanes in most laptops (Notebookcheck's "NVIDIA GeForce MX150"
  page). A measured copy reaches less: about 12-13 GB/s from pinned memory
  on PCIe 3.0 x16 (CUDA's ``bandwidthTest`` sample), and less again from
  pageable memory, which the driver stages through a pinned buffer; treat
  the figure as the link's ceiling;
- CUDA context: 287,047,680 bytes (about 274 MiB), the figure measured for a
  process's CUDA context with lazy module loading in PyTorch pull request
  #86509 ("Sets CUDA_MODULE_LOADING to LAZY when not set by the user"; the
  same process took 666,632,192 bytes with eager loading). It depends on the
  driver, the CUDA version and the libraries loaded, so treat it as the
  order of magnitude a learner loses before allocating anything.

Memory sizes are the marketed GB read as GiB (2 GB = 2 x 1024**3 bytes), the
size of the memory chips; ``nvidia-smi`` shows a little less on some boards
(a T4 with ECC enabled, for one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["GPUProfile", "PROFILES", "get_profile", "profiles_table", "pcie_gb_s", "CUDA_CONTEXT_BYTES"]

GiB = 1024**3
CUDA_CONTEXT_BYTES = 287_047_680  # PyTorch pull request #86509, lazy module loading
PCIE_LANE_GB_S = {"3.0": 8 * 128 / 130 / 8, "4.0": 16 * 128 / 130 / 8}  # GB/s per lane and direction


def pcie_gb_s(link: str) -> float:
    """A PCIe link's theoretical rate per direction in GB/s: ``"3.0 x16"`` -> 15.75."""
    generation, _, lanes = link.partition(" x")
    if generation not in PCIE_LANE_GB_S or not lanes.isdigit() or int(lanes) not in (1, 2, 4, 8, 16):
        raise ValueError(f"pcie_gb_s: expected a link such as '3.0 x16' (generation {' or '.join(PCIE_LANE_GB_S)}, "
                         f"1, 2, 4, 8 or 16 lanes), got {link!r}")
    return round(PCIE_LANE_GB_S[generation] * int(lanes), 2)


@dataclass(frozen=True)
class GPUProfile:
    """One card. ``usable_bytes`` = memory left for tensors once the CUDA context is created."""

    name: str
    short_name: str
    memory_bytes: int
    bandwidth_gb_s: float
    fp32_tflops: float
    fp16_tflops: float
    tensor_cores: int
    compute_capability: tuple[int, int]
    context_bytes: int = CUDA_CONTEXT_BYTES
    tensor_fp16_tflops: float | None = None  # FP16 tensor-core TFLOPS (dense, FP32 accumulate), where NVIDIA publishes it
    pcie_link: str | None = None  # e.g. "3.0 x16": PCIe generation and lanes
    pcie_gb_s: float | None = None  # the link's theoretical GB/s per direction (host <-> card copies)

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "context_bytes"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError(f"GPUProfile {self.short_name!r}: {name} must be a number of bytes, "
                                f"got {type(value).__name__} {value!r}")
            if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
                raise ValueError(f"GPUProfile {self.short_name!r}: {name} must be a whole number of bytes, got {value!r}"
                                 f" (e.g. int(2.5 * 2**30))")
            if value < 0:
                raise ValueError(f"GPUProfile {self.short_name!r}: {name} must be >= 0, got {value!r}")
            object.__setattr__(self, name, int(value))  # 2e9 or np.int64(2**31): an exact Python int
        link = self.pcie_gb_s
        if link is not None and (isinstance(link, (bool, np.bool_)) or not isinstance(link, (int, float, np.number))
                                 or not math.isfinite(link) or link <= 0):
            raise ValueError(f"GPUProfile {self.short_name!r}: pcie_gb_s must be a positive number of GB/s "
                             f"(e.g. 15.75 for PCIe 3.0 x16) or None, got {link!r}")

    @property
    def usable_bytes(self) -> int:
        return self.memory_bytes - self.context_bytes

    def __str__(self) -> str:
        major, minor = self.compute_capability
        return (f"{self.name} ({self.short_name}): {self.memory_bytes / GiB:g} GiB, {self.bandwidth_gb_s:g} GB/s, "
                f"FP32 {self.fp32_tflops:g} TFLOPS, FP16 {self.fp16_tflops:g} TFLOPS, "
                f"{self.tensor_cores} tensor cores, compute capability {major}.{minor}"
                + ("" if self.pcie_gb_s is None else
                   f", PCIe {self.pcie_link + ' ' if self.pcie_link else ''}{self.pcie_gb_s:g} GB/s per direction"))


def _profile(name, short, gib, bandwidth, cores, boost_mhz, fp16_ratio, tensor_cores, cc, link, tensor_fp16=None):
    fp32 = cores * 2 * boost_mhz * 1e6 / 1e12  # one fused multiply-add per core per clock
    return GPUProfile(name, short, gib * GiB, bandwidth, round(fp32, 3), round(fp32 * fp16_ratio, 4), tensor_cores, cc,
                      tensor_fp16_tflops=tensor_fp16, pcie_link=link, pcie_gb_s=pcie_gb_s(link))


PROFILES: dict[str, GPUProfile] = {p.short_name: p for p in [
    # name, short name, GiB, GB/s, CUDA cores, boost MHz, FP16:FP32, tensor cores, compute capability, PCIe link
    _profile("NVIDIA GeForce MX150", "mx150", 2, 48.0, 384, 1532, 1 / 64, 0, (6, 1), "3.0 x4"),       # 64-bit GDDR5, 6 Gbps
    _profile("NVIDIA GeForce GTX 1050", "gtx1050", 2, 112.0, 640, 1455, 1 / 64, 0, (6, 1), "3.0 x16"),  # 128-bit GDDR5, 7 Gbps
    _profile("NVIDIA GeForce GTX 1050 Ti", "gtx1050ti", 4, 112.0, 768, 1392, 1 / 64, 0, (6, 1), "3.0 x16"),
    _profile("NVIDIA GeForce GTX 1650", "gtx1650", 4, 128.0, 896, 1665, 2, 0, (7, 5), "3.0 x16"),      # 128-bit GDDR5, 8 Gbps
    _profile("NVIDIA GeForce RTX 3050", "rtx3050", 8, 224.0, 2560, 1777, 1, 80, (8, 6), "4.0 x8"),     # 128-bit GDDR6, 14 Gbps
    _profile("NVIDIA GeForce RTX 3060", "rtx3060", 12, 360.0, 3584, 1777, 1, 112, (8, 6), "4.0 x16"),  # 192-bit GDDR6, 15 Gbps
    _profile("NVIDIA GeForce RTX 4060", "rtx4060", 8, 272.0, 3072, 2460, 1, 96, (8, 9), "4.0 x8"),     # 128-bit GDDR6, 17 Gbps
    _profile("NVIDIA T4", "t4", 16, 320.0, 2560, 1590, 2, 320, (7, 5), "3.0 x16", 65.0),  # 256-bit GDDR6; T4 datasheet
]}


def _tensor_cell(profile: GPUProfile) -> str:
    if profile.tensor_cores == 0:
        return "none"
    return "—" if profile.tensor_fp16_tflops is None else f"{profile.tensor_fp16_tflops:g}"


def _normalise(name: str) -> str:
    text = name.lower()
    for prefix in ("nvidia", "geforce", "tesla"):
        text = text.replace(prefix, "")
    return "".join(ch for ch in text if ch.isalnum())


def get_profile(name) -> GPUProfile:
    """The profile called ``name``: a short name ("gtx1050"), a full name ("GeForce GTX 1050") or a profile."""
    if isinstance(name, GPUProfile):
        return name
    if not isinstance(name, str):
        raise TypeError(f"get_profile: expected a GPU name such as 'gtx1050', got {type(name).__name__} {name!r}")
    key = _normalise(name)
    for profile in PROFILES.values():
        if key in (profile.short_name, _normalise(profile.name)):
            return profile
    raise ValueError(f"get_profile: unknown GPU {name!r}; known profiles: {', '.join(PROFILES)} "
                     f"(or build your own GPUProfile(...) and pass it)")


def profiles_table(profiles=None, pcie: bool = False) -> str:
    """The profiles as a text table, one card per row (``minigrad memory devices`` prints it).

    ``pcie=True`` adds two columns: the PCIe link and its GB/s per direction (chapter 10's offloading).
    """
    profiles = list(PROFILES.values()) if profiles is None else [get_profile(p) for p in profiles]
    header = ("name", "GPU", "memory", "usable", "GB/s", "FP32 TFLOPS", "FP16 non-tensor", "FP16 tensor",
              "tensor cores", "CC") + (("PCIe", "PCIe GB/s") if pcie else ())
    rows = [(p.short_name, p.name.replace("NVIDIA ", ""), f"{p.memory_bytes / GiB:g} GiB",
             f"{p.usable_bytes / GiB:.2f} GiB", f"{p.bandwidth_gb_s:g}", f"{p.fp32_tflops:.2f}",
             f"{p.fp16_tflops:.2f}" if p.fp16_tflops >= 1 else f"{p.fp16_tflops:.4f}", _tensor_cell(p),
             str(p.tensor_cores), "%d.%d" % p.compute_capability)
            + ((p.pcie_link or "?", "?" if p.pcie_gb_s is None else f"{p.pcie_gb_s:g}") if pcie else ())
            for p in profiles]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if i < 2 else cell.rjust(width) for i, (cell, width) in
                       enumerate(zip(row, widths))).rstrip() for row in [header, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    lines.append(f"usable = memory - the CUDA context ({CUDA_CONTEXT_BYTES / 2**20:.0f} MiB, see minigrad.memory.profiles)")
    lines.append("FP16 in TFLOPS: non-tensor = on the CUDA cores; tensor = FP16 matrix products on the tensor cores "
                 "(dense, FP32 accumulate) as NVIDIA publishes them (T4 datasheet); '—': the card has tensor cores "
                 "but NVIDIA publishes no such figure for it; 'none': no tensor cores")
    if pcie:
        lines.append("PCIe GB/s: the link's theoretical rate per direction (a pinned copy reaches about 80 % of it); "
                     "'?': not given for this profile")
    return "\n".join(lines)
