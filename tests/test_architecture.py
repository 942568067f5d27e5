"""The layers' contract, read from the source (AST): what the engine may import and do.

The engine (explorer/engine) is the library every front end shares; it must never
depend on a front end (the TUI, the CLI, the QA or quality commands, the text reports,
the benchmarks) and never write to the terminal: it returns data and the caller
renders it. Inside it, each room (sub-package) imports only the rooms below it (ROOMS);
front ends import only the engine's public names: `explorer.engine`'s, or a room's. The
walk covers every module of the package, so a new one is checked too.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "explorer" / "engine"
FORBIDDEN = (
    "explorer.tui",
    "explorer.cli",
    "explorer.qa",  # qa_report and any qa_* module
    "explorer.report",
    "explorer.quality",  # quality_report
    "explorer.bench",
    "explorer.terminal",
)
MODULES = sorted(ENGINE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per test process (several checks walk each)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an `import` or `from ... import` names, relative ones resolved."""
    tree = parsed(path)
    package = (
        _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else (_module_name(path))
    )
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _forbidden(module: str) -> bool:
    return any(module == prefix or module.startswith(prefix) for prefix in FORBIDDEN)


def _id(path: Path) -> str:
    return str(path.relative_to(ENGINE))


def _by_module(paths: list[Path], check: Callable[[Path], list[str]]) -> dict[str, list[str]]:
    """What `check` finds in each module, for the modules where it finds anything: one test
    per rule, its failure naming every module and line."""
    return {str(path.relative_to(ENGINE.parent)): found for path in paths if (found := check(path))}


def test_the_walk_sees_every_engine_module() -> None:
    assert len(MODULES) > 20 and ENGINE / "route" / "pipeline.py" in MODULES


def test_engine_imports_no_front_end() -> None:
    bad = _by_module(MODULES, _front_end_imports)
    assert not bad, f"engine modules that import a front end: {bad}"


def _front_end_imports(path: Path) -> list[str]:
    return [
        f"line {line}: {module}" for line, module in imported_modules(path) if _forbidden(module)
    ]


def test_engine_writes_nothing_to_the_terminal() -> None:
    bad = _by_module(MODULES, _terminal_use)
    assert not bad, f"engine modules that talk to the terminal: {bad}"


def _terminal_use(path: Path) -> list[str]:
    tree = parsed(path)
    bad = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (node.func.id in ("print", "input", "breakpoint"))
        ):
            bad.append(f"line {node.lineno}: {node.func.id}()")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr", "stdin")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            bad.append(f"line {node.lineno}: sys.{node.attr}")
    return bad


def test_the_checks_catch_what_they_name(tmp_path: Path) -> None:
    """The contract's own test: a module that breaks it is caught (so this file can fail)."""
    sample = tmp_path / "explorer" / "engine" / "sample.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "from explorer.tui.app import ExplorerApp\nimport explorer.cli\nfrom .. import report\n",
        encoding="utf-8",
    )
    global ENGINE
    saved, ENGINE = ENGINE, tmp_path / "explorer" / "engine"
    try:
        names = [module for _line, module in imported_modules(sample)]
    finally:
        ENGINE = saved
    assert [name for name in names if _forbidden(name)] == [
        "explorer.tui.app",
        "explorer.tui.app.ExplorerApp",
        "explorer.cli",
        "explorer.report",
    ]


# docs/architecture.md's code map must name what is there, and all of the engine.
ARCHITECTURE = ENGINE.parent.parent / "docs" / "architecture.md"
MODULE_NAME = re.compile(r"(?<![\w/.])((?:[\w]+/)*\w+\.py)\b")


