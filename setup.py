"""Builds the C++ extension (torch_pjrt/_C) with CMake when pip builds a wheel against the torch
already installed: `pip install --no-build-isolation .`. Editable installs (scripts/setup.sh) build
in place with CMake instead."""

import os
import pathlib
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        root = pathlib.Path(__file__).resolve().parent
        build = root / "build-wheel"
        package = pathlib.Path(self.build_lib).resolve() / "torch_pjrt"
        configure = ["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     "-DTORCH_PJRT_BUILD_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
                     f"-DTORCH_PJRT_EXTENSION_DIR={package}"]  # fmt: skip
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        subprocess.check_call(configure, env=env)
        subprocess.check_call(
            ["cmake", "--build", str(build), "--target", "_C", "-j", str(os.cpu_count() or 1)],
            env=env,
        )


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds a compiled extension: tag it for the platform
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
