"""pip install ./python: the package, plus nmt/_library.py recording which
libnmt it was installed with, so that an installed copy (no longer inside
the checkout) finds it: $NMT_LIBRARY at install time, else the checkout's
build/libnmt.so (docs/python.md). Nothing is compiled."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)


def installed_library():
    """The path to record, or None (not built from a checkout)."""
    if os.environ.get("NMT_LIBRARY"):
        return os.path.abspath(os.environ["NMT_LIBRARY"])
    if os.path.exists(os.path.join(CHECKOUT, "include", "nmt.h")):
        return os.path.join(CHECKOUT, "build", "libnmt.so")
    return None


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "nmt", "_library.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py at install: the libnmt this copy was installed '
                    'with."""\nLIBRARY = %r\n' % installed_library())


setup(cmdclass={"build_py": BuildWithLibrary})
