"""The sidecar's layering rules, read from the source (rfcs/0001-architecture.md, "Folders" and
"Modules (Python)"): each package's rule, the last line of its `__init__.py`, holds; `gateway_lm.spend`
never imports the RPC layer; the chat's policy lives in the chat service that both front ends call
(never in `rpc/` or the CLI); no import circle anywhere, type-checking and deferred imports included;
and every logger is named for its module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "gateway_lm"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, load_time_only: bool, types_too: bool = True, ours_only: bool = True) -> set[str]:
    """The gateway_lm modules `path` imports (relative imports resolved); with `load_time_only`,
    those a `TYPE_CHECKING` block or a function body imports are left out; without `types_too`,
    those a `TYPE_CHECKING` block imports; without `ours_only`, other packages' too."""
    tree = ast.parse(path.read_text(), str(path))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()

    def visit(node: ast.AST, deferred: bool, typing: bool) -> None:
        for child in ast.iter_child_nodes(node):
            late = deferred or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            for_types = typing
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                late = for_types = True
            if for_types and not types_too:
                continue
            if isinstance(child, ast.ImportFrom) and not (load_time_only and deferred):
                base = package[: len(package) - child.level + 1] if child.level else []
                target = [*base, *(child.module.split(".") if child.module else [])]
                for alias in child.names:  # `from . import x` may name a module
                    candidate = ".".join([*target, alias.name])
                    found.add(candidate if _exists(candidate) else ".".join(target))
            elif isinstance(child, ast.Import) and not (load_time_only and deferred):
                found.update(a.name for a in child.names)
            visit(child, late, for_types)

    visit(tree, False, False)
    return {name for name in found if name.startswith("gateway_lm") or not ours_only}


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative / "__init__.py").is_file()


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


# The core's leaves: what any package may import. The rest of the core (the chat service, the chat
# path, the front ends and the contract) sits above the packages and is imported by none of them.
CORE_LEAVES = {
    f"gateway_lm.{name}" for name in ("messages", "settings", "money", "reasoning", "toolnames", "logs", "terminal")
}
RULED = ("offer", "request", "gateway", "tokens", "stream")
RULE = re.compile(r"It imports, besides the core's leaves: (.+)\.\s*$")


def package_rule(package: str) -> set[str]:
    """What the last line of the package's docstring allows it: backticked names, or "nothing"."""
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
    found = RULE.search(doc)
    assert found, f"{package}/__init__.py ends its docstring with its rule: It imports, besides the core's leaves: …"
    return {f"gateway_lm.{name}" for name in re.findall(r"`([\w.]+)`", found.group(1))}


@pytest.mark.parametrize("package", RULED)
def test_each_package_imports_only_what_its_rule_allows(package: str) -> None:
    allowed = package_rule(package) | CORE_LEAVES | {f"gateway_lm.{package}", "gateway_lm"}
    offenders = {
        name: sorted(
            i for i in _imports(path, load_time_only=False) if not any(i == a or i.startswith(f"{a}.") for a in allowed)
        )
        for name, path in MODULES.items()
        if name.startswith(f"gateway_lm.{package}.") or name == f"gateway_lm.{package}"
    }
    assert {k: v for k, v in offenders.items() if v} == {}, f"{package}/ imports past its rule"


def test_every_module_of_the_core_is_a_leaf_or_above_every_package() -> None:
    """The flat core holds the leaves every package may import and the chat service above them; a
    module that is neither has a room of its own to go to."""
    above = {f"gateway_lm.{name}" for name in ("chats", "pipeline", "cli", "contract", "__main__")}
    core = {name for name, path in MODULES.items() if name.count(".") == 1 and path.name != "__init__.py"}
    assert core - CORE_LEAVES - above == set()
    leaves_up = {
        name: sorted(i for i in _imports(MODULES[name], load_time_only=False) if i in above) for name in CORE_LEAVES
    }
    assert {k: v for k, v in leaves_up.items() if v} == {}


def test_spend_never_imports_the_rpc_layer() -> None:
    offenders = {
        name: sorted(i for i in _imports(path, load_time_only=False) if i.startswith("gateway_lm.rpc"))
        for name, path in MODULES.items()
        if name.startswith("gateway_lm.spend")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


# A chat's sequence: the path itself (translate, fit, client, adapt), the learned limits and
# calibration, the windows they move, and the spend guard and settling.
CHAT_POLICY = {
    "gateway_lm.pipeline",
    "gateway_lm.request.fit",
    "gateway_lm.tokens.accounting",
    "gateway_lm.offer.budget",
    "gateway_lm.spend.ledger",
}
FRONT_ENDS = {name for name in MODULES if name.startswith("gateway_lm.rpc")} | {"gateway_lm.cli"}


def test_the_front_ends_chat_through_the_service() -> None:
    """`rpc/` validates params, calls the chat service and shapes its answers; the CLI calls the same
    service. Neither runs a step of the chat itself (types for type checking excepted)."""
    policy = {
        name: sorted(_imports(MODULES[name], load_time_only=False, types_too=False) & CHAT_POLICY)
        for name in sorted(FRONT_ENDS)
    }
    assert {name: found for name, found in policy.items() if found} == {}
    for front_end in ("gateway_lm.cli", "gateway_lm.rpc.methods"):
        assert "gateway_lm.chats" in _imports(MODULES[front_end], load_time_only=False), front_end


def test_the_chat_service_knows_no_front_end() -> None:
    """Nothing of JSON-RPC, pygls or the terminal: the service is what both share."""
    found = _imports(MODULES["gateway_lm.chats"], load_time_only=False, ours_only=False)
    assert {i for i in found if i.split(".")[0] in ("pygls", "lsprotocol") or i in FRONT_ENDS} == set()


def test_no_import_circle_anywhere() -> None:
    """No module reaches itself through what it imports, at load time or not (a type-checking or
    deferred import is a circle of concepts too, even when Python would load it)."""
    graph = {name: _imports(path, load_time_only=False) & MODULES.keys() for name, path in MODULES.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if target == name or target == "gateway_lm":
                continue  # the package's own __init__ (its version) imports nothing back
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target] if target in path else [name, target])
            elif target not in state:
                walk(target, [*path, target])
        state[name] = 2

    for name in graph:
        if name not in state:
            walk(name, [name])
    assert cycles == []


def test_every_logger_is_named_for_its_module() -> None:
    misnamed = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "logging.getLogger" and node.args:
                if ast.unparse(node.args[0]) != "__name__" and name != "gateway_lm.logs":
                    misnamed.append(f"{name}: {ast.unparse(node)}")
    assert misnamed == []
