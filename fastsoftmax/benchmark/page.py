"""``fastsoftmax report RESULTS...``: recorded result files turned into one page.

The page answers a user's questions in order: on this device, where does a peer beat fastsoftmax
(listed first, never hidden), where does fastsoftmax win and by how much, how does every
implementation do in each regime (as a fraction of the copy bandwidth and as a ratio to the
fastest peer), what each seed's figure shows, and where each implementation fails.

It writes ``report.html`` (self-contained: the figures are embedded as base64 PNGs), ``report.md``
(its twin for a repository, the figures beside it under ``figures/``), and with
``--readme-section`` the README's results section. Everything is computed from the rows of the
files, so a run cut short renders too. Kept free of torch: it runs anywhere the JSON is.
"""

from __future__ import annotations

import argparse
import base64
import html
import math
import shutil
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from fastsoftmax.benchmark import figures, readme_table, results
from fastsoftmax.benchmark.report import geomean, group_by_case
from fastsoftmax.benchmark.shapes import ALL_DTYPES, SHORT_DTYPE, SUMMARY_GROUPS, Case, summary_group

DEFAULT_OUT = str(Path("benchmarks") / "report")
# Within this margin a peer and fastsoftmax are called even: repeated runs on one machine move by
# one to two percent.
TIE_MARGIN = 0.03
LISTED_LOSSES = 40
FASTSOFTMAX = "fastsoftmax"
CASE_KINDS = ("main", "sweep", "vector_matrix", "attention")
KIND_TITLES = {
    "main": "main shape set",
    "sweep": "seed 002: column sweep",
    "vector_matrix": "seed 003: vector and matrix",
    "attention": "seed 004: attention rows",
    "ladder": "seed 000: kernel ladder",
    "hardware": "seed 001: hardware model",
}
CLAIMS = {
    "ladder": "Seed 000 builds a softmax kernel in steps (naive, a shared-memory tree, coalesced loads, warp "
    "shuffles, float4 loads, unrolling, the online normaliser) and counts 5 flops per element, so "
    "its bound is 5/8 of the memory bandwidth in GFLOP/s. Bars: each step as a fraction of the "
    "copy bandwidth; the right axis gives the same in the seed's GFLOP/s.",
    "sweep": "Seed 002 finds the Triton tutorial's fused softmax losing bandwidth just past every power of "
    "two, because it pads each row to the next one. The sweep times every 128 columns up to 32768, "
    "then log-spaced widths to 2^20 (the tutorial's kernel stops at 2^16: past that its row no "
    "longer fits in registers).",
    "vector_matrix": "Seed 003 compares the unfused sequence (max, subtract, exp, sum, divide: five passes "
    "over memory) with fused kernels and cuDNN on one 2^24 vector and a 2^12 x 2^16 "
    "matrix reduced along each dim.",
    "attention": "Seed 004 (OneFlow) measures BERT-base attention rows, 49152 = 32 x 12 x 128 rows of 32 to "
    "32768 columns in fp16, forward and backward, against cuDNN, with the copy bandwidth as "
    "the ceiling, and claims a tuned kernel stays near that ceiling where cuDNN does not.",
    "hardware": "Seed 001 surveys fixed-point, base-2 softmax datapaths for accelerators; fastsoftmax.hardware "
    "models them bit for bit. The table gives, per design, the smallest largest error over "
    "the input sets and the narrowest width meeting each accuracy target.",
}


# --- loading --------------------------------------------------------------------------------------


def kind_of(document) -> str | None:
    if not isinstance(document, dict):
        return None
    if document.get("benchmark") == "ladder":
        return "ladder"
    if "verdict" in document and "worst_case" in document:
        return "hardware"
    if document.get("suite") in CASE_KINDS and not results.validate(document):
        return document["suite"]
    return None


@dataclass
class Inputs:
    documents: dict[str, list[tuple[Path, dict]]] = field(default_factory=lambda: defaultdict(list))
    skipped: list[str] = field(default_factory=list)

    def latest(self, kind: str) -> tuple[Path, dict] | None:
        found = self.documents.get(kind) or []
        return max(found, key=lambda item: str(item[1].get("date", ""))) if found else None


