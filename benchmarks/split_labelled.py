"""Add hand-written prompts to a library's train/validation files, with a fixed, additive split.

    python -m benchmarks.split_labelled LIBRARY NEW_PROMPTS.tsv [--seed 16]

`NEW_PROMPTS.tsv` has one prompt a line: `group TAB expected-ids TAB prompt`, where group is
one of direct, indirect, confusable, near-miss, negative and expected-ids is `(none)` for
the last two. The rule, per library and group:

* prompts already in train or validation stay where they are (a split is never redrawn);
* new prompts are shuffled with `random.Random(f"{seed}:{library}:{group}")`, then each in
  turn goes to validation while validation holds fewer than round(35 % of the group so far),
  else to train. On an empty library this is a stratified 65/35 split by group.

The files are rewritten whole: a header, then one `# group:` section per group with the
existing lines first, in their order, and the new ones after.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.datasets import LIBRARIES, Library, load_labelled
from explorer.engine.qa.cases import GROUPS

DEFAULT_SEED = 16
VALIDATION_SHARE = 0.35
KIND_OF_GROUP = {
    "direct": "direct",
    "indirect": "indirect",
    "confusable": "confusable",
    "near-miss": "negative",
    "negative": "negative",
}


@dataclass(frozen=True)
class Row:
    group: str
    expect: tuple[str, ...]
    prompt: str

    def line(self) -> str:
        ids = ",".join(self.expect) if self.expect else "(none)"
        return f"{ids}\t{KIND_OF_GROUP[self.group]}\t{self.prompt}"


def _key(prompt: str) -> str:
    return " ".join(prompt.lower().split())


def read_pool(path: Path) -> list[Row]:
    rows: list[Row] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        fields = raw.split("\t")
        if len(fields) != 3:
            raise SystemExit(
                f"{path}:{number}: expected group, ids, prompt (3 tab-separated fields)"
            )
        group, ids, prompt = (field.strip() for field in fields)
        if group not in GROUPS:
            raise SystemExit(f"{path}:{number}: unknown group {group!r}")
        expect = () if ids == "(none)" else tuple(part.strip() for part in ids.split(","))
        rows.append(Row(group, expect, prompt))
    return rows


def read_split(path: Path) -> list[Row]:
    if not path.exists():
        return []
    return [Row(group, case.expect, case.prompt) for case, group in load_labelled(path)]


def assign(
    library: str, train: Sequence[Row], val: Sequence[Row], new: Iterable[Row], seed: int
) -> tuple[list[Row], list[Row]]:
    """Append the new rows to train or validation by the rule in the module docstring."""
    train, val = list(train), list(val)
    seen = {_key(row.prompt) for row in (*train, *val)}
    fresh: dict[str, list[Row]] = {group: [] for group in GROUPS}
    for row in new:
        if _key(row.prompt) in seen:
            continue
        seen.add(_key(row.prompt))
        fresh[row.group].append(row)
    for group in GROUPS:
        rows = fresh[group]
        random.Random(f"{seed}:{library}:{group}").shuffle(rows)
        in_train = sum(1 for row in train if row.group == group)
        in_val = sum(1 for row in val if row.group == group)
        for row in rows:
            total = in_train + in_val + 1
            if in_val < int(VALIDATION_SHARE * total + 0.5):
                val.append(row)
                in_val += 1
            else:
                train.append(row)
                in_train += 1
    return train, val


def render(library: Library, split: str, rows: Sequence[Row], seed: int) -> str:
    roots = " + ".join(library.roots)
    use = (
        "held back: evaluation only, never train a model on it"
        if library.held_back
        else "may be used for training (not its validation split for calibration)"
    )
    header = [
        f"# {library.name}: {'validation' if split == 'val' else 'train'} split",
        f"# Skills: benchmarks/libraries/{roots} ({use}).",
        "# Prompts written by hand for this benchmark; see benchmarks/data/README.md.",
        "# Format (the reference router's TSV): expected-ids TAB kind TAB prompt;",
        "# (none) = nothing should be injected; several ids = any one of them is right.",
        "# '# group:' lines name the sub-kind; near-miss cases are kind 'negative'.",
        f"# Split: benchmarks/split_labelled.py, seed {seed}, 35 % validation per group, additive.",
    ]
    lines = list(header)
    for group in GROUPS:
        members = [row for row in rows if row.group == group]
        if not members:
            continue
        lines += ["", f"# group: {group}"]
        lines += [row.line() for row in members]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.split_labelled")
    parser.add_argument("library", choices=sorted(LIBRARIES))
    parser.add_argument("pool", type=Path, help="new prompts: group TAB ids TAB prompt")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    library = LIBRARIES[args.library]
    train_path, val_path = library.cases_file("train"), library.cases_file("val")
    train, val = assign(
        library.name, read_split(train_path), read_split(val_path), read_pool(args.pool), args.seed
    )
    train_path.parent.mkdir(parents=True, exist_ok=True)
    train_path.write_text(render(library, "train", train, args.seed), encoding="utf-8")
    val_path.write_text(render(library, "val", val, args.seed), encoding="utf-8")
    print(f"{library.name}: {len(train)} train, {len(val)} validation")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
