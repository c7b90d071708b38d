"""Debtor and creditor of a pain.001 mapped to the contract: a BSB from the agent, an account number.

An agent's BSB is its clearing-system member id in the Australian BSB scheme:
    <FinInstnId><ClrSysMmbId><ClrSysId><Cd>AUBSB</Cd></ClrSysId><MmbId>062000</MmbId></ClrSysMmbId></FinInstnId>
and the account is <Id><Othr><Id>12345678</Id></Othr></Id>. remit moves money between Australian BSB
accounts only, so an IBAN, another clearing system or an agent known only by its BIC is refused with why.
Reasons never repeat the account number itself (see the project's masking rule).

Every node the mapping needs is fetched in one walk over the element's children (NodeFinder).
"""

import re
from typing import Any

from lxml import etree

_BSB = re.compile(r"^([0-9]{3})-?([0-9]{3})$")
_ACCOUNT_SCHEMES = frozenset({"BBAN"})  # Othr/SchmeNm/Cd values that still mean "the bank's account number"
AGENT = {
    "": "agent",
    "FinInstnId/ClrSysMmbId": "member",
    "FinInstnId/ClrSysMmbId/ClrSysId/Cd": "system",
    "FinInstnId/ClrSysMmbId/MmbId": "member_id",
    "FinInstnId/BICFI": "bic",
    "FinInstnId/BIC": "bic",
}
ACCOUNT = {
    "": "account",
    "Id/IBAN": "iban",
    "Id/Othr/Id": "account_id",
    "Id/Othr/SchmeNm/Cd": "scheme",
    "Id/Othr/SchmeNm/Prtry": "scheme",
}

Nodes = dict[str, etree._Element]


class PartyError(ValueError):
    """The party cannot be mapped to a BSB account; the message is the rejection reason."""


def under(parent: str, paths: dict[str, str]) -> dict[str, str]:
    """The paths of AGENT or ACCOUNT below a named element: under("CdtrAgt", AGENT)."""
    return {"/".join(filter(None, (parent, path))): key for path, key in paths.items()}


# A tree of the paths' element names: name -> [the key of the node at that path or None, the steps below it].
# Plain lists and dicts: the walk below runs for every transaction of a file.
_Steps = dict[object, list[Any]]


class NodeFinder:
    """Fetches the nodes at given paths below an element in one walk over its children (three times faster than
    an XPath union, five than a find() per path), keyed by name: NodeFinder(ns, {"PmtId/EndToEndId": "e2e"})."""

    def __init__(self, namespace: str, paths: dict[str, str]) -> None:
        self._steps: _Steps = {}
        for path, key in paths.items():
            *parents, last = (f"{{{namespace}}}{name}" for name in path.split("/"))
            steps = self._steps
            for name in parents:
                steps = steps.setdefault(name, [None, {}])[1]
            steps.setdefault(last, [None, {}])[0] = key

    def nodes(self, element: etree._Element) -> Nodes:
        found: Nodes = {}
        _walk(element, self._steps, found)
        return found


def _walk(element: etree._Element, steps: _Steps, found: Nodes) -> None:
    # A comment's or processing instruction's tag is a function: it matches no step.
    for child in element:
        step = steps.get(child.tag)
        if step is not None:
            key, below = step
            if key is not None and key not in found:
                found[key] = child
            if below:
                _walk(child, below, found)


def text(nodes: Nodes, key: str) -> str | None:
    node = nodes.get(key)
    return None if node is None or node.text is None else node.text.strip()


def bsb(nodes: Nodes, role: str) -> str:
    """The BSB of a DbtrAgt/CdtrAgt as NNN-NNN."""
    if "agent" not in nodes:
        raise PartyError(f"{role} agent is missing: remit needs its BSB (ClrSysMmbId with ClrSysId/Cd AUBSB)")
    if "member" not in nodes:
        known_by = "a BIC only" if "bic" in nodes else "no clearing-system member id"
        raise PartyError(f"{role} agent has {known_by}: remit needs its BSB (ClrSysMmbId with ClrSysId/Cd AUBSB)")
    system = text(nodes, "system")
    if system != "AUBSB":
        named = f"clearing system {system!r}" if system else "a clearing system not given as ClrSysId/Cd"
        raise PartyError(f"{role} agent is in {named}, not AUBSB: remit moves money between Australian BSBs only")
    match = _BSB.match(text(nodes, "member_id") or "")
    if match is None:
        raise PartyError(f"{role} agent's MmbId is not a BSB (6 digits, NNNNNN or NNN-NNN)")
    return f"{match.group(1)}-{match.group(2)}"


def account(nodes: Nodes, role: str) -> str:
    """The account number of a DbtrAcct/CdtrAcct (Othr/Id); the contract checks its digits."""
    if "account" not in nodes:
        raise PartyError(f"{role} account is missing: remit needs Id/Othr/Id")
    if "iban" in nodes:
        raise PartyError(f"{role} account is an IBAN: remit moves money between Australian BSB accounts (Id/Othr/Id)")
    scheme = text(nodes, "scheme")
    if scheme is not None and scheme not in _ACCOUNT_SCHEMES:
        raise PartyError(f"{role} account is in scheme {scheme[:12]!r}: remit takes bank account numbers (BBAN)")
    number = text(nodes, "account_id")
    if number is None:
        raise PartyError(f"{role} account has no Id/Othr/Id")
    return number
