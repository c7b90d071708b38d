"""The one packaging rule pyproject.toml cannot state: alembic/ ships inside the wheel.

The migrations stay at the top of the checkout, where alembic's own command line and the other branches
expect them; the wheel carries them as app/storage/schema/, where app.storage.migrations looks once
remit is installed. Everything else about the package is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["app*", "contracts*", "reconciliation*", "corebank*"]), "app.storage.schema"],
    package_dir={"app.storage.schema": "alembic"},
)
