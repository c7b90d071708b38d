"""Parsing XML that a stranger wrote: no DTD, no entities, no network, errors that leak no values.

Two findings shape this module (lxml 6.1, libxml2 behind it; tests/unit/bankfiles/test_xml_hostile.py):
- with resolve_entities=False lxml still parses a DOCTYPE and its entity declarations silently, so a
  DOCTYPE is refused here, through the parser target's doctype() callback, before any entity is used;
- a parser given schema= reports every well-formedness error as "no element found (line 0)", only at
  close(), and lets some truncated files through. So the well-formedness of a file is checked by a second,
  schema-less parser fed the same bytes (WellFormed below), which fails at the first bad byte with its line.
"""

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from lxml import etree

from app.errors import FileRefused

if TYPE_CHECKING:
    from lxml.etree._parser import CustomTargetParser


class _Safe(TypedDict):
    resolve_entities: bool
    no_network: bool
    load_dtd: bool
    huge_tree: bool


SCHEMAS = Path(__file__).with_name("schemas")
# For every parser remit runs on outside XML. huge_tree stays off: libxml2 then caps a text node at 10 MB and
# nesting at 256 levels.
SAFE = _Safe(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
_QUOTED = re.compile(r"'[^']*'")
_FACET = re.compile(r"\[facet '([A-Za-z]+)'\]")
_NAMESPACE = re.compile(r"\{[^}]*\}")
_local = threading.local()


class _Stop(Exception):
    """Raised from a parser target to stop parsing once it has seen enough."""


class WellFormed:
    """A parser target that builds nothing and refuses a DOCTYPE. lxml reports to a target only the events it
    has methods for, so this one costs libxml2's parse and no Python call per element."""

    def __init__(self, name: str) -> None:
        self._name = name

    def doctype(self, name: str | None, pubid: str | None, system: str | None) -> None:
        raise FileRefused(
            f"{self._name} declares a DOCTYPE: refused (a DTD can define entities that expand without limit "
            "or read other files). ISO 20022 files never need one."
        )

    def close(self) -> None:
        pass


class _FirstElement(WellFormed):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.root: str | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.root = tag
        raise _Stop


def well_formed_parser(target: WellFormed) -> "CustomTargetParser[None]":
    return etree.XMLParser(target=target, **SAFE)  # type: ignore[call-overload,no-any-return]  # partial target


def validating_parser(message: str, tags: list[str]) -> etree.XMLPullParser:
    """Yields the end of each element named in tags, validating the whole document against the message's XSD."""
    return etree.XMLPullParser(events=("end",), tag=tags, schema=schema(message), **SAFE)


def root_element(head: bytes, name: str) -> tuple[str | None, str]:
    """(namespace, local name) of the root element, read from the first bytes of a file."""
    target = _FirstElement(name)
    parser = well_formed_parser(target)
    try:
        parser.feed(head)
    except _Stop:
        pass
    except etree.XMLSyntaxError as exc:
        raise not_well_formed(name, exc) from None
    if target.root is None:
        raise FileRefused(f"{name} starts like XML but has no element in its first {len(head)} bytes")
    qname = etree.QName(target.root)
    return qname.namespace, qname.localname


def not_well_formed(name: str, exc: etree.XMLSyntaxError) -> FileRefused:
    line = exc.lineno
    if "Premature end of data" in exc.msg or "no element found" in exc.msg:
        return FileRefused(f"{name} ends before its XML is complete (line {line}): the file is truncated")
    return FileRefused(f"{name} is not well-formed XML at line {line}: {mask_values(exc.msg)}")


def schema(message: str) -> etree.XMLSchema:
    """The official XSD of an ISO 20022 message, loaded once per thread (validation contexts are not shared)."""
    cache: dict[str, etree.XMLSchema] = _local.__dict__.setdefault("schemas", {})
    if message not in cache:
        parser = etree.XMLParser(**SAFE)
        cache[message] = etree.XMLSchema(etree.parse(SCHEMAS / f"{message}.xsd", parser))
    return cache[message]


def mask_values(message: str) -> str:
    """A libxml2 message without the values it quotes (an account number can be one), keeping element names."""
    message = _FACET.sub(r"[facet \1]", message)

    def mask(match: re.Match[str]) -> str:
        named = message[: match.start()].endswith(("Element ", "attribute "))
        return match.group() if named else "'…'"

    return _NAMESPACE.sub("", _QUOTED.sub(mask, message))