def _engine_code_map() -> str:
    """The code map's engine part."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    code_map = text.split("## Code map", 1)[1].split("\n## ", 1)[0]
    return code_map.split("### `explorer/engine/`", 1)[1].split("\n### ", 1)[0]


def _exists(name: str) -> bool:
    root = ENGINE.parent.parent
    if (root / name).is_file():
        return True
    return any(str(path).endswith("/" + name) for path in (root / "explorer").rglob("*.py"))


def test_every_module_the_architecture_names_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(MODULE_NAME.findall(text))
    assert len(named) > 30
    missing = sorted(name for name in named if not _exists(name))
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_the_code_map_names_every_engine_module() -> None:
    """Each by its path in the engine (`route/pipeline.py`), under its room's heading."""
    code_map = _engine_code_map()
    named = set(MODULE_NAME.findall(code_map))
    modules = {_id(path) for path in MODULES if path.name != "__init__.py"}
    unnamed = sorted(modules - named)
    assert not unnamed, f"engine modules missing from the architecture's code map: {unnamed}"
    rooms = re.findall(r"^#### `(\w+)/`", code_map, re.MULTILINE)
    assert rooms == list(ROOMS), "the code map's rooms, lowest first, as ROOMS has them"


# The rooms, lowest layer first, and what each may import besides itself: a room sees only
# the rooms before it. host and qa are siblings: neither imports the other.
ROOMS: dict[str, tuple[str, ...]] = {
    "base": (),
    "discovery": ("base",),
    "inference": ("base", "discovery"),
    "index": ("base", "discovery", "inference"),
    "route": ("base", "discovery", "inference", "index"),
    "host": ("base", "discovery", "inference", "index", "route"),
    "qa": ("base", "discovery", "inference", "index", "route"),
    "author": ("base", "discovery", "inference", "index", "route", "qa"),
}
ROOM_MODULES = [path for path in MODULES if len(path.relative_to(ENGINE).parts) == 2]
FRONT_ENDS = sorted(
    path
    for path in (ENGINE.parent).rglob("*.py")
    if path.relative_to(ENGINE.parent).parts[0] in ("cli", "tui", "bench")
    or (path.parent == ENGINE.parent and path.name not in ("__init__.py",))
)


def test_the_engine_is_its_rooms() -> None:
    """Every module lives in a room; the package itself holds only its public names."""
    loose = sorted(path.name for path in ENGINE.glob("*.py"))
    assert loose == ["__init__.py", "_lazy.py"], loose
    rooms = sorted(path.name for path in ENGINE.iterdir() if path.is_dir() and path.name[0] != "_")
    assert rooms == sorted(ROOMS)
    assert all((ENGINE / room / "__init__.py").is_file() for room in ROOMS)


def _engine_imports(path: Path) -> list[tuple[int, str]]:
    """Each engine module a module imports: `from <package> import <submodule>` counts as
    that submodule, `from <module> import <name>` as the module."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            directory = ENGINE.parent.parent.joinpath(*node.module.split("."))
            if directory.is_dir():
                found += [
                    (node.lineno, f"{node.module}.{a.name}")
                    if (directory / f"{a.name}.py").is_file()
                    else (node.lineno, node.module)
                    for a in node.names
                ]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.startswith("explorer.engine.")]


def test_a_room_imports_only_the_rooms_below_it() -> None:
    """And it imports their modules, never a package's lazy public names (which would tie
    the layers in a knot and import more than a module needs)."""
    bad = _by_module(ROOM_MODULES, lambda path: _room_violations(path, path.parent.name))
    assert not bad, bad


def _room_violations(path: Path, room: str) -> list[str]:
    allowed = {room, *ROOMS[room]}
    bad = []
    for line, module in _engine_imports(path):
        parts = module.split(".")
        if module == "explorer.engine._lazy":
            continue
        if len(parts) != 4 or parts[2] not in ROOMS:
            bad.append(f"line {line}: {module} (a package's names, not a module)")
        elif parts[2] not in allowed:
            bad.append(f"line {line}: {module} ({parts[2]} is not below {room})")
    return bad


def test_the_room_rule_catches_what_it_names(tmp_path: Path) -> None:
    """A route module that imports QA, or a room's public names, is caught."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from explorer.engine.qa.evaluate import evaluate\n"
        "from explorer.engine.index import LiveIndex\n"
        "from explorer.engine.index.snapshot import Index\n"
        "from explorer.engine.base import paths\n",
        encoding="utf-8",
    )
    assert _room_violations(sample, "route") == [
        "line 1: explorer.engine.qa.evaluate (qa is not below route)",
        "line 2: explorer.engine.index (a package's names, not a module)",
    ]


