"""Build hook: bundle libfusednequip into the package.

`pip install ./python` builds the C library with CMake from this repository (into ../build)
and copies it next to the Python modules. Set FNQ_LIBRARY to bundle an already-built library
instead.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("FNQ_LIBRARY")
        if not lib:
            build = os.path.join(REPO, "build")
            subprocess.check_call(["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
            subprocess.check_call(["cmake", "--build", build, "--target", "fusednequip", "-j", "2"])
            lib = os.path.join(build, "core", "libfusednequip.so")
        dest = os.path.join(self.build_lib, "fusednequip", "libfusednequip.so")
        shutil.copy2(os.path.realpath(lib), dest)


setup(cmdclass={"build_py": BuildWithLibrary})
