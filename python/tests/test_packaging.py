"""The package as pyproject.toml builds it: the wheel, the sdist and the editable wheel of the backend in _backend."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import tarfile
import tempfile
import tomllib
import unittest
import zipfile
from email.parser import BytesParser
from pathlib import Path

import sandstream

PROJECT = Path(__file__).resolve().parents[1]
STEM = "sandstream-1.5.0"


def _backend():
    spec = importlib.util.spec_from_file_location("sandstream_build", PROJECT / "_backend" / "sandstream_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sources() -> set[str]:
    """The files the wheel must hold: every .py file and py.typed of the two packages."""
    files = set()
    for package in ("sandstream", "sandstream_testee"):
        for path in (PROJECT / package).rglob("*"):
            if "__pycache__" not in path.parts and (path.suffix == ".py" or path.name == "py.typed"):
                files.add(path.relative_to(PROJECT).as_posix())
    return files


class PyprojectTest(unittest.TestCase):
    def test_version_follows_the_spec_revision(self) -> None:
        with open(PROJECT / "pyproject.toml", "rb") as f:
            project = tomllib.load(f)["project"]
        major, minor, patch = project["version"].split(".")
        self.assertEqual(f"{major}.{minor}", sandstream.SPEC_VERSION)
        self.assertTrue(patch.isdigit())
        self.assertEqual(f"{project['name']}-{project['version']}", STEM)

    def test_the_build_needs_nothing(self) -> None:
        with open(PROJECT / "pyproject.toml", "rb") as f:
            system = tomllib.load(f)["build-system"]
        self.assertEqual(system["requires"], [])
        backend = _backend()
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        self.assertEqual(backend.get_requires_for_build_sdist(), [])
        self.assertEqual(backend.get_requires_for_build_editable(), [])


class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.TemporaryDirectory()
        name = _backend().build_wheel(cls.dir.name)
        cls.name = name
        with zipfile.ZipFile(Path(cls.dir.name) / name) as wheel:
            cls.files = {info.filename: wheel.read(info) for info in wheel.infolist()}

    @classmethod
    def tearDownClass(cls) -> None:
        cls.dir.cleanup()

    def test_holds_the_packages_and_their_metadata(self) -> None:
        self.assertEqual(self.name, f"{STEM}-py3-none-any.whl")
        info = f"{STEM}.dist-info"
        self.assertEqual(set(self.files), _sources() | {f"{info}/{name}" for name in ("METADATA", "WHEEL", "entry_points.txt", "RECORD", "licenses/LICENSE")})
        self.assertIn("sandstream/py.typed", self.files)
        self.assertIn("sandstream/_guardian_program.py", self.files)
        for name in _sources():
            self.assertEqual(self.files[name], (PROJECT / name).read_bytes(), name)

    def test_record_hashes_every_file(self) -> None:
        rows = list(csv.reader(io.StringIO(self.files[f"{STEM}.dist-info/RECORD"].decode())))
        self.assertEqual({row[0] for row in rows}, set(self.files))
        for name, digest, size in rows:
            if name.endswith("/RECORD"):
                self.assertEqual((digest, size), ("", ""))
                continue
            data = self.files[name]
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual((digest, size), (f"sha256={expected}", str(len(data))), name)

    def test_metadata(self) -> None:
        meta = BytesParser().parsebytes(self.files[f"{STEM}.dist-info/METADATA"])
        self.assertEqual(meta["Metadata-Version"], "2.4")
        self.assertEqual((meta["Name"], meta["Version"]), ("sandstream", "1.5.0"))
        self.assertEqual(meta["Requires-Python"], ">=3.11")
        self.assertEqual(meta["License-Expression"], "Apache-2.0")
        self.assertEqual(meta["License-File"], "LICENSE")
        self.assertEqual(meta["Description-Content-Type"], "text/markdown")
        self.assertEqual(meta.get_payload(), (PROJECT / "README.md").read_text(encoding="utf-8"))
        self.assertIn("Typing :: Typed", meta.get_all("Classifier"))
        wheel = BytesParser().parsebytes(self.files[f"{STEM}.dist-info/WHEEL"])
        self.assertEqual((wheel["Root-Is-Purelib"], wheel["Tag"]), ("true", "py3-none-any"))
        self.assertIn("Apache License", self.files[f"{STEM}.dist-info/licenses/LICENSE"].decode())

    def test_the_testee_command(self) -> None:
        self.assertEqual(self.files[f"{STEM}.dist-info/entry_points.txt"].decode(),
                         "[console_scripts]\nsandstream-testee = sandstream_testee.main:main\n")


class SdistTest(unittest.TestCase):
    def test_holds_what_builds_the_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            name = _backend().build_sdist(directory)
            self.assertEqual(name, f"{STEM}.tar.gz")
            with tarfile.open(Path(directory) / name) as sdist:
                names = {member.name for member in sdist.getmembers()}
                pkg_info = sdist.extractfile(f"{STEM}/PKG-INFO").read()
        expected = _sources() | {"PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "_backend/sandstream_build.py"}
        self.assertEqual(names, {f"{STEM}/{file}" for file in expected})
        self.assertEqual(BytesParser().parsebytes(pkg_info)["Version"], "1.5.0")


class EditableTest(unittest.TestCase):
    def test_puts_this_directory_on_the_path(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            name = _backend().build_editable(directory)
            with zipfile.ZipFile(Path(directory) / name) as wheel:
                pth = wheel.read(f"__editable__.{STEM}.pth").decode()
                names = set(wheel.namelist())
        self.assertEqual(pth, f"{PROJECT}\n")
        self.assertIn(f"{STEM}.dist-info/entry_points.txt", names)
        self.assertFalse(any(name.startswith("sandstream/") for name in names))


if __name__ == "__main__":
    unittest.main()
