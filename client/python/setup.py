# The tpujobs Python client: standard library only, Python 3.9 and later.
# `pip install ./client/python` builds it with the setuptools already
# installed (Debian's python3-setuptools): there is deliberately no
# pyproject.toml, so pip needs no network to fetch a build backend.
from setuptools import setup

setup(
    name="tpujobs",
    version="0.1.0",
    description="Python client for the tpujobs REST API (emulated TPU training jobs)",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="UNLICENSED",
    packages=["tpujobs"],
    python_requires=">=3.9",
    install_requires=[],
    classifiers=["Programming Language :: Python :: 3 :: Only"],
)
