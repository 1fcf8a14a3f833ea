"""Which forced CPU path of `make test-cpus` is this machine's own?

`make test-cpus` runs strict nbval again under each CPU code path in
CPU_VARIANTS (Makefile): ``ATEN_CPU_CAPABILITY`` picks PyTorch's kernels,
``MKL_ENABLE_INSTRUCTIONS`` caps MKL's (a cap, never a promotion) and
``OMP_NUM_THREADS`` the threads. A variant whose capability and thread count
are the ones PyTorch picks here unforced is the path `make test`'s nbval
already ran (on a 2-core AVX-512 machine, the AVX-512 variant with 2 threads;
its MKL cap is then the CPU's own top): running it again checks nothing new.

    python -m tools.cpu_paths is-native "ATEN_CPU_CAPABILITY=avx512 ... OMP_NUM_THREADS=2"

exits 0 and prints why when the variant is the native path, 1 when it is not.
"""

from __future__ import annotations

import sys


def native_path() -> tuple[str, int]:
    """(capability, threads) that PyTorch uses here when nothing is forced."""
    import torch

    return torch.backends.cpu.get_cpu_capability().lower(), torch.get_num_threads()


def variant_path(variant: str) -> tuple[str | None, int | None]:
    """(capability, threads) that a variant's ``NAME=value`` words force."""
    settings = dict(word.split("=", 1) for word in variant.split() if "=" in word)
    threads = settings.get("OMP_NUM_THREADS")
    capability = settings.get("ATEN_CPU_CAPABILITY")
    return (capability.lower() if capability else None, int(threads) if threads else None)


def is_native(variant: str, native: tuple[str, int]) -> bool:
    """Whether the variant forces exactly the native capability and thread count."""
    return variant_path(variant) == native


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "is-native":
        print(__doc__, file=sys.stderr)
        return 2
    native = native_path()
    if is_native(argv[2], native):
        print(
            f"it is this machine's native path ({native[0]}, {native[1]} threads), "
            "which make test's strict nbval ran"
        )
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
