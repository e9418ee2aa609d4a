"""The build backend of gpufrag-probe (PEP 517 and PEP 660), standard library only.

pip builds the probe with it offline on any CPython >= 3.9, with or without
setuptools and wheel installed, with or without build isolation: the
package needs nothing to build (get_requires_* return []), so an isolated
build environment is empty and no package index is asked.

It reads the [project] table of pyproject.toml (the subset of TOML that file
uses; tomllib is 3.11+ only) and writes:

- a wheel, NAME-VERSION-py3-none-any.whl: the package directory (every file
  but bytecode caches), and NAME-VERSION.dist-info/ with METADATA (core
  metadata 2.1, README.md as its description), WHEEL, entry_points.txt
  ([project.scripts] as console_scripts, [project.entry-points.*]) and
  RECORD (sha256 and size of every file);
- an sdist, NAME-VERSION.tar.gz: pyproject.toml, README.md, this backend,
  the package and PKG-INFO;
- an editable wheel (pip install -e): the dist-info and a .pth file that
  puts the source tree on sys.path.

Archives are reproducible: entries sorted, timestamps from SOURCE_DATE_EPOCH
(else 1980-01-01), fixed modes and owners.
"""
import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

__all__ = [
    "build_wheel", "build_sdist", "build_editable",
    "get_requires_for_build_wheel", "get_requires_for_build_sdist", "get_requires_for_build_editable",
    "prepare_metadata_for_build_wheel", "prepare_metadata_for_build_editable",
]

# ROOT is the source tree: the directory above this file's (backend-path).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKEND_DIR = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
# ZIP_EPOCH is the earliest time a zip entry can carry.
ZIP_EPOCH = 315532800  # 1980-01-01T00:00:00Z


class BuildError(Exception):
    """pyproject.toml or the tree cannot make a distribution; the message
    names the file and the field."""


# ---- pyproject.toml: the subset of TOML it uses ----------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _TOML:
    """A parser for tables ([a.b."c"]), key = value lines, basic and literal
    strings, integers, booleans, arrays (over several lines, trailing comma
    allowed) and inline tables. Anything else is an error naming the line,
    so a construct it does not know cannot be misread."""

    def __init__(self, text, name):
        self.s, self.i, self.name = text, 0, name

    def fail(self, what):
        line = self.s.count("\n", 0, self.i) + 1
        raise BuildError("%s:%d: %s" % (self.name, line, what))

    def peek(self):
        return self.s[self.i] if self.i < len(self.s) else ""

    def skip(self, newlines):
        """Skips blanks and comments, and line ends when newlines is true."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def key(self):
        c = self.peek()
        if c in "\"'":
            return self.string()
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            self.fail("expected a key")
        self.i = m.end()
        return m.group()

    def dotted_key(self):
        parts = [self.key()]
        self.skip(False)
        while self.peek() == ".":
            self.i += 1
            self.skip(False)
            parts.append(self.key())
            self.skip(False)
        return parts

    def string(self):
        q = self.s[self.i]
        if self.s.startswith(q * 3, self.i):
            self.fail("multi-line strings are not supported")
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s) or self.s[self.i] == "\n":
                self.fail("unterminated string")
            c = self.s[self.i]
            self.i += 1
            if c == q:
                return "".join(out)
            if c == "\\" and q == '"':
                e = self.s[self.i:self.i + 1]
                self.i += 1
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                elif e in ("u", "U"):
                    n = 4 if e == "u" else 8
                    h = self.s[self.i:self.i + n]
                    if len(h) != n or not all(x in "0123456789abcdefABCDEF" for x in h):
                        self.fail("bad \\%s escape" % e)
                    out.append(chr(int(h, 16)))
                    self.i += n
                else:
                    self.fail("bad escape \\%s" % e)
            else:
                out.append(c)

    def value(self):
        c = self.peek()
        if c in "\"'":
            return self.string()
        if c == "[":
            self.i += 1
            out = []
            while True:
                self.skip(True)
                if self.peek() == "]":
                    self.i += 1
                    return out
                out.append(self.value())
                self.skip(True)
                if self.peek() == ",":
                    self.i += 1
                elif self.peek() != "]":
                    self.fail("expected , or ] in an array")
        if c == "{":
            self.i += 1
            out = {}
            self.skip(False)
            if self.peek() == "}":
                self.i += 1
                return out
            while True:
                self.skip(False)
                self.assign(out)
                self.skip(False)
                if self.peek() == "}":
                    self.i += 1
                    return out
                if self.peek() != ",":
                    self.fail("expected , or } in an inline table")
                self.i += 1
        m = re.compile(r"true|false|[+-]?[0-9]+(?![0-9A-Za-z_.:-])").match(self.s, self.i)
        if not m:
            self.fail("unsupported value")
        self.i = m.end()
        if m.group() in ("true", "false"):
            return m.group() == "true"
        return int(m.group())

    def assign(self, table):
        parts = self.dotted_key()
        if self.peek() != "=":
            self.fail("expected =")
        self.i += 1
        self.skip(False)
        t = self.descend(table, parts[:-1])
        if parts[-1] in t:
            self.fail("key %s defined twice" % ".".join(parts))
        t[parts[-1]] = self.value()

    def descend(self, table, parts):
        for p in parts:
            table = table.setdefault(p, {})
            if not isinstance(table, dict):
                self.fail("%s is not a table" % p)
        return table

    def parse(self):
        root, seen = {}, set()
        table = root
        while True:
            self.skip(True)
            if self.i >= len(self.s):
                return root
            if self.peek() == "[":
                if self.s.startswith("[[", self.i):
                    self.fail("arrays of tables are not supported")
                self.i += 1
                self.skip(False)
                parts = self.dotted_key()
                if self.peek() != "]":
                    self.fail("expected ] after a table name")
                self.i += 1
                if tuple(parts) in seen:
                    self.fail("table [%s] defined twice" % ".".join(parts))
                seen.add(tuple(parts))
                table = self.descend(root, parts)
            else:
                self.assign(table)
            self.skip(False)
            if self.i < len(self.s) and self.s[self.i] not in "\r\n":
                self.fail("expected the end of the line")


def load_toml(path):
    """The table of a TOML file in the subset _TOML reads."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BuildError("%s: not UTF-8 at byte %d" % (path, e.start))
    return _TOML(text, path).parse()


