"""Several labelled libraries at once: a manifest of (skills, train cases, validation cases).

Routing quality depends on the library (its size, how alike its skills are), so the
calibration and the quality benchmark run over several real libraries together. A
manifest names each one; paths in it are relative to the manifest file:

    [[library]]
    name = "k-dense"
    skills = ["libraries/k-dense"]          # one root or a list of roots
    train = "data/k-dense.train.tsv"        # cases calibration may see
    validation = "data/k-dense.val.tsv"     # cases it never sees

A root that is a `.jsonl` file (one `{"name", "description"}` object a line, the way
large community indexes are published) is written out as SKILL.md directories in a
temporary folder while the library is in use (`library_roots`).

On the command line the same is `--library DIR=TRAIN,VALIDATION` (or `DIR=CASES`, where
the cases file's own split, or a seeded one, is used), the name being DIR's base name.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from explorer.engine.base.config import Config
from explorer.engine.base.toml_reading import TomlUnreadable, read_toml_text
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.calibrate import split_cases
from explorer.engine.qa.cases import Case, CaseError, load_cases

DEFAULT_MANIFEST = Path("benchmarks") / "libraries.toml"
_KEYS = frozenset({"name", "skills", "train", "validation", "cases", "source", "licence"})


class LibraryError(ValueError):
    """A manifest or --library value that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class LibrarySpec:
    """Where one library's skills and labelled cases are."""

    name: str
    roots: tuple[str, ...]
    train: str | None = None
    validation: str | None = None
    cases: str | None = None  # one file holding both splits (or none: a seeded split)


@dataclass(frozen=True)
class LibraryCases:
    """One library's cases, each tagged with its split."""

    spec: LibrarySpec
    train: tuple[Case, ...]
    validation: tuple[Case, ...]
    warnings: tuple[str, ...]
    split_note: str


