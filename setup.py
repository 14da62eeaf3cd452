"""Package layout that pyproject.toml cannot express on its own.

envs/, trainers/, leaderboard/ and containers/ are top-level folders in the
repo but must install only as envgym.envs, envgym.trainers, envgym.leaderboard
and envgym.containers: PyPI has unrelated top-level packages with those names.
"""

from setuptools import find_packages, setup

MAPPED_FOLDERS = {
    "envgym.envs": "envs",
    "envgym.trainers": "trainers",
    "envgym.leaderboard": "leaderboard",
    "envgym.containers": "containers",
}


def _mapped_packages(prefix: str, folder: str) -> list[str]:
    return [prefix] + [f"{prefix}.{name}" for name in find_packages(folder)]


#: Folders that hold only data (installed by package-data in pyproject.toml):
#: named here, so setuptools installs them on purpose rather than warning that
#: it would leave out an importable folder.
DATA_FOLDERS = [
    "envgym.schemas",
    "envgym.envs.code.problems",
    "envgym.envs.shop.templates",
    "envgym.leaderboard.baselines",
    "envgym.leaderboard.templates",
]

packages = find_packages(include=["envgym", "envgym.*"])
for prefix, folder in MAPPED_FOLDERS.items():
    packages += _mapped_packages(prefix, folder)
packages += DATA_FOLDERS

setup(packages=packages, package_dir={"envgym": "envgym", **MAPPED_FOLDERS})
