"""`make test-cpus` skips only the variant that is this machine's own CPU path
(tools/cpu_paths.py), which `make test`'s strict nbval has already run."""

from __future__ import annotations

import re

import pytest

from tools.cpu_paths import is_native, variant_path
from tools.site import ROOT


def makefile_variants() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    block = re.search(r"^CPU_VARIANTS := \\\n((?:  .*\n)+)", text, re.M).group(1)
    avx512 = re.search(r'^AVX512_VARIANT := "(.*)"', text, re.M).group(1)
    return [*re.findall(r'"([^"]+)"', block), avx512]


def test_the_makefile_forces_three_paths():
    assert [variant_path(v) for v in makefile_variants()] == [
        ("default", 1),
        ("avx2", 4),
        ("avx512", 2),
    ]


@pytest.mark.parametrize(
    ("native", "skipped"),
    [
        (("avx512", 2), ["avx512"]),  # a 2-core AVX-512 machine (CI's): nbval ran that path
        (("avx512", 4), []),  # more cores: a different thread count, so it runs
        (("avx2", 2), []),  # no AVX-512: the AVX-512 variant is not even tried
        (("avx2", 4), ["avx2"]),
        (("default", 1), ["default"]),
    ],
)
def test_only_the_native_path_is_skipped(native, skipped):
    variants = makefile_variants()
    assert [variant_path(v)[0] for v in variants if is_native(v, native)] == skipped