def read_manifest(path: str | os.PathLike[str]) -> list[LibrarySpec]:
    """Read a manifest TOML file; every path in it is relative to the file."""
    file = Path(path)
    try:
        data = read_toml_text(file.read_bytes())
    except OSError as error:
        raise LibraryError(f"{file}: cannot read manifest: {error.strerror or error}") from error
    except TomlUnreadable as error:
        raise LibraryError(f"{file}: {error}") from error
    tables = data.get("library")
    if not isinstance(tables, list) or not tables:
        raise LibraryError(f"{file}: no [[library]] tables")
    base = file.parent
    specs: list[LibrarySpec] = []
    for number, table in enumerate(tables, start=1):
        where = f"{file}: library {number}"
        if not isinstance(table, dict):
            raise LibraryError(f"{where}: not a table")
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise LibraryError(f"{where}: unknown key(s) {', '.join(unknown)}")
        name = table.get("name")
        if not isinstance(name, str) or not name:
            raise LibraryError(f"{where}: 'name' is missing")
        roots = table.get("skills")
        if isinstance(roots, str):
            roots = [roots]
        if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
            raise LibraryError(f"{where} ({name}): 'skills' must be a path or a list of paths")

        paths: dict[str, str | None] = {}
        for key in ("train", "validation", "cases"):
            value = table.get(key)
            if value is not None and not isinstance(value, str):
                raise LibraryError(f"{where} ({name}): {key!r} must be a path")
            paths[key] = None if value is None else str(base / value)
        spec = LibrarySpec(
            name=name,
            roots=tuple(str(base / root) for root in roots),
            train=paths["train"],
            validation=paths["validation"],
            cases=paths["cases"],
        )
        _check(spec, where)
        specs.append(spec)
    names = [spec.name for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise LibraryError(f"{file}: duplicate library name(s) {', '.join(duplicates)}")
    return specs


def parse_library_arg(text: str) -> LibrarySpec:
    """`DIR=CASES` or `DIR=TRAIN,VALIDATION` (NAME:DIR=... to name it yourself)."""
    target, sep, files = text.partition("=")
    if not sep or not target or not files:
        raise LibraryError(f"--library {text!r}: expected DIR=CASES or DIR=TRAIN,VALIDATION")
    name, colon, directory = target.partition(":")
    drive = os.name == "nt" and len(name) == 1 and name.isalpha()  # C:\ is no name
    if not colon or os.sep in name or drive:
        name, directory = Path(target.rstrip("/\\")).name, target
    parts = [part for part in files.split(",") if part]
    if len(parts) == 1:
        spec = LibrarySpec(name, (directory,), cases=parts[0])
    elif len(parts) == 2:
        spec = LibrarySpec(name, (directory,), train=parts[0], validation=parts[1])
    else:
        raise LibraryError(f"--library {text!r}: give one cases file, or train,validation")
    _check(spec, f"--library {text!r}")
    return spec


def _check(spec: LibrarySpec, where: str) -> None:
    if spec.cases is None and spec.train is None:
        raise LibraryError(f"{where} ({spec.name}): give 'train' (and 'validation') or 'cases'")
    if spec.cases is not None and (spec.train or spec.validation):
        raise LibraryError(f"{where} ({spec.name}): give either 'cases' or 'train'/'validation'")


def load_library_cases(spec: LibrarySpec, seed: int = 0) -> LibraryCases:
    """The library's cases tagged train/validation (a file's own split wins over its role)."""
    try:
        if spec.cases is not None:
            loaded = load_cases(spec.cases)
            split = split_cases(loaded.cases, seed)
            return LibraryCases(spec, split.train, split.validation, loaded.warnings, split.note)
        assert spec.train is not None
        train = load_cases(spec.train)
        validation = load_cases(spec.validation) if spec.validation else None
    except CaseError as error:
        raise LibraryError(f"{spec.name}: {error}") from error
    warnings = list(train.warnings) + list(validation.warnings if validation else ())
    train_cases = _tagged(train.cases, "train")
    validation_cases = _tagged(validation.cases, "validation") if validation else ()
    seen = {case.prompt for case in train_cases}
    leaked = [case for case in validation_cases if case.prompt in seen]
    if leaked:
        warnings.append(
            f"{spec.name}: {len(leaked)} validation prompt(s) also in train, e.g. "
            f"{leaked[0].prompt!r}"
        )
    note = "train and validation files" if validation else "train file only"
    return LibraryCases(spec, train_cases, validation_cases, tuple(warnings), note)


def _tagged(cases: Sequence[Case], split: str) -> tuple[Case, ...]:
    return tuple(dataclasses.replace(case, split=split) for case in cases)


def materialise_jsonl(jsonl: str | os.PathLike[str], destination: str | os.PathLike[str]) -> Path:
    """Each `{"name", "description"}` line as `<destination>/<NNNN>-<slug>/SKILL.md`.

    Numbered by line, so discovery keeps the file's order and, for a name given twice,
    the first line (§1.2: first path wins). The name is kept as it is.
    """
    target = Path(destination)
    target.mkdir(parents=True, exist_ok=True)
    lines = Path(jsonl).read_text(encoding="utf-8").splitlines()
    width = len(str(len(lines)))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            name, description = str(record["name"]), str(record["description"])
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise LibraryError(
                f"{jsonl}:{number}: not a name/description object ({error})"
            ) from error
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "skill"
        directory = target / f"{number:0{width}d}-{slug}"
        directory.mkdir(exist_ok=True)
        # A literal block keeps any text as it is for both the YAML reader and the
        # reference's lenient line reader (which does not undo JSON escapes).
        block = "\n".join(f"  {line}" for line in description.splitlines() or [""])
        front = (
            f"---\nname: {json.dumps(name, ensure_ascii=False)}\n"
            f"description: |-\n{block}\n---\n# {name}\n"
        )
        (directory / "SKILL.md").write_text(front, encoding="utf-8")
    return target


@contextmanager
def library_roots(spec: LibrarySpec) -> Iterator[list[str]]:
    """The roots to index; `.jsonl` roots are materialised in a temporary folder meanwhile."""
    work: Path | None = None
    roots: list[str] = []
    try:
        for number, root in enumerate(spec.roots):
            if root.endswith(".jsonl") and Path(root).is_file():
                work = work or Path(tempfile.mkdtemp(prefix="skill-explorer-jsonl-"))
                roots.append(str(materialise_jsonl(root, work / f"{number}-{Path(root).stem}")))
            else:
                roots.append(root)
        yield roots
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


@contextmanager
def open_libraries(
    specs: Sequence[LibrarySpec],
    config: Config,
    cache_dir: str | None = None,
    *,
    warn: Callable[[str], None] | None = None,
) -> Iterator[list[tuple[LibraryCases, Index]]]:
    """Each library's cases and index, with one model load and one embedding cache for
    all of them; `.jsonl` roots stay materialised until the block ends."""
    from explorer.engine.index.opening import open_engine, open_library

    engine = open_engine(config, cache_dir)
    notes = list(engine.warnings)
    loaded: list[tuple[LibraryCases, Index]] = []
    with ExitStack() as stack:
        for spec in specs:
            cases = load_library_cases(spec)
            notes += cases.warnings
            roots = stack.enter_context(library_roots(spec))
            index = open_library(roots, config, engine=engine)
            if not len(index):
                raise LibraryError(f"{spec.name}: no valid skills under {', '.join(roots)}")
            loaded.append((cases, index))
        if warn is not None:
            for note in notes:
                warn(f"warning: {note}")
        yield loaded
