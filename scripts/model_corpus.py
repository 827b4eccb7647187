"""Run a corpus of real models on a real torch and record every ATen overload each path dispatches.

    # 1. run the corpus (hours of CPU on a laptop core; one record per model and path, resumable):
    nice -n 15 TORCH_ENV/bin/python scripts/model_corpus.py run -o /tmp/corpus-2.14.1.jsonl
    # 2. turn the records into the shipped table (any python; no torch needed):
    python scripts/model_corpus.py table /tmp/corpus-2.14.1.jsonl -o bot/usage/data/models-2.14.1.tsv.xz
    # one check of the eager recorder against torch.profiler (prints a comparison):
    TORCH_ENV/bin/python scripts/model_corpus.py profiler-check resnet18

TORCH_ENV is a virtual environment with the torch release to record and the model libraries the
corpus builds from (torchvision, timm, transformers, diffusers); a family whose library is missing
is recorded as skipped, with the reason. Nothing is downloaded: every model is built from its
definition or a config written here, with random weights (HF_HUB_OFFLINE=1 is set).

Paths recorded per model (what reaches each kind of backend, `opdrift.usage.models`):

- eager_inference: eval mode under no_grad, the ops a TorchDispatchMode sees (below Autograd, the
  key an eager backend's kernels are registered at);
- eager_training: one step: forward, a loss, backward, clip_grad_norm_, AdamW.step, as above;
- export_core: torch.export.export, then run_decompositions() with PyTorch's Core-ATen table;
- export_torch_mlir: the same exported program, run_decompositions with torch-mlir's table (the
  DEFAULT_DECOMPOSITIONS list of python/torch_mlir/extras/fx_decomp_util.py, read from the vendored
  checkout tests/data/backends/real/torch-mlir.checkout.tar.xz and built with get_decompositions);
- functional: the functionalized joint forward+backward graph aot_export_module traces (what a
  functional backend such as XLA receives; no decomposition table); the inference graph when the
  joint trace fails, and the record says so.

A path that fails is recorded as failed with a one-line reason, never dropped. The script never runs
in the tests: they read the shipped tables only.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import json
import lzma
import os
import platform
import signal
import subprocess
import sys
import tarfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MLIR_CHECKOUT = ROOT / "tests" / "data" / "backends" / "real" / "torch-mlir.checkout.tar.xz"
MLIR_FILE = "python/torch_mlir/extras/fx_decomp_util.py"
PATHS = ("eager_inference", "eager_training", "export_core", "export_torch_mlir", "functional")
FORMAT = "opdrift-model-corpus 1"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# The corpus lives beside this script (its modules import no model library until a model is built).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_corpus_zoo import CORPUS, Case, Spec  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Recording.


def op_name(func: Any) -> str:
    """An OpOverload as native_functions.yaml spells it: ``add.Tensor``, ``add`` for the default
    overload; another namespace keeps its prefix (``torchvision::roi_align``)."""
    schema = func._schema
    ns, _, name = schema.name.partition("::")
    full = name if schema.overload_name == "" else f"{name}.{schema.overload_name}"
    return full if ns == "aten" else f"{ns}::{full}"


def _leaves(out: Any) -> Iterator[Any]:
    import torch

    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, dict) or hasattr(out, "to_tuple"):
        for value in out.values() if isinstance(out, dict) else out.to_tuple():
            yield from _leaves(value)
    elif isinstance(out, (list, tuple)):
        for value in out:
            yield from _leaves(value)


def loss_of(out: Any) -> Any:
    """A scalar to train on: the mean of every floating output (a detection model's losses in
    training are such outputs)."""
    terms = [t.mean() for t in _leaves(out) if t.is_floating_point()]
    if not terms:
        raise RuntimeError("no floating output to train on")
    return sum(terms[1:], terms[0])


def _recorder() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.counts: Counter[str] = Counter()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.counts[op_name(func)] += 1
            return func(*args, **(kwargs or {}))

    return Recorder()


def eager_inference(case: Case) -> tuple[Counter[str], str]:
    import torch

    net = case.module.eval()
    rec = _recorder()
    with torch.no_grad(), rec:
        net(*case.args, **case.kwargs)
    return rec.counts, ""


def eager_training(case: Case) -> tuple[Counter[str], str]:
    import torch

    net = case.module.train()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    args = case.train_args if case.train_args is not None else case.args
    kwargs = case.train_kwargs if case.train_kwargs is not None else case.kwargs
    rec = _recorder()
    with rec:
        loss = loss_of(net(*args, **kwargs))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    return rec.counts, "forward, backward, clip_grad_norm_, AdamW.step, with torch's defaults on the CPU"


def graph_counts(gm: Any) -> Counter[str]:
    import torch

    counts: Counter[str] = Counter()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if isinstance(node.target, torch._ops.OpOverload):
            counts[op_name(node.target)] += 1
        elif isinstance(node.target, torch._ops.HigherOrderOperator):
            counts[f"higher_order::{node.target.name()}"] += 1
    return counts


def torch_mlir_table() -> dict[Any, Any]:
    """torch-mlir's FX importer table: its DEFAULT_DECOMPOSITIONS list read from the vendored file
    (as ast, so that its torch.ops.aten.X[.overload] names are resolved in this torch) and the two
    it appends when this torch has them."""
    import torch
    from torch._decomp import get_decompositions

    with tarfile.open(MLIR_CHECKOUT) as tar:
        member = tar.extractfile(MLIR_FILE)
        if member is None:
            raise RuntimeError(f"{MLIR_FILE} missing from {MLIR_CHECKOUT}")
        tree = ast.parse(member.read().decode())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            text = ast.unparse(node)
            if text.startswith("torch.ops.aten.") and not isinstance(node.ctx, ast.Store):
                names.append(text.removeprefix("torch.ops.aten."))
    ops = []
    for name in dict.fromkeys(names):
        base, _, overload = name.partition(".")
        if not hasattr(torch.ops.aten, base):
            continue  # the file's own hasattr guards
        packet = getattr(torch.ops.aten, base)
        ops.append(getattr(packet, overload) if overload else packet)
    table: dict[Any, Any] = get_decompositions(ops)
    return table


class Exported:
    """One torch.export per model, decomposed twice."""

    def __init__(self) -> None:
        self.program: Any = None
        self.error: str | None = None


def export_core(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    return graph_counts(_exported(case, exported).run_decompositions().graph_module), ""


def export_torch_mlir(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    program = _exported(case, exported).run_decompositions(torch_mlir_table())
    return graph_counts(program.graph_module), "torch-mlir fx_decomp_util.py DEFAULT_DECOMPOSITIONS"


def _exported(case: Case, exported: Exported) -> Any:
    import torch

    if exported.error is not None:
        raise RuntimeError(exported.error)
    if exported.program is None:
        try:
            exported.program = torch.export.export(case.module.eval(), case.args, case.kwargs)
        except Exception as err:
            exported.error = f"torch.export.export: {one_line(err)}"
            raise RuntimeError(exported.error) from None
    return exported.program


def functional(case: Case, exported: Exported) -> tuple[Counter[str], str]:
    import torch

    net = case.module
    kw_names = tuple(case.kwargs)

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, *flat: Any) -> Any:
            n = len(flat) - len(kw_names)
            out = self.net(*flat[:n], **dict(zip(kw_names, flat[n:], strict=True)))
            return (loss_of(out),)

    # A training step's arguments: a detection model takes its targets in training.
    args = case.train_args if case.train_args is not None else case.args
    kwargs = case.train_kwargs if case.train_kwargs is not None else case.kwargs
    if tuple(kwargs) != kw_names:
        raise RuntimeError("training and inference take different keyword arguments")
    flat = (*args, *kwargs.values())
    untied = _untie(net)
    notes = [f"{untied} tied parameters untied"] if untied else []
    try:
        gm = _joint(Step().train(), flat, notes)
        return graph_counts(gm), "; ".join(
            dict.fromkeys(["joint forward+backward (aot_export_module)", *notes])
        )
    except Exception as err:
        direct_error = one_line(err)
    # aot_export_module traces the Python again, on fake tensors, and stops at data-dependent Python
    # (transformers' masks call .item()); torch.export resolves that while it traces, and the
    # module it gives back replays its graph, which the joint trace then takes.
    try:
        replay = torch.export.export(Step().train(), flat).module()
        gm = _joint(replay, flat, notes)
        note = f"joint forward+backward of torch.export's graph (the direct trace failed: {direct_error})"
        return graph_counts(gm), "; ".join(dict.fromkeys([note, *notes]))[:400]
    except Exception as err:
        joint_error = one_line(err)
    # Export's own graph is functional too, but inference only and with composite-implicit ops kept.
    try:
        program = _exported(case, exported)
    except Exception as err:
        raise RuntimeError(f"joint trace: {joint_error[:150]}; then {one_line(err)}") from None
    note = f"inference only: torch.export's functional IR (joint traces failed: {joint_error})"
    return graph_counts(program.graph_module), note[:400]


def _untie(net: Any) -> int:
    """Give each shared parameter (a language model's tied embedding and head) a copy of its own:
    aot_export_module lifts each name as its own input and then finds one without a gradient.
    The ops are the same; the count of untied parameters goes in the run's note."""
    import torch

    seen: set[int] = set()
    untied = 0
    for module in net.modules():
        for name, param in list(module._parameters.items()):
            if param is None:
                continue
            if id(param) in seen:
                module._parameters[name] = torch.nn.Parameter(param.detach().clone())
                untied += 1
            seen.add(id(param))
    return untied


def _joint(module: Any, flat: tuple[Any, ...], notes: list[str]) -> Any:
    """The functionalized joint forward+backward graph of MODULE, whose output 0 is the loss. The
    joint trace wants a gradient for every parameter it is given: one eager step finds those the
    loss never reaches (BERT's pooler under a masked-LM head) and freezes them."""
    from torch._functorch.aot_autograd import aot_export_module

    module(*flat)[0].backward()
    unused = [p for p in module.parameters() if p.requires_grad and p.grad is None]
    for param in unused:
        param.requires_grad_(False)
    module.zero_grad(set_to_none=True)
    if unused:
        notes.append(f"{len(unused)} parameters without a gradient frozen")
    gm, _ = aot_export_module(module, flat, trace_joint=True, output_loss_index=0)
    return gm


def one_line(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip().splitlines()
    return (text[0] if text else type(err).__name__)[:300]


class Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Timeout(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def environment(packages: list[str]) -> dict[str, str]:
    from importlib import metadata

    env = {
        "format": FORMAT,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "script_commit": _commit(),
        "device": "cpu",
        "threads": "1",
    }
    for package in packages:
        try:
            env[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            env[package] = "absent"
    return env


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "scripts/model_corpus.py"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


PACKAGES = ["torch", "torchvision", "timm", "transformers", "diffusers", "numpy"]


def run(out_path: Path, only: set[str] | None, limit: int) -> None:
    import importlib

    import torch

    torch.set_num_threads(1)
    done: set[tuple[str, str]] = set()
    if out_path.exists():
        for line in out_path.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind") == "run":
                done.add((record["model"], record["path"]))
    with out_path.open("a") as out:

        def write(record: dict[str, Any]) -> None:
            out.write(json.dumps(record, sort_keys=True) + "\n")
            out.flush()

        write({"kind": "env", **environment(PACKAGES)})
        for spec in CORPUS:
            if only and spec.name not in only:
                continue
            if all((spec.name, p) in done for p in PATHS):
                continue
            write({"kind": "model", "model": spec.name, "family": spec.family})
            try:
                if spec.needs != "torch":
                    importlib.import_module(spec.needs)
            except ImportError as err:
                for path in PATHS:
                    write(_record(spec, path, "skipped", f"{spec.needs} not installed: {one_line(err)}"))
                continue
            exported = Exported()
            # Export first: it runs the model in eval mode on fresh weights; training comes last.
            order = ("eager_inference", "export_core", "export_torch_mlir", "functional", "eager_training")
            for path in order:
                if (spec.name, path) in done:
                    continue
                torch.manual_seed(0)
                cpu, wall = time.process_time(), time.perf_counter()
                try:
                    with time_limit(limit):
                        case = spec.build()
                        if path == "eager_inference":
                            counts, note = eager_inference(case)
                        elif path == "eager_training":
                            counts, note = eager_training(case)
                        elif path == "functional":
                            counts, note = functional(case, exported)
                        elif path == "export_core":
                            counts, note = export_core(case, exported)
                        else:  # the program export_core exported, decomposed by another table
                            counts, note = export_torch_mlir(case, exported)
                    record = _record(spec, path, "ok", note, counts)
                except Exception as err:
                    record = _record(spec, path, "failed", one_line(err))
                    print(f"{spec.name} {path}: {traceback.format_exc(limit=-3)}", file=sys.stderr)
                record["cpu_s"] = round(time.process_time() - cpu, 2)
                record["wall_s"] = round(time.perf_counter() - wall, 2)
                write(record)
                print(f"{spec.name:32} {path:18} {record['status']:7} {record['cpu_s']:7.1f}s", flush=True)
            exported.program = None


def _record(
    spec: Spec, path: str, status: str, note: str, counts: Counter[str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "run",
        "model": spec.name,
        "family": spec.family,
        "path": path,
        "status": status,
        "note": note,
        "ops": dict(sorted((counts or {}).items())),
    }


# ---------------------------------------------------------------------------------------------
# The shipped table.


def clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def table(records_path: Path, out_path: Path) -> None:
    """The records → the shipped TSV.xz: `#` header lines (the environment), then

    model   NAME  FAMILY
    run     PATH  MODEL  STATUS  CPU_SECONDS  NOTE      (one per model and path)
    op      PATH  OP  MODEL  COUNT
    """
    env: dict[str, str] = {}
    models: dict[str, str] = {}
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for line in records_path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "env":  # a resumed run adds one: keep the first, and every commit
            commits = env.get("script_commit", "").split(", ") if env else []
            env = env or {k: str(v) for k, v in record.items() if k != "kind"}
            commits.append(str(record["script_commit"]))
            env["script_commit"] = ", ".join(dict.fromkeys(c for c in commits if c))
        elif record["kind"] == "model":
            models[record["model"]] = record["family"]
        else:
            runs[(record["model"], record["path"])] = record
    lines = [f"# {FORMAT}", "# Generated by scripts/model_corpus.py; see docs/models.md."]
    lines += [f"# {key}: {clean(value)}" for key, value in env.items() if key != "format"]
    lines += [f"model\t{name}\t{family}" for name, family in sorted(models.items())]
    ops: list[str] = []
    for (name, path), record in sorted(runs.items(), key=lambda kv: (PATHS.index(kv[0][1]), kv[0][0])):
        cpu = record.get("cpu_s", 0)
        lines.append(f"run\t{path}\t{name}\t{record['status']}\t{cpu}\t{clean(record['note'])}")
        ops += [f"op\t{path}\t{op}\t{name}\t{count}" for op, count in record["ops"].items()]
    lines += sorted(ops, key=lambda line: line.split("\t")[1:4])
    data = lzma.compress(("\n".join(lines) + "\n").encode(), preset=9 | lzma.PRESET_EXTREME)
    out_path.write_bytes(data)
    print(f"{out_path}: {len(models)} models, {len(runs)} runs, {len(ops)} op rows, {len(data)} bytes")


def profiler_check(name: str) -> None:
    """The eager recorder against torch.profiler on one model's inference: the profiler sees every
    dispatcher call, the composite ones above Autograd too (aten::linear, aten::conv2d); the mode
    sees what reaches a backend kernel below it. Prints both name sets' differences."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    spec = next(s for s in CORPUS if s.name == name)
    torch.manual_seed(0)
    case = spec.build()
    counts, _ = eager_inference(case)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        case.module.eval()(*case.args, **case.kwargs)
    seen: Counter[str] = Counter()
    for event in prof.events():
        if event.name.startswith("aten::"):
            seen[event.name.removeprefix("aten::")] += 1
    mode: Counter[str] = Counter()
    for op, n in counts.items():
        mode[op.split(".")[0]] += n
    result = {
        "model": name,
        "mode_ops": len(mode),
        "profiler_ops": len(seen),
        "only_in_mode": sorted(set(mode) - set(seen)),
        "only_in_profiler": sorted(set(seen) - set(mode)),
        "count_differences": {
            op: [mode[op], seen[op]] for op in sorted(set(mode) & set(seen)) if mode[op] != seen[op]
        },
    }
    print(json.dumps(result, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the corpus, appending records (resumes where it stopped)")
    p_run.add_argument("-o", type=Path, required=True)
    p_run.add_argument("--only", nargs="*", help="these models only")
    p_run.add_argument("--limit", type=int, default=900, help="seconds per model and path")
    p_table = sub.add_parser("table", help="records → the shipped .tsv.xz")
    p_table.add_argument("records", type=Path)
    p_table.add_argument("-o", type=Path, required=True)
    sub.add_parser("list", help="the corpus")
    p_check = sub.add_parser("profiler-check", help="the eager recorder against torch.profiler")
    p_check.add_argument("model")
    args = parser.parse_args()
    if args.command == "run":
        run(args.o, set(args.only) if args.only else None, args.limit)
    elif args.command == "table":
        table(args.records, args.o)
    elif args.command == "list":
        for spec in CORPUS:
            print(f"{spec.name}\t{spec.family}")
    else:
        profiler_check(args.model)


if __name__ == "__main__":
    main()