# ---- the project ------------------------------------------------------------

class Project:
    """The [project] table of ROOT/pyproject.toml, checked."""

    def __init__(self, root=ROOT):
        self.root = root
        path = os.path.join(root, "pyproject.toml")
        p = load_toml(path).get("project")
        if not isinstance(p, dict):
            raise BuildError("%s: no [project] table" % path)

        def field(name, kind, default=None):
            v = p.get(name, default)
            if not isinstance(v, kind):
                raise BuildError("%s: [project] %s must be a %s" % (path, name, kind.__name__))
            return v

        self.name = field("name", str)
        self.version = field("version", str)
        if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", self.name):
            raise BuildError("%s: [project] name %r is not a valid distribution name" % (path, self.name))
        if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", self.version):
            raise BuildError("%s: [project] version %r: only release numbers (1.2.3)" % (path, self.version))
        self.description = field("description", str, "")
        self.readme = field("readme", str, "")
        self.requires_python = field("requires-python", str, "")
        lic = field("license", dict, {})
        self.license = lic.get("text", "")
        self.classifiers = field("classifiers", list, [])
        self.dependencies = field("dependencies", list, [])
        self.scripts = field("scripts", dict, {})
        self.entry_points = field("entry-points", dict, {})
        for k in p:
            if k not in ("name", "version", "description", "readme", "requires-python", "license",
                         "classifiers", "dependencies", "scripts", "entry-points"):
                raise BuildError("%s: [project] %s is not supported by this backend" % (path, k))
        # The distribution's file-name form (PEP 427, PEP 503 normalised).
        self.dist = re.sub(r"[-_.]+", "_", self.name).lower()
        self.package = self.dist
        if not os.path.isfile(os.path.join(root, self.package, "__init__.py")):
            raise BuildError("%s: no package %s/ next to it" % (path, self.package))
        self.check_version()

    def check_version(self):
        """The package's __version__ is the project's."""
        init = os.path.join(self.root, self.package, "__init__.py")
        with open(init, encoding="utf-8") as f:
            m = re.search(r'^__version__ = "([^"]*)"$', f.read(), re.M)
        if not m or m.group(1) != self.version:
            raise BuildError("%s: __version__ %s, but pyproject.toml says %s"
                             % (init, repr(m.group(1)) if m else "missing", self.version))

    @property
    def distinfo(self):
        return "%s-%s.dist-info" % (self.dist, self.version)

    def metadata(self):
        lines = ["Metadata-Version: 2.1", "Name: " + self.name, "Version: " + self.version]
        if self.description:
            lines.append("Summary: " + self.description)
        if self.license:
            lines.append("License: " + self.license)
        if self.requires_python:
            lines.append("Requires-Python: " + self.requires_python)
        lines += ["Classifier: " + c for c in self.classifiers]
        lines += ["Requires-Dist: " + d for d in self.dependencies]
        body = ""
        if self.readme:
            lines.append("Description-Content-Type: text/markdown")
            with open(os.path.join(self.root, self.readme), encoding="utf-8") as f:
                body = f.read()
        return ("\n".join(lines) + "\n\n" + body).encode("utf-8")

    def entry_points_txt(self):
        groups = []
        if self.scripts:
            groups.append(("console_scripts", self.scripts))
        groups += sorted(self.entry_points.items())
        out = []
        for group, eps in groups:
            out.append("[%s]" % group)
            out += ["%s = %s" % (k, v) for k, v in sorted(eps.items())]
            out.append("")
        return "\n".join(out).encode("utf-8")

    def wheel_txt(self):
        return ("Wheel-Version: 1.0\nGenerator: gpufrag_probe_build (%s)\nRoot-Is-Purelib: true\n"
                "Tag: py3-none-any\n" % self.version).encode()

    def dist_info_files(self):
        return [(self.distinfo + "/METADATA", self.metadata()),
                (self.distinfo + "/WHEEL", self.wheel_txt()),
                (self.distinfo + "/entry_points.txt", self.entry_points_txt())]

    def tree(self, top):
        """(archive name, path) of every file under ROOT/top, sorted; no
        bytecode caches."""
        out = []
        for d, dirs, files in os.walk(os.path.join(self.root, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for n in files:
                if n.endswith((".pyc", ".pyo")):
                    continue
                p = os.path.join(d, n)
                out.append((os.path.relpath(p, self.root).replace(os.sep, "/"), p))
        return sorted(out)

    def package_files(self):
        out = []
        for name, path in self.tree(self.package):
            with open(path, "rb") as f:
                out.append((name, f.read()))
        return out


# ---- archives -----------------------------------------------------------------

def _epoch():
    v = os.environ.get("SOURCE_DATE_EPOCH", "")
    return max(int(v), ZIP_EPOCH) if v.isdigit() else ZIP_EPOCH


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(project, directory, files):
    """Writes files (name, bytes) and the dist-info into a wheel in
    directory; returns its base name."""
    files = list(files) + project.dist_info_files()
    record = project.distinfo + "/RECORD"
    lines = ["%s,%s,%d" % (n, _digest(b), len(b)) for n, b in files] + [record + ",,"]
    files.append((record, ("\n".join(lines) + "\n").encode()))
    base = "%s-%s-py3-none-any.whl" % (project.dist, project.version)
    stamp = time.gmtime(_epoch())[:6]
    tmp = os.path.join(directory, "." + base + ".tmp")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for n, b in files:
                info = zipfile.ZipInfo(n, stamp)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, b)
        os.replace(tmp, os.path.join(directory, base))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return base


def _write_dist_info(project, directory):
    d = os.path.join(directory, project.distinfo)
    os.makedirs(d, exist_ok=True)
    for n, b in project.dist_info_files():
        with open(os.path.join(directory, n), "wb") as f:
            f.write(b)
    return project.distinfo


# ---- PEP 517 and PEP 660 hooks -----------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(Project(), metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_dist_info(Project(), metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = Project()
    return _write_wheel(p, wheel_directory, p.package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file puts the source tree on sys.path: edits to
    the package take effect without a reinstall."""
    p = Project()
    pth = ("__editable__.%s-%s.pth" % (p.dist, p.version), (p.root + "\n").encode("utf-8"))
    return _write_wheel(p, wheel_directory, [pth])


def build_sdist(sdist_directory, config_settings=None):
    p = Project()
    prefix = "%s-%s" % (p.dist, p.version)
    members = [(n, path) for n in ("pyproject.toml", p.readme) if n
               for path in [os.path.join(p.root, n)]]
    members += p.tree(BACKEND_DIR) + p.tree(p.package)
    epoch = _epoch()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name, data):
            info = tarfile.TarInfo(prefix + "/" + name)
            info.size, info.mtime, info.mode = len(data), epoch, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
        for name, path in sorted(members):
            with open(path, "rb") as f:
                add(name, f.read())
        add("PKG-INFO", p.metadata())
    base = prefix + ".tar.gz"
    tmp = os.path.join(sdist_directory, "." + base + ".tmp")
    try:
        with open(tmp, "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=epoch) as gz:
                gz.write(buf.getvalue())
        os.replace(tmp, os.path.join(sdist_directory, base))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return base