def load_inputs(paths) -> Inputs:
    inputs = Inputs()
    for name in paths:
        path = Path(name)
        try:
            document = results.read_json(path)
        except OSError as exc:
            inputs.skipped.append(f"{path}: cannot read it: {exc.strerror or exc}"[:200])
            continue
        except ValueError as exc:  # read_json's message starts with the path
            inputs.skipped.append(str(exc)[:200])
            continue
        kind = kind_of(document)
        if kind is None:
            inputs.skipped.append(f"{path}: not a fastsoftmax result file")
            continue
        inputs.documents[kind].append((path, document))
    mains = inputs.documents.get("main", [])
    if mains:
        device = mains[-1][1].get("device")
        for path, document in mains:
            if document.get("device") != device:
                inputs.skipped.append(f"{path}: main-suite run on {document.get('device')}, not {device}")
        inputs.documents["main"] = [(p, d) for p, d in mains if d.get("device") == device]
    return inputs


def main_document(inputs: Inputs) -> dict | None:
    """One document from the main-suite runs given: a run split with ``--regimes`` is joined, and
    where two runs measured the same shape the later one's rows are kept (ratios only ever
    compare rows of one run)."""
    mains = sorted((d for _, d in inputs.documents.get("main", [])), key=lambda d: str(d.get("date", "")))
    if not mains:
        return None
    combined = readme_table.combine(mains)
    from fastsoftmax.benchmark.report import summarize

    combined["summary"] = summarize(combined)
    return combined


# --- the figures behind the numbers ---------------------------------------------------------------


def best_peer(rows: list[dict]) -> dict | None:
    peers = [r for r in rows if r.get("kind") == "peer" and r["status"] == "ok" and r.get("ms")]
    return min(peers, key=lambda r: r["ms"]) if peers else None


def case_summary(rows: list[dict]) -> dict:
    """For one case: fastsoftmax's row, the fastest peer's, and their time ratio (> 1: fastsoftmax
    is faster)."""
    own = next((r for r in rows if r["impl"] == FASTSOFTMAX), None)
    peer = best_peer(rows)
    ratio = None
    if own and peer and own["status"] == "ok" and own.get("ms"):
        ratio = peer["ms"] / own["ms"]
    return {"own": own, "peer": peer, "ratio": ratio}


def case_label(row: dict) -> str:
    case = Case.from_json(row)
    shape = "x".join(map(str, case.shape))
    where = "" if case.is_last_dim else f" dim {case.dim}"
    direction = " backward" if case.direction == "backward" else ""
    return f"{shape}{where} {SHORT_DTYPE.get(case.dtype, case.dtype)}{direction}"


def group_of(row: dict) -> str:
    return summary_group(Case.from_json(row))


def verdicts(case_documents: list[tuple[str, dict]]) -> dict:
    """Losses, ties, wins and fastsoftmax's own failures over every case of every document."""
    losses, failures, wins = [], [], defaultdict(list)
    ties = 0
    for kind, document in case_documents:
        for rows in group_by_case(document.get("rows", [])).values():
            found = case_summary(rows)
            own, peer, ratio = found["own"], found["peer"], found["ratio"]
            if own is None:
                continue
            where = _where(kind, group_of(own))
            if own["status"] != "ok":
                failures.append(
                    {
                        "where": where,
                        "case": case_label(own),
                        "status": own["status"],
                        "message": own.get("message", ""),
                    }
                )
                continue
            if ratio is None:
                continue
            entry = {
                "where": where,
                "case": case_label(own),
                "peer": peer["impl"],
                "ratio": ratio,
                "own_frac": own.get("frac_copy"),
                "peer_frac": peer.get("frac_copy"),
                "own_us": own.get("gpu_us"),
                "peer_us": peer.get("gpu_us"),
            }
            if ratio < 1 - TIE_MARGIN:
                losses.append(entry)
            elif ratio <= 1 + TIE_MARGIN:
                ties += 1
            else:
                wins[where].append(entry)
    losses.sort(key=lambda e: e["ratio"])
    return {"losses": losses, "ties": ties, "wins": dict(wins), "failures": failures}


def _where(kind: str, group: str) -> str:
    """ "main shape set, decode"; a figure's own title already names its regime."""
    if kind == "main":
        return f"{KIND_TITLES[kind]}, {group}"
    return KIND_TITLES[kind] + (", backward" if group.endswith("backward") else "")


