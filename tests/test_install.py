"""`make install` on Linux finds torch's +cpu wheel by itself and keeps the
package indexes the reader's pip is configured with (a mirror or a proxy).

The lock pins ``torch==2.13.0+cpu`` on Linux, a build that only PyTorch's own
index carries. The Makefile installs the lock's torch first, alone, with that
index on pip's command line as ``--find-links`` (PIP_LOCK_FLAGS), which pip
adds to what its configuration names; the old advice, ``PIP_EXTRA_INDEX_URL=...``, replaced the configured
extra indexes, and failed on a machine whose pip was set up with a mirror.
Checked here offline: two made-up wheels, one on a mirror that a pip.conf
names, one at the links the Makefile passes, must both be found.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools.site import ROOT

LOCKS = ["requirements.txt", "tools/requirements-colab.txt", "tools/requirements-otter.txt"]
STAMPS = [".venv/.installed", ".venv-colab/.installed", ".venv-otter/.installed"]


def make_wheel(folder: Path, name: str, version: str = "1.0") -> Path:
    """A minimal pure-Python wheel of ``name`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    module = name.replace("-", "_")
    path = folder / f"{module}-{version}-py3-none-any.whl"
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{module}/__init__.py", "")
        wheel.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def install_commands(**variables: str) -> list[str]:
    """The pip commands `make install` (and the two other environments) would run."""
    overrides = [f"{key}={value}" for key, value in variables.items()]
    result = subprocess.run(
        ["make", "-n", "-B", *overrides, *STAMPS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in ("ATTNBOOK_TIMES", "PIP_FIND_LINKS")},
        check=True,
    )
    return [line for line in result.stdout.splitlines() if "pip install" in line and " -r " in line]


@pytest.mark.skipif(platform.system() != "Linux", reason="the +cpu wheels are Linux's")
def test_each_lock_is_installed_with_pytorchs_links_and_no_replaced_index():
    commands = install_commands()
    assert len(commands) == 2 * len(LOCKS)
    for lock, torch_line, lock_line in zip(LOCKS, commands[::2], commands[1::2]):
        # torch alone first, with PyTorch's links: pip asks them about torch only.
        assert torch_line.startswith(f"grep '^torch==' {lock} | ")
        assert "--no-deps --find-links https://download.pytorch.org/whl/cpu/torch/" in torch_line
        # Then the whole lock, with pip's own configuration alone.
        assert lock_line.endswith(f"-r {lock}") and "--find-links" not in lock_line
        for line in (torch_line, lock_line):
            assert "index-url" not in line.lower()  # nothing replaces pip's own indexes
    assert len(install_commands(TORCH_CPU_LINKS="")) == len(LOCKS)  # no torch step
    # A machine whose pip has a folder of wheels (no route to PyTorch's index):
    # that folder, not an index that pip would wait for in vain.
    offline = install_commands(PIP_FIND_LINKS="/srv/wheels")
    assert all("--find-links /srv/wheels -r /dev/stdin" in c for c in offline[::2]), offline


def pip_download(tmp_path: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = str(config)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "-d",
            str(tmp_path / "got"),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("configured", ["mirror", "none"])
def test_the_links_add_to_the_index_pip_is_configured_with(tmp_path, configured):
    links = tmp_path / "torch-links"
    make_wheel(links, "attnbook-probe-torch")  # stands for torch==2.13.0+cpu
    wanted = ["attnbook-probe-torch"]
    if configured == "mirror":
        # A mirror in PEP 503's layout, named by the reader's pip.conf.
        project = tmp_path / "mirror" / "simple" / "attnbook-probe-mirror"
        wheel = make_wheel(project, "attnbook-probe-mirror").name
        (project / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n')
        config = tmp_path / "pip.conf"
        config.write_text(f"[global]\nindex-url = {(tmp_path / 'mirror' / 'simple').as_uri()}\n")
        wanted.append("attnbook-probe-mirror")
    else:
        config = Path(os.devnull)  # no configuration at all
    (flags,) = {
        re.search(r"--find-links \S+", c).group(0)
        for c in install_commands(TORCH_CPU_LINKS=str(links))[::2]  # the torch steps
    }
    result = pip_download(tmp_path, config, *flags.split(), *wanted)
    assert result.returncode == 0, result.stdout + result.stderr
    got = sorted(p.name.split("-")[0] for p in (tmp_path / "got").iterdir())
    assert got == sorted(name.replace("-", "_") for name in wanted)
