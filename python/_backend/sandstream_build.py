"""The build backend of this package (PEP 517, PEP 660), standard library only.

``pyproject.toml`` names it with ``backend-path``, so building needs nothing but
the Python doing it: ``pip install ./python`` works offline, in a fresh virtual
environment, with or without build isolation, on every Python the package
supports (3.11 reads TOML itself). It builds a pure-Python wheel of the
packages ``[tool.sandstream-build] packages`` lists (their ``.py`` files and
``py.typed``), an sdist, and an editable wheel; the metadata comes from the
``[project]`` table, and a key of it this backend does not handle is an error,
never silently dropped.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ROOT = Path(__file__).resolve().parent.parent
_HANDLED = {"name", "version", "description", "readme", "requires-python", "license", "license-files",
            "authors", "keywords", "classifiers", "urls", "scripts"}
# The files of a package that go into the wheel.
_SUFFIXES = (".py",)
_DATA = ("py.typed",)
# The files of the project that go into the sdist beside the packages.
_SDIST_FILES = ("pyproject.toml", "_backend/sandstream_build.py")


class _Project:
    def __init__(self, root: Path) -> None:
        with open(root / "pyproject.toml", "rb") as f:
            pyproject = tomllib.load(f)
        project = pyproject["project"]
        unknown = set(project) - _HANDLED
        if unknown:
            raise ValueError(f"pyproject.toml: [project] keys this backend does not handle: {sorted(unknown)}")
        self.root = root
        self.project = project
        self.name = project["name"]
        self.version = project["version"]
        # The distribution's name in file names (PEP 427, PEP 625).
        self.stem = f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}"
        self.packages: list[str] = pyproject["tool"]["sandstream-build"]["packages"]
        self.license_files = [root / p for p in project.get("license-files", [])]

    def package_files(self) -> list[tuple[str, Path]]:
        """Every file of the packages, as (path in the archive, path here), in a stable order."""
        files = []
        for package in self.packages:
            base = self.root / package
            if not (base / "__init__.py").is_file():
                raise ValueError(f"{package} is not a package under {self.root}")
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for filename in sorted(filenames):
                    if filename.endswith(_SUFFIXES) or filename in _DATA:
                        path = Path(dirpath) / filename
                        files.append((path.relative_to(self.root).as_posix(), path))
        return files

    def metadata(self) -> bytes:
        """The core metadata (version 2.4), as METADATA and PKG-INFO hold it."""
        p = self.project
        fields = [("Metadata-Version", "2.4"), ("Name", self.name), ("Version", self.version)]
        if "description" in p:
            fields.append(("Summary", p["description"]))
        for author in p.get("authors", []):
            if "email" in author:
                fields.append(("Author-email", f"{author['name']} <{author['email']}>" if "name" in author else author["email"]))
            else:
                fields.append(("Author", author["name"]))
        if "keywords" in p:
            fields.append(("Keywords", ",".join(p["keywords"])))
        fields.extend(("Classifier", classifier) for classifier in p.get("classifiers", []))
        fields.extend(("Project-URL", f"{label}, {url}") for label, url in p.get("urls", {}).items())
        if "requires-python" in p:
            fields.append(("Requires-Python", p["requires-python"]))
        if "license" in p:
            if not isinstance(p["license"], str):
                raise ValueError("pyproject.toml: license must be an SPDX expression (PEP 639)")
            fields.append(("License-Expression", p["license"]))
        fields.extend(("License-File", path.name) for path in self.license_files)
        body = ""
        if "readme" in p:
            readme = p["readme"]
            if not isinstance(readme, str) or not readme.endswith(".md"):
                raise ValueError("pyproject.toml: readme must be the path of a Markdown file")
            fields.append(("Description-Content-Type", "text/markdown"))
            body = (self.root / readme).read_text(encoding="utf-8")
        for key, value in fields:
            if "\n" in value or "\r" in value:
                raise ValueError(f"pyproject.toml: the value of {key} spans lines")
        head = "".join(f"{key}: {value}\n" for key, value in fields)
        return f"{head}\n{body}".encode()

    def entry_points(self) -> bytes | None:
        scripts = self.project.get("scripts")
        if not scripts:
            return None
        lines = ["[console_scripts]"] + [f"{name} = {target}" for name, target in scripts.items()]
        return ("\n".join(lines) + "\n").encode()

    def dist_info(self) -> list[tuple[str, bytes]]:
        """The files of the .dist-info directory but RECORD."""
        info = f"{self.stem}.dist-info"
        wheel = "Wheel-Version: 1.0\nGenerator: sandstream_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        files = [(f"{info}/METADATA", self.metadata()), (f"{info}/WHEEL", wheel.encode())]
        entry_points = self.entry_points()
        if entry_points is not None:
            files.append((f"{info}/entry_points.txt", entry_points))
        files.extend((f"{info}/licenses/{path.name}", path.read_bytes()) for path in self.license_files)
        return files


def _timestamp() -> tuple[int, int, int, int, int, int]:
    # Reproducible: SOURCE_DATE_EPOCH when set, else the earliest time a zip can hold.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return (1980, 1, 1, 0, 0, 0)
    return max(time.gmtime(int(epoch))[:6], (1980, 1, 1, 0, 0, 0))


def _write_wheel(project: _Project, directory: str, files: list[tuple[str, bytes]]) -> str:
    files = files + project.dist_info()
    record_name = f"{project.stem}.dist-info/RECORD"
    rows = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append((name, f"sha256={digest}", str(len(data))))
    rows.append((record_name, "", ""))
    record = io.StringIO()
    csv.writer(record, lineterminator="\n").writerows(rows)
    files.append((record_name, record.getvalue().encode()))
    filename = f"{project.stem}-py3-none-any.whl"
    stamp = _timestamp()
    with zipfile.ZipFile(Path(directory) / filename, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files:
            entry = zipfile.ZipInfo(name, date_time=stamp)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return filename


def _write_metadata_directory(project: _Project, directory: str) -> str:
    for name, data in project.dist_info():
        path = Path(directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return f"{project.stem}.dist-info"


# ---- PEP 517 --------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings=None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings=None) -> str:
    return _write_metadata_directory(_Project(ROOT), metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings=None) -> str:
    return _write_metadata_directory(_Project(ROOT), metadata_directory)


def build_wheel(wheel_directory: str, config_settings=None, metadata_directory=None) -> str:
    project = _Project(ROOT)
    return _write_wheel(project, wheel_directory, [(name, path.read_bytes()) for name, path in project.package_files()])


def build_editable(wheel_directory: str, config_settings=None, metadata_directory=None) -> str:
    """A wheel whose one module is a ``.pth`` file putting this directory on ``sys.path``."""
    project = _Project(ROOT)
    pth = f"{project.root}\n".encode()
    return _write_wheel(project, wheel_directory, [(f"__editable__.{project.stem}.pth", pth)])


def build_sdist(sdist_directory: str, config_settings=None) -> str:
    project = _Project(ROOT)
    members = [(name, (project.root / name).read_bytes()) for name in _SDIST_FILES]
    if "readme" in project.project:
        members.append((project.project["readme"], (project.root / project.project["readme"]).read_bytes()))
    members.extend((path.relative_to(project.root).as_posix(), path.read_bytes()) for path in project.license_files)
    members.extend((name, path.read_bytes()) for name, path in project.package_files())
    members.append(("PKG-INFO", project.metadata()))
    filename = f"{project.stem}.tar.gz"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    with tarfile.open(Path(sdist_directory) / filename, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for name, data in sorted(members):
            entry = tarfile.TarInfo(f"{project.stem}/{name}")
            entry.size = len(data)
            entry.mode = 0o644
            entry.mtime = mtime
            sdist.addfile(entry, io.BytesIO(data))
    return filename
