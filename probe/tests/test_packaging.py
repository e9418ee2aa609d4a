"""The package builds and installs offline with its in-tree build backend
(_build/gpufrag_probe_build.py, standard library only): with pip, into a
venv that holds nothing (no pip, setuptools or wheel) of every CPython >= 3.9
found here, with and without build isolation, editable or not; and its
wheel, sdist and editable wheel are well-formed and reproducible."""
import base64
import glob
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from conftest import PROBE

sys.path.insert(0, os.path.join(PROBE, "_build"))
import gpufrag_probe_build as backend  # noqa: E402

WHEEL = "gpufrag_probe-0.1.0-py3-none-any.whl"
DIST_INFO = "gpufrag_probe-0.1.0.dist-info"


def _interpreters():
    """(version, path) of each CPython >= 3.9 with venv found here, one per
    minor version: $GPUFRAG_TEST_PYTHONS (paths separated by os.pathsep),
    else this one, python3.N on PATH and pyenv's versions."""
    given = os.environ.get("GPUFRAG_TEST_PYTHONS")
    if given:
        cands = given.split(os.pathsep)
    else:
        cands = [sys.executable] + [shutil.which("python3.%d" % m) for m in range(9, 20)]
        root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
        cands += sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")))
    found = {}
    for c in cands:
        if not c:
            continue
        try:
            # A pyenv shim of a version not selected exits non-zero.
            r = subprocess.run([c, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        v = r.stdout.strip()
        if r.returncode == 0 and tuple(int(x) for x in v.split(".")) >= (3, 9):
            found.setdefault(v, c)
    return sorted(found.items(), key=lambda kv: tuple(int(x) for x in kv[0].split(".")))


INTERPRETERS = _interpreters()


@pytest.fixture
def src(tmp_path):
    """A copy of the package sources: nothing may be written into the
    checkout."""
    d = tmp_path / "src"
    d.mkdir()
    for n in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(PROBE, n), str(d / n))
    for n in ("gpufrag_probe", "_build"):
        shutil.copytree(os.path.join(PROBE, n), str(d / n), ignore=shutil.ignore_patterns("__pycache__"))
    return d


def pip(*args, cwd=None, python=sys.executable):
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([python, "-m", "pip"] + list(args), env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _has(python, *mods):
    code = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))"
    return subprocess.run([python, "-c", code] + list(mods), timeout=60).returncode == 0