def regime_table(document: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows: per regime and implementation, geomean fraction of copy and geomean ratio to
    the fastest peer, per dtype, and what failed."""
    fractions: dict[tuple, list[float]] = defaultdict(list)
    ratios: dict[tuple, list[float]] = defaultdict(list)
    failed: dict[tuple, list[str]] = defaultdict(list)
    groups: list[str] = []
    impls: list[str] = []
    dtypes: list[str] = []
    for rows in group_by_case(document.get("rows", [])).values():
        group = group_of(rows[0])
        if group not in groups:
            groups.append(group)
        dtype = rows[0]["dtype"]
        if dtype not in dtypes:
            dtypes.append(dtype)
        peer = best_peer(rows)
        for row in rows:
            if row["impl"] not in impls:
                impls.append(row["impl"])
            key = (group, row["impl"])
            if row["status"] == "ok" and row.get("ms"):
                if isinstance(row.get("frac_copy"), (int, float)):
                    fractions[key + (dtype,)].append(row["frac_copy"])
                if peer:
                    ratios[key + (dtype,)].append(peer["ms"] / row["ms"])
            else:
                failed[key].append(row["status"])
    dtypes = [d for d in ALL_DTYPES if d in dtypes]
    groups.sort(key=lambda g: SUMMARY_GROUPS.index(g) if g in SUMMARY_GROUPS else len(SUMMARY_GROUPS))
    header = ["regime", "implementation"] + [SHORT_DTYPE[d] for d in dtypes] + ["not timed"]
    body = []
    for group in groups:
        for impl in figures.impl_order(impls):
            cells = []
            for dtype in dtypes:
                frac = geomean(fractions.get((group, impl, dtype), []))
                ratio = geomean(ratios.get((group, impl, dtype), []))
                if frac is None and ratio is None:
                    cells.append("-")
                else:
                    cells.append(f"{_num(frac)} (x{_num(ratio)})")
            statuses = failed.get((group, impl), [])
            if all(c == "-" for c in cells) and not statuses:
                continue
            counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
            body.append([group, impl] + cells + [counts or "-"])
    return header, body


def failure_lines(case_documents: list[tuple[str, dict]]) -> list[str]:
    """One line per implementation, status and reason: where each one does not run."""
    seen: dict[tuple, list[str]] = defaultdict(list)
    for kind, document in case_documents:
        for row in document.get("rows", []):
            if row.get("regime") == "host" or row["status"] == "ok":
                continue
            reason = (row.get("message") or "").split(": ", 1)[-1][:160]
            seen[(row["impl"], row["status"], reason)].append(f"{KIND_TITLES[kind]}: {case_label(row)}")
    lines = []
    for (impl, status, reason), where in sorted(
        seen.items(), key=lambda item: (not item[0][0].startswith(FASTSOFTMAX), item[0][0])
    ):
        example = where[0] + (f" and {len(where) - 1} more" if len(where) > 1 else "")
        lines.append(f"**{impl}** {status} on {len(where)} shape(s) ({example}): {reason or 'no message'}")
    return lines


def _num(value, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and math.isfinite(value) else "-"


# --- the page as blocks, rendered twice -----------------------------------------------------------


@dataclass
class Page:
    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str, level: int = 2):
        self.blocks.append(("heading", level, text))

    def paragraph(self, text: str):
        self.blocks.append(("paragraph", text))

    def items(self, lines: list[str]):
        if lines:
            self.blocks.append(("items", lines))

    def table(self, header: list[str], rows: list[list[str]]):
        if rows:
            self.blocks.append(("table", header, rows))

    def markdown_table(self, lines: list[str]):
        """A table already written as Markdown lines (the figures' own tables)."""
        if lines:
            self.blocks.append(("markdown_table", lines))

    def image(self, path: Path, alt: str):
        self.blocks.append(("image", path, alt))


def _split_markdown_row(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def render_markdown(page: Page, relative_to: Path) -> str:
    out = []
    for block in page.blocks:
        kind = block[0]
        if kind == "heading":
            out += ["#" * block[1] + " " + block[2], ""]
        elif kind == "paragraph":
            out += [block[1], ""]
        elif kind == "items":
            out += [f"- {line}" for line in block[1]] + [""]
        elif kind == "table":
            header, rows = block[1], block[2]
            out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            out += ["| " + " | ".join(row) + " |" for row in rows] + [""]
        elif kind == "markdown_table":
            out += list(block[1]) + [""]
        elif kind == "image":
            out += [f"![{block[2]}]({block[1].relative_to(relative_to).as_posix()})", ""]
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
th { background: #f2f2f2; }
img { max-width: 100%; border: 1px solid #eee; }
li { margin: 0.2em 0; }
code { background: #f4f4f4; padding: 0 3px; }
"""


def _inline(text: str) -> str:
    """The little Markdown the page uses inside text: **bold** and `code`."""
    escaped = html.escape(text)
    for marker, tag in (("**", "strong"), ("`", "code")):
        parts = escaped.split(marker)
        if len(parts) % 2 == 1:
            escaped = "".join(f"<{tag}>{p}</{tag}>" if i % 2 else p for i, p in enumerate(parts))
    return escaped


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_inline(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(page: Page, title: str) -> str:
    out = [
        (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>"
        )
    ]
    for block in page.blocks:
        kind = block[0]
        if kind == "heading":
            out.append(f"<h{block[1]}>{_inline(block[2])}</h{block[1]}>")
        elif kind == "paragraph":
            out.append(f"<p>{_inline(block[1])}</p>")
        elif kind == "items":
            out.append("<ul>" + "".join(f"<li>{_inline(line)}</li>" for line in block[1]) + "</ul>")
        elif kind == "table":
            out.append(_html_table(block[1], block[2]))
        elif kind == "markdown_table":
            # a figure's table may carry captions between its tables (forward, then backward)
            chunks, current = [], []
            for line in block[1]:
                if line.startswith("|"):
                    current.append(line)
                else:
                    if current:
                        chunks.append(current)
                        current = []
                    if line.strip():
                        chunks.append(line)
            if current:
                chunks.append(current)
            for chunk in chunks:
                if isinstance(chunk, str):
                    out.append(f"<p>{_inline(chunk)}</p>")
                else:
                    rows = [_split_markdown_row(line) for line in chunk if not set(line) <= set("|-: ")]
                    out.append(_html_table(rows[0], rows[1:]))
        elif kind == "image":
            data = base64.b64encode(Path(block[1]).read_bytes()).decode()
            out.append(f"<p><img alt='{html.escape(block[2])}' src='data:image/png;base64,{data}'></p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# --- building the page ----------------------------------------------------------------------------


def _versions(document: dict) -> str:
    v = document.get("versions", {}) or {}
    parts = [
        f"{label} {v[key]}"
        for label, key in (
            ("torch", "torch"),
            ("triton", "triton"),
            ("CUDA", "torch_cuda"),
            ("driver", "driver"),
            ("cuda-core", "cuda_core"),
            ("fastsoftmax", "fastsoftmax"),
            ("python", "python"),
        )
        if v.get(key)
    ]
    return ", ".join(parts) or "not recorded"


def _draw(kind: str, document: dict, figure_dir: Path, notes: list[str]) -> Path | None:
    from fastsoftmax.benchmark.seeds import SEED_OF

    stem = f"seed{SEED_OF[kind]}_{kind}" if kind in SEED_OF else kind
    try:
        return figures.DRAWERS[kind](document, figure_dir / f"{stem}.png")
    except figures.MatplotlibMissing as exc:
        if str(exc) not in notes:
            notes.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken figure must not cost the page
        notes.append(f"figure {kind} not drawn: {type(exc).__name__}: {exc}"[:200])
    return None


def _runs_ceilings(document: dict) -> str:
    """A joined document's ceiling is the mean of its runs': each run's own, against which that run's
    rows were taken, where they differ."""
    runs = document.get("copy_gbps_runs") or []
    if len({round(run["copy_gbps"]) for run in runs}) < 2:
        return ""
    each = ", ".join(
        f"{run['copy_gbps']:.0f} on {str(run.get('date') or 'an undated run')[:16].replace('T', ' ')}" for run in runs
    )
    return f" (the mean of its runs', each row's fraction taken against its own run's: {each})"


def build_page(inputs: Inputs, figure_dir: Path) -> tuple[Page, str, list[str]]:
    notes: list[str] = []
    page = Page()
    case_documents: list[tuple[str, dict]] = []
    main = main_document(inputs)
    if main is not None:
        case_documents.append(("main", main))
    for kind in CASE_KINDS[1:]:
        latest = inputs.latest(kind)
        if latest:
            case_documents.append((kind, latest[1]))
    everything = [d for _, d in case_documents] + [
        d for k in ("ladder", "hardware") for _, d in inputs.documents.get(k, [])
    ]
    device = next((d.get("device") for d in everything if d.get("device")), "unknown device")
    title = f"fastsoftmax on {device}"
    page.heading(title, 1)
    # a main document joined from several runs carries each contributing run's date
    stamps = [stamp for d in everything for stamp in (d.get("dates") or [d.get("date")]) if stamp]
    dates = sorted({str(stamp)[:16].replace("T", " ") for stamp in stamps})
    first = case_documents[0][1] if case_documents else (everything[0] if everything else {})
    page.paragraph(f"Device: **{device}**. Runs: {', '.join(dates) or 'undated'}. Versions: {_versions(first)}.")
    ceilings = [(KIND_TITLES[k], d.get("copy_gbps"), d) for k, d in case_documents]
    ceilings += [(KIND_TITLES["ladder"], d.get("copy_gbps"), d) for _, d in inputs.documents.get("ladder", [])]
    ceilings = [(k, c, d) for k, c, d in ceilings if isinstance(c, (int, float))]
    if ceilings:
        page.paragraph(
            "Copy bandwidth, the ceiling (a 512 MiB device-to-device copy, bytes read + written, "
            "measured at the start of each run): "
            + "; ".join(f"{k} **{c:.0f} GB/s**{_runs_ceilings(d)}" for k, c, d in ceilings)
            + ". A forward softmax moves one read and one write per element, a backward two reads and "
            'one write; "fraction of copy" is that traffic over the time, divided by the ceiling.'
        )

    for kind, document in case_documents:
        if document.get("aborted") or document.get("complete") is False:
            page.paragraph(
                f"**{KIND_TITLES[kind].capitalize()} did not complete** "
                f"({document.get('aborted') or 'cut short'}): its tables cover the shapes measured."
            )
    found = verdicts(case_documents)
    page.heading("Where a peer beats fastsoftmax")
    losses = found["losses"]
    if losses:
        lines = [
            f"{e['where']}: {e['case']}: **{e['peer']}** is x{1 / e['ratio']:.2f} faster "
            f"({_us(e['peer_us'])} against {_us(e['own_us'])}; {_num(e['peer_frac'])} against "
            f"{_num(e['own_frac'])} of copy)"
            for e in losses[:LISTED_LOSSES]
        ]
        if len(losses) > LISTED_LOSSES:
            lines.append(f"... and {len(losses) - LISTED_LOSSES} more shape(s), all in the CSV of the runs")
        page.items(lines)
    else:
        page.paragraph(f"No peer was faster than fastsoftmax by more than {TIE_MARGIN:.0%} on any shape measured.")
    if found["failures"]:
        page.paragraph("fastsoftmax itself failed here:")
        page.items([f"{f['where']}: {f['case']}: **{f['status']}** {f['message']}" for f in found["failures"]])
    if main is not None:
        below = [b for b in main.get("summary", {}).get("below_goal", []) if b["impl"] == FASTSOFTMAX]
        if below:
            page.paragraph("Shapes of the main set where fastsoftmax misses its own goal (fraction of copy):")
            page.items(_below_goal_lines(below))

    page.heading("Where fastsoftmax wins")
    page.paragraph(
        f"Counted against the fastest peer that ran each shape; {found['ties']} shape(s) were within "
        f"{TIE_MARGIN:.0%} either way and count as ties."
    )
    win_lines = []
    for where, entries in found["wins"].items():
        best = max(entries, key=lambda e: e["ratio"])
        win_lines.append(
            f"{where}: faster on {len(entries)} shape(s), x{geomean([e['ratio'] for e in entries]):.2f} "
            f"geomean; most at {best['case']}, x{best['ratio']:.2f} over {best['peer']}"
        )
    page.items(win_lines) if win_lines else page.paragraph("No shape where fastsoftmax is faster than every peer.")

    page.heading("Every implementation, per regime")
    page.paragraph(
        "Each cell: geometric mean fraction of the copy bandwidth, and in brackets the geometric mean "
        "speed ratio to the fastest peer on each shape (above 1: faster than every peer; the fastest "
        'peer itself is 1.00 wherever it ran). "not timed" counts the shapes where the '
        "implementation refused, failed or gave a wrong answer."
    )
    for kind, document in case_documents:
        header, body = regime_table(document)
        if body:
            page.heading(KIND_TITLES[kind].capitalize(), 3)
            page.table(header, body)
    if main is not None:
        host = [r for r in main.get("rows", []) if r.get("regime") == "host"]
        if host:
            page.heading("Host overhead", 3)
            page.paragraph(
                "Wall time per call of back-to-back calls on a 4x1024 bf16 tensor: what Python and the "
                "launch cost a caller on small tensors, which GPU timings hide."
            )
            page.table(
                ["implementation", "us per call"],
                [[r["impl"], _num(r.get("host_us"), 1) if r["status"] == "ok" else r["status"]] for r in host],
            )

    page.heading("The seeds' figures")
    drawn_main = _draw("main", main, figure_dir, notes) if main is not None else None
    if drawn_main:
        page.heading(KIND_TITLES["main"].capitalize(), 3)
        page.paragraph("Bulk rows (2^27 elements per shape): fraction of copy bandwidth against row length.")
        page.image(drawn_main, "main shape set: fraction of copy against columns")
    for kind in ("ladder", "sweep", "vector_matrix", "attention"):
        latest = inputs.latest(kind)
        if latest is None:
            continue
        document = latest[1]
        page.heading(KIND_TITLES[kind].capitalize(), 3)
        page.paragraph(CLAIMS[kind])
        if document.get("aborted"):
            page.paragraph(f"**This run stopped early** ({document['aborted']}): the figure shows what it measured.")
        measured = _measured_claim(kind, document)
        if measured:
            page.paragraph(measured)
        png = _draw(kind, document, figure_dir, notes)
        if png:
            page.image(png, KIND_TITLES[kind])
        page.markdown_table(figures.TABLES[kind](document))
    hardware = inputs.latest("hardware")
    if hardware:
        path, document = hardware
        page.heading(KIND_TITLES["hardware"].capitalize(), 3)
        page.paragraph(CLAIMS["hardware"])
        png = path.with_name("hw_report.png")
        if png.is_file():
            figure_dir.mkdir(parents=True, exist_ok=True)
            copied = figure_dir / "seed001_hardware.png"
            shutil.copyfile(png, copied)
            page.image(copied, KIND_TITLES["hardware"])
        page.table(*_hardware_table(document))

    page.heading("Where each implementation does not run")
    failures = failure_lines(case_documents)
    page.items(failures) if failures else page.paragraph("Every implementation ran every shape it was given.")
    peer_lines = [
        f"{KIND_TITLES[kind]}: "
        + "; ".join(f"{name} {status}" for name, status in (document.get("peers") or {}).items())
        for kind, document in case_documents
        if document.get("peers")
    ]
    if peer_lines:
        page.paragraph("Peers of each run (version, or why it did not run):")
        page.items(peer_lines)

    page.heading("Sources")
    sources = [f"`{p}`" for k in inputs.documents for p, _ in inputs.documents[k]]
    page.items(sources + [f"skipped {s}" for s in inputs.skipped])
    page.paragraph("Protocol: benchmarks/README.md in the fastsoftmax repository.")
    return page, title, notes


def _below_goal_lines(below: list[dict]) -> list[str]:
    """One line per goal: how many shapes miss it, each with its figure, worst first."""
    by_goal: dict[tuple, list[dict]] = defaultdict(list)
    for entry in below:
        by_goal[(entry["goal"], entry["min_fraction"])].append(entry)
    lines = []
    for (goal, minimum), entries in by_goal.items():
        entries.sort(key=lambda e: e["frac_copy"] if isinstance(e["frac_copy"], (int, float)) else -1)
        shapes = ", ".join(
            f"{_short_label(e['label'])} {_num(e['frac_copy']) if e['frac_copy'] is not None else e['status']}"
            for e in entries
        )
        lines.append(f"{goal} (goal {minimum:.2f}): {len(entries)} shape(s): {shapes}")
    return lines


def _short_label(label: str) -> str:
    """ "bulk rows bf16 2670x50257" -> "bf16 2670x50257": the goal already names the regime."""
    for dtype in SHORT_DTYPE.values():
        marker = f" {dtype} "
        if marker in label:
            return dtype + " " + label.split(marker, 1)[1]
    return label


def _us(value) -> str:
    return f"{value:.1f} us" if isinstance(value, (int, float)) else "-"


def _measured_claim(kind: str, document: dict) -> str:
    if kind == "sweep":
        found = figures.dips(document)
        if not found:
            return ""
        return (
            "Measured: deepest drop just past a power of two: "
            + "; ".join(
                f"{d['impl']} {d['drop'] * 100:.0f}% ({d['power']} to {d['after']} columns, "
                f"{d['gbps_at']:.0f} to {d['gbps_after']:.0f} GB/s)"
                for d in found
            )
            + "."
        )
    if kind == "attention":
        parts = []
        for direction in ("forward", "backward"):
            own = dict(figures.series(document, "attention", direction=direction).get(FASTSOFTMAX, []))
            for peer in ("cudnn", "torch"):
                theirs = dict(figures.series(document, "attention", direction=direction).get(peer, []))
                shared = [n for n in own if n in theirs]
                if shared:
                    ahead = sum(own[n] > theirs[n] for n in shared)
                    parts.append(f"{direction}: fastsoftmax ahead of {peer} at {ahead} of {len(shared)} widths")
        return ("Measured: " + "; ".join(parts) + ".") if parts else ""
    if kind == "vector_matrix":
        problems, by_impl = figures.vector_matrix_results(document)
        unfused = by_impl.get("torch-unfused", {})
        own = by_impl.get(FASTSOFTMAX, {})
        parts = [
            f"{p}: x{unfused[p]['ms'] / own[p]['ms']:.1f}"
            for p in problems
            if p in unfused and p in own and unfused[p].get("ms") and own[p].get("ms")
        ]
        if parts:
            return "Measured: fastsoftmax's speed-up over the unfused sequence, " + ", ".join(parts) + "."
        return ""
    return ""


def _hardware_table(document: dict) -> tuple[list[str], list[list[str]]]:
    targets = [str(t) for t in document.get("accuracy_targets", [])]
    header = ["design", "smallest max error", "smallest mean KL"] + [f"width for <= {t}" for t in targets]
    rows = []
    for line in document.get("verdict", []):
        meeting = line.get("narrowest_width_meeting", {})
        rows.append(
            [
                line.get("variant", "?"),
                f"{line.get('best_max_abs_error', float('nan')):.2g}",
                f"{line.get('best_mean_kl', float('nan')):.2g}",
            ]
            + [str(meeting.get(t)) if meeting.get(t) is not None else "none" for t in targets]
        )
    return header, rows


def build(paths, out_dir, readme_section=None, write=print) -> tuple[Path, Path]:
    """Write report.html, report.md and figures/ under ``out_dir``; returns the two pages."""
    out_dir = Path(out_dir)
    inputs = load_inputs(paths)
    if not inputs.documents:
        raise ValueError("no fastsoftmax result file among the inputs: " + "; ".join(inputs.skipped[:3]))
    for line in inputs.skipped:
        write(f"skipped {line}")
    out_dir.mkdir(parents=True, exist_ok=True)
    page, title, notes = build_page(inputs, out_dir / "figures")
    for note in notes:
        write(note)
    markdown_path = out_dir / "report.md"
    markdown_path.write_text(render_markdown(page, out_dir))
    html_path = out_dir / "report.html"
    html_path.write_text(render_html(page, title))
    if readme_section:
        main = main_document(inputs)
        if main is None:
            write("no main-suite result among the inputs: the README section was not written")
        else:
            Path(readme_section).parent.mkdir(parents=True, exist_ok=True)
            Path(readme_section).write_text(readme_table.render(main))
            write(f"README section: {readme_section}")
    return html_path, markdown_path


# --- command line ---------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results",
        nargs="+",
        help="result JSON files, plain or gzip-compressed (.json.gz): main suite, seeds' figures, ladder.json, "
        "hw_report.json, from one device",
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"directory for report.html, report.md and figures/ (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--readme-section",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="also write the README's results section (Markdown) from the main-suite results, "
        "to PATH (default OUT/readme_section.md)",
    )


def run(args) -> int:
    section = args.readme_section
    if section == "":
        section = str(Path(args.out) / "readme_section.md")
    try:
        html_path, markdown_path = build(args.results, args.out, readme_section=section)
    except (OSError, ValueError) as exc:
        print(f"fastsoftmax report: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {html_path} and {markdown_path}")
    return 0
