"""The package builds and installs offline (pip --no-build-isolation, as on
a machine without a package index), with its entry point and boot file."""
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import PROBE


def _need(*mods):
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip("needs %s (Debian: python3-pip python3-setuptools python3-wheel)" % ", ".join(missing))


@pytest.fixture
def src(tmp_path):
    """A copy of the package sources: pip builds in the source tree, which
    must stay clean."""
    d = tmp_path / "src"
    d.mkdir()
    for n in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(PROBE, n), str(d / n))
    shutil.copytree(os.path.join(PROBE, "gpufrag_probe"), str(d / "gpufrag_probe"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return d


def pip(*args, cwd=None, python=sys.executable):
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([python, "-m", "pip"] + list(args), env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_wheel(src, tmp_path):
    _need("pip", "setuptools", "wheel")
    out = tmp_path / "wheels"
    pip("wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(out), str(src))
    (whl,) = os.listdir(str(out))
    assert whl == "gpufrag_probe-0.1.0-py3-none-any.whl"  # pure Python
    with zipfile.ZipFile(str(out / whl)) as z:
        names = set(z.namelist())
        eps = z.read("gpufrag_probe-0.1.0.dist-info/entry_points.txt").decode()
        meta = z.read("gpufrag_probe-0.1.0.dist-info/METADATA").decode()
    assert {"gpufrag_probe/__init__.py", "gpufrag_probe/vllm_plugin.py",
            "gpufrag_probe/_boot/sitecustomize.py"} <= names
    assert not [n for n in names if "tests" in n or n.endswith(".go")]
    assert "[vllm.general_plugins]\ngpufrag_probe = gpufrag_probe.vllm_plugin:register" in eps
    assert "gpufrag-probe = gpufrag_probe.__main__:main" in eps
    assert "Requires-Python: >=3.9" in meta and "Requires-Dist" not in meta


def test_venv_install_without_index(src, tmp_path):
    _need("pip", "setuptools", "venv")
    venv = tmp_path / "venv"
    # The system's pip and setuptools serve the venv (no ensurepip, no index).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    py = str(venv / "bin" / "python")
    pip("install", "-q", "--no-build-isolation", str(src), python=py)
    code = ("import importlib.metadata as m, gpufrag_probe, sys\n"
            "eps = [e.value for e in m.entry_points().get('vllm.general_plugins', [])] "
            "if sys.version_info < (3, 10) else "
            "[e.value for e in m.entry_points(group='vllm.general_plugins')]\n"
            "print(eps, gpufrag_probe.__file__)\n")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "['gpufrag_probe.vllm_plugin:register']" in r.stdout and str(venv) in r.stdout
    # The installed `run` wrapper boots the installed copy in the command.
    check = "import sys; print('gpufrag_probe' in sys.modules, sys.modules['gpufrag_probe'].__file__)"
    r = subprocess.run([str(venv / "bin" / "gpufrag-probe"), "run", "--dir", str(tmp_path / "d"), "--",
                        py, "-c", check], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("True " + str(venv)), r.stdout
