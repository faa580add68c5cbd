# SPDX-License-Identifier: MIT
# The installed package (python/CMakeLists.txt's install rules) as a user gets it: `cmake --install`
# into a temporary prefix, then Debian's python3 imports it from there, from another directory,
# with nothing of the build tree on its path. Its version must be the installed CLI's and its
# _build_info.CLI the installed binary (not the build tree's: that one goes with `rm -rf build`);
# with DESTDIR (how a package is staged) the text names the prefix, not the staging directory.
#
# A pytest file rather than a `cmake -P` script: it runs and reports as the other Python tests do
# (one ctest entry, python_test_install), and the checks read as assertions with their values.
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# What the installed package says about itself, printed by a fresh interpreter.
PROBE = """
import importlib.metadata, json, loaderlens, loaderlens._build_info as info
dist = importlib.metadata.distribution("loaderlens")
print(json.dumps({
    "version": loaderlens.__version__,
    "cli": info.CLI,
    "module": loaderlens.__file__,
    "dist_version": dist.version,
    "dist_files_at": str(dist.locate_file("loaderlens")),
    "entry_points": [[e.group, e.name, e.value] for e in dist.entry_points],
}))
"""


def required_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set (tests/python/CMakeLists.txt sets it for ctest)")
    return value


def python_dir():
    return required_env("LOADERLENS_PYTHON_INSTALL_DIR")


def under(root, path):
    """`path` (absolute, or relative to the prefix) below `root`."""
    return Path(root) / str(path).lstrip("/")


def install(prefix, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir is not None:
        env["DESTDIR"] = str(destdir)
    command = [required_env("LOADERLENS_CMAKE"), "--install", required_env("LOADERLENS_BUILD_DIR"),
               "--prefix", str(prefix)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}{done.stderr}"


def installed_package(site_dir, cwd):
    """What `import loaderlens` gives with only `site_dir` added to the path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LOADERLENS_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(site_dir)
    env["PYTHONNOUSERSITE"] = "1"
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"import loaderlens from {site_dir} failed:\n{done.stderr}"
    return json.loads(done.stdout)


def cli_version(binary):
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{binary} --version: {done.stderr}"
    return done.stdout.strip()


def check_installed(package, site_dir, binary_file, binary_named):
    assert package["version"] == cli_version(binary_file)
    assert package["cli"] == str(binary_named)
    assert Path(package["module"]).resolve().is_relative_to(Path(site_dir).resolve()), \
        "imported from elsewhere, not from the installed copy"
    assert package["dist_version"] == package["version"]
    assert Path(package["dist_files_at"]).resolve() == (Path(site_dir) / "loaderlens").resolve()
    assert (["pytest11", "loaderlens.pytest_plugin", "loaderlens.pytest_plugin"]
            in package["entry_points"])


@pytest.fixture
def scratch():
    """A directory removed after the test: each install holds a copy of the CLI (~20 MB), which
    pytest's tmp_path would keep for three runs."""
    with tempfile.TemporaryDirectory(prefix="loaderlens-install-") as directory:
        yield Path(directory)


def test_installed_into_a_prefix_names_the_installed_cli(scratch):
    prefix = scratch / "prefix"
    elsewhere = scratch / "elsewhere"
    elsewhere.mkdir()
    install(prefix)
    site_dir = under(prefix, python_dir())
    package = installed_package(site_dir, elsewhere)
    check_installed(package, site_dir, prefix / "bin" / "loaderlens", prefix / "bin" / "loaderlens")


def test_staged_with_destdir_names_the_prefix_not_the_stage(scratch):
    stage = scratch / "stage"
    elsewhere = scratch / "elsewhere"
    elsewhere.mkdir()
    # A prefix that does not exist here: only the text may name it, nothing is written there.
    prefix = Path("/nonexistent-loaderlens-prefix") / scratch.name
    install(prefix, destdir=stage)
    assert not prefix.exists()
    site_dir = under(stage, under(prefix, python_dir()))
    package = installed_package(site_dir, elsewhere)
    check_installed(package, site_dir, under(stage, prefix / "bin" / "loaderlens"),
                    prefix / "bin" / "loaderlens")
    assert str(stage) not in (site_dir / "loaderlens" / "_build_info.py").read_text()


def test_default_python_dir_is_on_debians_path():
    """Where an install puts the package must be where /usr/bin/python3 looks: the default
    (lib/python3/dist-packages under /usr, lib/python3.X/dist-packages elsewhere) is a site
    directory of Debian's interpreter under /usr and /usr/local."""
    directory = python_dir()
    if os.path.isabs(directory):
        pytest.skip(f"LOADERLENS_INSTALL_PYTHONDIR is absolute ({directory}): not the default")
    configured = required_env("LOADERLENS_CONFIGURED_PREFIX")
    # Under another prefix the same relative directory is the one Debian uses under /usr/local.
    prefix = configured if configured in ("/usr", "/usr/local") else "/usr/local"
    done = subprocess.run(["/usr/bin/python3", "-c", "import sys, json; print(json.dumps(sys.path))"],
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert os.path.join(prefix, directory) in json.loads(done.stdout)
