"""The layers' contract, read from the source (AST): what the engine may import and do.

The engine (explorer/engine) is the library every front end shares; it must never
depend on a front end (the TUI, the CLI, the QA or quality commands, the text reports,
the benchmarks) and never write to the terminal: it returns data and the caller
renders it. The walk covers every module of the package, so a new one is checked too.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
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


def test_the_walk_sees_every_engine_module() -> None:
    assert len(MODULES) > 20 and ENGINE / "pipeline.py" in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_engine_imports_no_front_end(path: Path) -> None:
    bad = [
        f"line {line}: {module}" for line, module in imported_modules(path) if _forbidden(module)
    ]
    assert not bad, f"{path.name} imports a front end: {bad}"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_engine_writes_nothing_to_the_terminal(path: Path) -> None:
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
    assert not bad, f"{path.name} talks to the terminal: {bad}"


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
    named = set(MODULE_NAME.findall(_engine_code_map()))
    modules = {path.name for path in MODULES if path.name != "__init__.py"}
    unnamed = sorted(modules - named)
    assert not unnamed, f"engine modules missing from the architecture's code map: {unnamed}"


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
