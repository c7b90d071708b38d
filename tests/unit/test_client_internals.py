"""remit stands on its AMQP client, never under it: no module of remit assigns into aiormq, pamqp or aio-pika (a
module attribute, or a private name of theirs on any object) or subclasses a private class of theirs or overrides
a private method of a class of theirs. The one exception is the guard, by name (app/messaging/amqp_guard.py,
docs/architecture.md "The AMQP guard"): it wraps `pamqp.frame.unmarshal` and nothing else.
"""

import ast
import importlib.util
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("app", "contracts", "reconciliation", "corebank")
LIBRARIES = ("aiormq", "pamqp", "aio_pika")
GUARD = {("app/messaging/amqp_guard.py", "pamqp.frame.unmarshal")}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@cache
def library_private_names() -> frozenset[str]:
    """Every private name the libraries define: functions, methods, classes, attributes they set."""
    names: set[str] = set()
    for library in LIBRARIES:
        spec = importlib.util.find_spec(library)
        assert spec is not None, library
        assert spec.submodule_search_locations, library
        for path in Path(next(iter(spec.submodule_search_locations))).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and _private(node.name):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                    names.add(node.attr)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                    names.add(node.id)
    return frozenset(names)


def _imported(tree: ast.Module) -> dict[str, str]:
    """Local name -> the library's dotted name it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in LIBRARIES:
                    local = alias.asname or alias.name.split(".")[0]
                    names[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    """The library's dotted name an expression stands for (pamqp.frame.unmarshal), or None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in imported:
        return ".".join([imported[node.id], *reversed(parts)])
    return None


def findings(source: str, path: str) -> Iterator[str]:
    """What in `source` reaches under the libraries, one line each."""
    tree = ast.parse(source)
    imported = _imported(tree)
    private = library_private_names()
    subclasses = _library_subclass_lines(tree, imported)
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif _named_setattr(node):
            assert isinstance(node, ast.Call)
            name = node.args[1]
            assert isinstance(name, ast.Constant)
            targets = [ast.Attribute(value=node.args[0], attr=str(name.value), ctx=ast.Store())]
        line = getattr(node, "lineno", 0)
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            dotted = _dotted(target, imported)
            if dotted is not None and (path, dotted) not in GUARD:
                yield f"{path}:{line} assigns into {dotted}"
            elif target.attr in private and not _own(target, node, subclasses):
                yield f"{path}:{line} assigns {target.attr}, a private name of {'/'.join(LIBRARIES)}"
        if isinstance(node, ast.ClassDef):
            bases = [_dotted(base, imported) for base in node.bases]
            for base in filter(None, bases):
                if any(_private(part) for part in base.split(".")):
                    yield f"{path}:{node.lineno} {node.name} subclasses {base}, a private class"
            if any(bases):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and member.name in private:
                        yield f"{path}:{member.lineno} {node.name}.{member.name} overrides a private method"


def _named_setattr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"setattr", "delattr"}
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _library_subclass_lines(tree: ast.Module, imported: dict[str, str]) -> list[range]:
    """The line ranges of classes that subclass one of the libraries' classes."""
    return [
        range(node.lineno, (node.end_lineno or node.lineno) + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any(_dotted(base, imported) for base in node.bases)
    ]


def _own(target: ast.Attribute, node: ast.AST, subclasses: list[range]) -> bool:
    """`self._x = ...` in remit's own class sets remit's own attribute; in a subclass of a library class it may set
    the library's."""
    if not (isinstance(target.value, ast.Name) and target.value.id in {"self", "cls"}):
        return False
    line = getattr(node, "lineno", 0)
    return not any(line in lines for lines in subclasses)


def _shipped() -> Iterator[Path]:
    for package in SHIPPED:
        yield from (ROOT / package).rglob("*.py")


def test_no_module_of_remit_reaches_under_its_amqp_client() -> None:
    found = [line for path in _shipped() for line in findings(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_the_guard_is_the_one_exception_and_it_is_still_there() -> None:
    guard = ROOT / "app/messaging/amqp_guard.py"
    assert "pamqp.frame.unmarshal = " in guard.read_text()
    assert list(findings(guard.read_text(), "app/messaging/other.py")) != [], "outside its name it would be found"


@pytest.mark.parametrize(
    "source",
    [
        "import aiormq.connection\naiormq.connection.FrameReceiver = object",
        "from aiormq import connection as c\nc.FrameReceiver = object",
        "import pamqp.frame\nsetattr(pamqp.frame, 'unmarshal', print)",
        "def hook(channel):\n    channel._on_deliver_frame = print",
        "def hook(channel):\n    setattr(channel, '_get_frame', print)",
        "import aio_pika\nclass Mine(aio_pika.RobustChannel):\n    async def _on_open(self): pass",
        "from aiormq.connection import FrameReceiver\n"
        "class Mine(FrameReceiver):\n    async def _read_content(self): pass",
    ],
)
def test_the_check_finds_what_the_frame_receiver_used_to_do(source: str) -> None:
    assert list(findings(source, "app/x.py")) != [], source


@pytest.mark.parametrize(
    "source",
    [
        "import aio_pika\nclass Backoff(aio_pika.RobustConnection):\n    def _lost(self): self._waited = 1",
        "from pamqp import commands as spec\nclass Raw(spec.Basic.Properties):\n    def marshal(self): return b''",
        "import aiormq\nasync def consume(channel):\n    await channel.basic_consume('q', print)",
    ],
)
def test_standing_on_the_client_is_not_found(source: str) -> None:
    assert list(findings(source, "app/x.py")) == [], source