def _check_installed(venv, tmp_path, src_dir=None):
    """The venv imports the package and its vLLM entry point, and its
    gpufrag-probe script answers run --help; returns the package's file."""
    py = str(venv / "bin" / "python")
    code = ("import importlib.metadata as m, gpufrag_probe, sys\n"
            "eps = [e.value for e in m.entry_points().get('vllm.general_plugins', [])] "
            "if sys.version_info < (3, 10) else "
            "[e.value for e in m.entry_points(group='vllm.general_plugins')]\n"
            "print(eps, gpufrag_probe.__file__)\n")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "['gpufrag_probe.vllm_plugin:register']" in r.stdout, r.stdout
    assert str(src_dir or venv) in r.stdout, r.stdout
    r = subprocess.run([str(venv / "bin" / "gpufrag-probe"), "run", "--help"], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0 and "GPUFRAG_PROBE_INTERVAL" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("version,python", INTERPRETERS, ids=[v for v, _ in INTERPRETERS])
def test_installs_into_an_empty_venv_without_build_isolation(src, tmp_path, version, python):
    """The failure of issue 29: setuptools without wheel (or no setuptools,
    as in 3.12+) could not build the package with --no-build-isolation."""
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-c", "import importlib.util as u; print([m for m in ('pip', 'setuptools', 'wheel') "
                                  "if u.find_spec(m)])"], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "[]", r.stdout  # the build runs on the standard library alone
    # pip --python (pip >= 22.3) installs into a venv that has no pip.
    runner = python if _has(python, "pip") else sys.executable
    pip("--python", py, "install", "-q", "--no-build-isolation", "--no-deps", str(src), python=runner)
    _check_installed(venv, tmp_path)
    assert sorted(os.listdir(str(src))) == ["README.md", "_build", "gpufrag_probe", "pyproject.toml"]


def test_installs_with_build_isolation_and_editable(src, tmp_path):
    """With build isolation (pip's default) the build environment is empty
    (requires = []), so no index is asked; -e uses build_editable."""
    if not _has(sys.executable, "pip", "venv"):
        pytest.skip("needs pip and venv (Debian: python3-pip python3-venv)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    pip("--python", py, "install", "-q", "--no-deps", str(src))
    _check_installed(venv, tmp_path)
    pip("--python", py, "install", "-q", "--no-deps", "--force-reinstall", "-e", str(src))
    _check_installed(venv, tmp_path, src_dir=src)  # imported from the source tree


def test_venv_install_with_system_packages(src, tmp_path):
    """Where setuptools and wheel are installed (Debian's python3-wheel),
    the backend is still the one used, and the result the same."""
    if not _has(sys.executable, "pip", "venv"):
        pytest.skip("needs pip and venv (Debian: python3-pip python3-venv)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120)
    py = str(venv / "bin" / "python")
    pip("install", "-q", "--no-build-isolation", str(src), python=py)
    _check_installed(venv, tmp_path)
    # The installed `run` wrapper boots the installed copy in the command.
    check = "import sys; print('gpufrag_probe' in sys.modules, sys.modules['gpufrag_probe'].__file__)"
    r = subprocess.run([str(venv / "bin" / "gpufrag-probe"), "run", "--dir", str(tmp_path / "d"), "--",
                        py, "-c", check], capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("True " + str(venv)), r.stdout


def _read_wheel(path):
    with zipfile.ZipFile(str(path)) as z:
        return {i.filename: (z.read(i), i.date_time, i.external_attr) for i in z.infolist()}


def _build(hook, src, out):
    """Runs a hook of src's own backend in a fresh Python with src as the
    working directory, as pip does."""
    code = ("import sys; sys.path.insert(0, '_build'); import gpufrag_probe_build as b; "
            "print(b.%s(sys.argv[1]))" % hook)
    r = subprocess.run([sys.executable, "-c", code, str(out)], cwd=str(src), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, r.stderr
    return out / r.stdout.strip()


def test_wheel_is_complete_and_its_record_exact(src, tmp_path):
    out = tmp_path / "wheels"
    out.mkdir()
    whl = _build("build_wheel", src, out)
    assert whl.name == WHEEL and os.listdir(str(out)) == [WHEEL]  # pure Python, no temporary left
    files = _read_wheel(whl)
    package = sorted(os.path.relpath(os.path.join(d, n), str(src)).replace(os.sep, "/")
                     for d, _, ns in os.walk(str(src / "gpufrag_probe")) for n in ns)
    assert sorted(n for n in files if not n.startswith(DIST_INFO)) == package
    assert "gpufrag_probe/_boot/sitecustomize.py" in files
    for n in package:
        assert files[n][0] == (src / n).read_bytes()
    assert sorted(n for n in files if n.startswith(DIST_INFO)) == [
        DIST_INFO + "/" + n for n in ("METADATA", "RECORD", "WHEEL", "entry_points.txt")]
    # RECORD: every other file once, with its sha256 (urlsafe base64, no
    # padding) and size; itself without either.
    rows = [line.split(",") for line in files[DIST_INFO + "/RECORD"][0].decode().splitlines()]
    assert sorted(r[0] for r in rows) == sorted(files)
    for name, digest, size in rows:
        if name == DIST_INFO + "/RECORD":
            assert digest == size == ""
            continue
        data = files[name][0]
        assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
        assert int(size) == len(data)
    meta = files[DIST_INFO + "/METADATA"][0].decode()
    head, body = meta.split("\n\n", 1)
    assert head.splitlines()[:3] == ["Metadata-Version: 2.1", "Name: gpufrag-probe", "Version: 0.1.0"]
    assert "Requires-Python: >=3.9" in head and "License: Apache-2.0" in head and "Requires-Dist" not in head
    assert "Description-Content-Type: text/markdown" in head and body == (src / "README.md").read_text()
    assert files[DIST_INFO + "/WHEEL"][0].decode().splitlines()[2:] == ["Root-Is-Purelib: true",
                                                                        "Tag: py3-none-any"]
    eps = files[DIST_INFO + "/entry_points.txt"][0].decode()
    assert eps == ("[console_scripts]\ngpufrag-probe = gpufrag_probe.__main__:main\n\n"
                   "[vllm.general_plugins]\ngpufrag_probe = gpufrag_probe.vllm_plugin:register\n")
    assert {(d, a) for _, d, a in files.values()} == {((1980, 1, 1, 0, 0, 0), 0o644 << 16)}


def test_builds_are_reproducible(src, tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert _build("build_wheel", src, a).read_bytes() == _build("build_wheel", src, b).read_bytes()
    assert _build("build_sdist", src, a).read_bytes() == _build("build_sdist", src, b).read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01
    c = tmp_path / "c"
    c.mkdir()
    files = _read_wheel(_build("build_wheel", src, c))
    assert {d for _, d, _ in files.values()} == {(2026, 1, 1, 0, 0, 0)}


def test_sdist_builds_the_same_wheel(src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    sdist = _build("build_sdist", src, out)
    assert sdist.name == "gpufrag_probe-0.1.0.tar.gz"
    with tarfile.open(str(sdist)) as t:
        names = t.getnames()
        assert all(n.startswith("gpufrag_probe-0.1.0/") for n in names)
        assert {"gpufrag_probe-0.1.0/PKG-INFO", "gpufrag_probe-0.1.0/pyproject.toml",
                "gpufrag_probe-0.1.0/_build/gpufrag_probe_build.py",
                "gpufrag_probe-0.1.0/gpufrag_probe/_boot/sitecustomize.py"} <= set(names)
        t.extractall(str(tmp_path / "x"))
    w1, w2 = tmp_path / "w1", tmp_path / "w2"
    w1.mkdir()
    w2.mkdir()
    assert _build("build_wheel", tmp_path / "x" / "gpufrag_probe-0.1.0", w1).read_bytes() == \
        _build("build_wheel", src, w2).read_bytes()


def test_editable_wheel_points_at_the_tree(src, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    files = _read_wheel(_build("build_editable", src, out))
    assert sorted(files) == ["__editable__.gpufrag_probe-0.1.0.pth"] + [
        DIST_INFO + "/" + n for n in ("METADATA", "RECORD", "WHEEL", "entry_points.txt")]
    assert files["__editable__.gpufrag_probe-0.1.0.pth"][0].decode() == str(src) + "\n"


def test_metadata_hook_matches_the_wheel(src, tmp_path):
    md = tmp_path / "md"
    md.mkdir()
    name = backend.prepare_metadata_for_build_wheel(str(md))
    assert name == DIST_INFO
    whl = _read_wheel(_build("build_wheel", src, tmp_path))
    for n in os.listdir(str(md / name)):
        assert (md / name / n).read_bytes() == whl[DIST_INFO + "/" + n][0]
    assert backend.get_requires_for_build_wheel() == backend.get_requires_for_build_sdist() == \
        backend.get_requires_for_build_editable() == []


def test_toml_subset_reads_pyproject_as_tomllib_does():
    if importlib.util.find_spec("tomllib") is None:
        pytest.skip("tomllib is Python 3.11+")
    import tomllib
    path = os.path.join(PROBE, "pyproject.toml")
    with open(path, "rb") as f:
        assert backend.load_toml(path) == tomllib.load(f)
    text = ('a = "x\\u00e9\\"#" # c\nb = [1, -2, true, false, \'l\\\\\',\n  [], {},\n]\n'
            '[t."q.r"]\nc = { d = "e", f = [ "g" ] }\n[u]\n')
    assert backend._TOML(text, "t").parse() == tomllib.loads(text)


@pytest.mark.parametrize("text,line,why", [
    ('a = """x"""\n', 1, "multi-line strings"),
    ("a = 1\n[[t]]\n", 2, "arrays of tables"),
    ("a = 1.5\n", 1, "unsupported value"),
    ("a = 1979-05-27\n", 1, "unsupported value"),
    ("a = 1\na = 2\n", 2, "defined twice"),
    ("[t]\n[t]\n", 2, "defined twice"),
    ('a = "x\n', 1, "unterminated"),
    ("a = [1 2]\n", 1, "expected , or ]"),
    ("a = 1 b = 2\n", 1, "end of the line"),
    ('a = "\\q"\n', 1, "bad escape"),
])
def test_toml_subset_refuses_what_it_does_not_read(text, line, why):
    with pytest.raises(backend.BuildError) as e:
        backend._TOML(text, "pyproject.toml").parse()
    assert str(e.value).startswith("pyproject.toml:%d: " % line) and why in str(e.value), str(e.value)


def test_bad_project_is_named(src):
    (src / "gpufrag_probe" / "__init__.py").write_text(
        (src / "gpufrag_probe" / "__init__.py").read_text().replace('__version__ = "0.1.0"', '__version__ = "0.2.0"'))
    with pytest.raises(backend.BuildError, match=r"__version__ '0.2.0', but pyproject.toml says 0.1.0"):
        backend.Project(str(src))
    (src / "pyproject.toml").write_text((src / "pyproject.toml").read_text().replace(
        'version = "0.1.0"', 'version = "0.1.0"\nurls = { x = "y" }'))
    with pytest.raises(backend.BuildError, match=r"\[project\] urls is not supported"):
        backend.Project(str(src))


def test_toml_subset_never_fails_otherwise():
    """Mutations of pyproject.toml (a seeded random walk: bytes cut,
    repeated, replaced by TOML punctuation) parse or raise BuildError
    naming a line, never another exception or a hang; where tomllib
    exists, what the subset accepts, tomllib reads the same."""
    import random
    try:
        import tomllib
    except ImportError:
        tomllib = None
    with open(os.path.join(PROBE, "pyproject.toml")) as f:
        base = f.read()
    rng = random.Random(29)
    alphabet = '[]{}=,."\'\\#\n \tu0a-+'
    for _ in range(1500):
        s = base
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(s) + 1)
            op = rng.randrange(3)
            if op == 0:
                s = s[:i] + s[i + rng.randint(1, 8):]
            elif op == 1:
                s = s[:i] + s[i:i + rng.randint(1, 8)] + s[i:]
            else:
                s = s[:i] + rng.choice(alphabet) + s[i + 1:]
        try:
            got = backend._TOML(s, "p").parse()
        except backend.BuildError as e:
            assert str(e).startswith("p:"), str(e)
            continue
        if tomllib is not None:
            assert got == tomllib.loads(s), s
