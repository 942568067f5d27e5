"""The labelled routing benchmarks: which library each prompt file belongs to, and how to read it.

`benchmarks/libraries/` holds byte-for-byte copies of five public skill libraries (see its
README for sources and licences); `benchmarks/data/` holds prompts written by hand against
them, one train and one validation file per evaluation library. Two facts live here rather
than in the files so that every consumer (tests, `eval`, `calibrate`, the reranker's
training script) agrees on them:

* which skill roots make up each evaluation library (anthropic + wshobson are evaluated as
  one 193-skill library, the way a user with both installed would see them), and
* the sub-kind of each negative. The case reader knows the kinds direct, indirect,
  confusable and negative; a near-miss (a prompt that brushes a skill's topic but asks
  nothing of it) is a `negative` there, and a `# group: near-miss` comment above it says
  which sort of negative it is. Comments are invisible to the reader, so nothing about
  its semantics changes.

The 2,289-skill openclaw library is stored as the `skills.jsonl` it was published as
(`name` and `description` only); `materialise_jsonl` writes it out as SKILL.md
directories so the engine reads it like any other root. `benchmarks/libraries.toml` is
the same table in the form `calibrate --by-library`, `eval --by-library` and
`bench --only quality` read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from explorer.engine.qa.cases import GROUPS, Case, load_cases
from explorer.engine.qa.libraries import materialise_jsonl as engine_materialise

BENCHMARKS = Path(__file__).resolve().parent
LIBRARIES_DIR = BENCHMARKS / "libraries"
DATA_DIR = BENCHMARKS / "data"

SPLITS = ("train", "val")

OPENCLAW_JSONL = LIBRARIES_DIR / "openclaw-large" / "skills.jsonl"


@dataclass(frozen=True)
class Library:
    """One evaluation library: its name in file names, and the roots that make it up."""

    name: str
    roots: tuple[str, ...]  # folders under benchmarks/libraries/
    jsonl: bool = False  # stored as skills.jsonl: materialise before routing
    held_back: bool = False  # evaluation only: never train a model on it

    def cases_file(self, split: str) -> Path:
        if split not in SPLITS:
            raise ValueError(f"split {split!r}; expected one of {', '.join(SPLITS)}")
        return DATA_DIR / f"{self.name}.{split}.tsv"


LIBRARIES: dict[str, Library] = {
    library.name: library
    for library in (
        Library("anthropic-wshobson", ("anthropic-apache", "wshobson-agents"), held_back=True),
        Library("k-dense-scientific-skills", ("k-dense-scientific-skills",), held_back=True),
        Library("alirezarezvani-claude-skills", ("alirezarezvani-claude-skills",)),
        Library("openclaw-large", ("openclaw-large",), jsonl=True),
    )
}

# Skills of the held-back libraries that openclaw-large also carries under the same name:
# a model trained on openclaw must leave them out, or it has seen evaluation skills.
HELD_BACK_COPIES = (
    "skill-creator",
    "frontend-design",
    "theme-factory",
    "mcp-builder",
    "literature-review",
)


def read_groups(path: str | os.PathLike[str]) -> dict[int, str]:
    """Line number -> group for every case line, from the `# group: X` comments above it
    (the engine's TSV reader keeps them as `Case.group`); a line before any group comment
    takes its kind as its group."""
    return {case.line or 0: case.category for case in load_cases(path).cases}


def load_labelled(path: str | os.PathLike[str]) -> list[tuple[Case, str]]:
    """The cases of one benchmark file, each with its group (near-miss or not)."""
    return [(case, case.category) for case in load_cases(path).cases]


def materialise_jsonl(jsonl: str | os.PathLike[str], destination: str | os.PathLike[str]) -> Path:
    """Write each `{"name", "description"}` line as `<destination>/<NNNN>-<slug>/SKILL.md`.

    The engine's own writer (`explorer.engine.qa.libraries`), so `eval --by-library`,
    `calibrate` and these helpers route the very same files. The directory's number is the
    line's, so of two lines with the same name the first wins (first path wins), and the id
    is the `name` unchanged: non-slug names such as "PDF Merge & Split" stay ids.
    """
    return engine_materialise(jsonl, destination)


@contextmanager
def library_roots(library: Library | str) -> Iterator[list[Path]]:
    """The skill roots to route over, materialising a jsonl library in a temp dir meanwhile."""
    lib = LIBRARIES[library] if isinstance(library, str) else library
    if not lib.jsonl:
        yield [LIBRARIES_DIR / root for root in lib.roots]
        return
    work = Path(tempfile.mkdtemp(prefix=f"{lib.name}-"))
    try:
        yield [materialise_jsonl(LIBRARIES_DIR / lib.roots[0] / "skills.jsonl", work / "skills")]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def counts_table() -> str:
    """Prompts per library, split and group, as the Markdown table of benchmarks/data/README.md."""
    rows = ["| library | split | " + " | ".join(GROUPS) + " | total |"]
    rows.append("|---|---|" + "---:|" * (len(GROUPS) + 1))
    totals = dict.fromkeys(GROUPS, 0)
    for lib in LIBRARIES.values():
        for split in SPLITS:
            groups = [group for _, group in load_labelled(lib.cases_file(split))]
            counts = [groups.count(group) for group in GROUPS]
            for group, count in zip(GROUPS, counts, strict=True):
                totals[group] += count
            cells = " | ".join(str(count) for count in counts)
            rows.append(f"| {lib.name} | {split} | {cells} | {len(groups)} |")
    cells = " | ".join(str(totals[group]) for group in GROUPS)
    rows.append(f"| **all** | | {cells} | {sum(totals.values())} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks.datasets materialise DEST`: write openclaw-large out as SKILL.md dirs.

    `python -m benchmarks.datasets roots LIB` prints the `--skills` arguments for a library
    (materialised libraries print the path to materialise them to instead).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.datasets")
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("materialise", help="write skills.jsonl out as SKILL.md directories")
    make.add_argument("destination")
    make.add_argument("--jsonl", default=str(OPENCLAW_JSONL))
    roots = sub.add_parser("roots", help="print the --skills arguments of a library")
    roots.add_argument("library", choices=sorted(LIBRARIES))
    sub.add_parser("counts", help="a Markdown table of prompts per library, split and group")
    args = parser.parse_args(argv)
    if args.command == "materialise":
        print(materialise_jsonl(args.jsonl, args.destination))
        return 0
    if args.command == "counts":
        print(counts_table())
        return 0
    lib = LIBRARIES[args.library]
    if lib.jsonl:
        print("materialise first: python -m benchmarks.datasets materialise DEST; --skills DEST")
        return 0
    print(" ".join(f"--skills {LIBRARIES_DIR / root}" for root in lib.roots))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
