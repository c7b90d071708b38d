"""The shipped ISO 20022 schemas are the official ones: same bytes as the checksums published with them."""

import hashlib
from pathlib import Path

import pytest

SCHEMAS = Path(__file__).parents[3] / "app" / "bankfiles" / "schemas"
OFFICIAL = {
    "pain.001.001.03.xsd": "6bb5c6f24250ab807f31f6164142bafd6d43bad8d162a926e258ff4c11e128af",
    "pain.001.001.09.xsd": "de038b373e47b0077b1832ddd81f4b2f1eb25d35721f62da1e38b7f5a09fda24",
    "pain.002.001.03.xsd": "dfb211e63f09825ea89f0ceee870db9e82ab2840fbe8b8148d9c4c2a9a99fd87",
    "pain.002.001.10.xsd": "2f9f8d0e9891fa9f31ccf0576397afe501614384d688ae6e43ba694b3d24b0cf",
}


@pytest.mark.parametrize(("name", "sha256"), sorted(OFFICIAL.items()))
def test_schema_is_the_official_file(name: str, sha256: str) -> None:
    assert hashlib.sha256((SCHEMAS / name).read_bytes()).hexdigest() == sha256


def test_the_readme_beside_the_schemas_states_the_same_checksums() -> None:
    readme = (SCHEMAS / "README.md").read_text()
    for name, sha256 in OFFICIAL.items():
        assert f"| {name} |" in readme
        assert sha256 in readme


def test_no_other_schema_is_shipped() -> None:
    assert sorted(p.name for p in SCHEMAS.glob("*.xsd")) == sorted(OFFICIAL)