def _public(package: str) -> set[str]:
    """The names a package of the engine exports (its `__all__`)."""
    module = __import__(package, fromlist=["__all__"])
    return set(module.__all__)


@pytest.mark.parametrize("package", ["explorer.engine", *(f"explorer.engine.{r}" for r in ROOMS)])
def test_every_public_name_resolves_and_none_hides_a_module(package: str) -> None:
    """Each name is there when asked for (the lazy lookup finds it), and no name of a room
    is also the name of one of its modules: importing that module would replace the
    name with the module (such a name belongs in explorer.engine's own list)."""
    import importlib

    module = importlib.import_module(package)
    names = _public(package)
    assert all(getattr(module, name) is not None for name in names)
    directory = ENGINE.joinpath(*package.split(".")[2:])
    submodules = {path.stem for path in directory.glob("*.py")} | {
        path.name for path in directory.iterdir() if path.is_dir()
    }
    tables = ast.literal_eval(
        next(
            node.value
            for node in parsed(directory / "__init__.py").body
            if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS"
        )
    )
    hidden = sorted(name for name in names if name in submodules and tables[name] != "<module>")
    assert not hidden, f"{package}: public names that are also its modules: {hidden}"


def test_the_engine_names_a_dozen_for_everyone() -> None:
    assert 10 <= len(_public("explorer.engine")) <= 16
    assert {"decide", "Decision", "Config", "open_library", "answer_hook"} <= _public(
        "explorer.engine"
    )


def test_front_ends_import_only_public_names() -> None:
    """From `explorer.engine` or a room's package, and only what its `__all__` lists: what a
    module of the engine holds otherwise is its own business."""
    bad = _by_module(FRONT_ENDS, _private_engine_imports)
    assert not bad, bad


def _private_engine_imports(path: Path) -> list[str]:
    packages = {"explorer.engine", *(f"explorer.engine.{room}" for room in ROOMS)}
    bad = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            bad += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name.startswith("explorer.engine")
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("explorer.engine"):
            package = node.module or ""
            if package not in packages:
                bad.append(f"line {node.lineno}: from {package} (a module, not a package)")
                continue
            public = _public(package)
            bad += [
                f"line {node.lineno}: {package}.{a.name} is not public"
                for a in node.names
                if a.name not in public
            ]
    return bad


def test_the_stores_fingerprint_names_files_that_exist() -> None:
    """The persisted store keys itself on the engine's source files it depends on."""
    from explorer.engine.index.store import _CODE

    assert all((ENGINE / name).is_file() for name in _CODE), _CODE


def test_a_private_textual_import_is_bounded_below_the_next_major() -> None:
    """A private module (`textual.widgets._footer`) may change in any major release: while
    the package imports one, pyproject.toml must keep textual below its next major."""
    root = ENGINE.parent.parent
    private = [
        f"{path.relative_to(root)}: {module}"
        for path in sorted((root / "explorer").rglob("*.py"))
        if "textual" in path.read_text(encoding="utf-8")  # parse only what may import it
        for _line, module in imported_modules(path)
        if module.startswith("textual.") and any(p.startswith("_") for p in module.split("."))
    ]
    if not private:
        return
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    textual = [req for req in project["dependencies"] if re.match(r"textual\b", req)]
    assert textual and re.search(r"<\s*\d+", textual[0]), (
        f"{private} use private textual API; bound it in pyproject.toml: {textual}"
    )
