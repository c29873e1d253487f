"""The HTML report's building blocks: escaping, the stylesheet, diff blocks, output panes.

Pure functions from values to HTML fragments. Everything shown passes :func:`esc` (the
patch and the critic's text are untrusted, and so is every child's output); the page has
no script, loads nothing and says so to the browser (a Content-Security-Policy that
allows only its own inline style).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pytest_critic22.report.terminal import critic_line, downgraded_name

if TYPE_CHECKING:
    from pytest_critic22.pipeline.review import Review, RunInfo
    from pytest_critic22.verification.procedures import FindingResult

__all__ = [
    "CSP",
    "CSS",
    "OUTPUT_LINES",
    "anchor",
    "badge",
    "blinding_section",
    "critic_section",
    "css_name",
    "definition_list",
    "diff_block",
    "esc",
    "extra_logs",
    "output_pane",
    "pre",
    "records_section",
    "run_section",
    "side_by_side",
    "tail",
]

Results = Mapping[str, "FindingResult"]

#: What the last patched run and the counterfactual run show, each (the end of the output).
OUTPUT_LINES = 60
#: A longer line is cut: a minified file in an assertion message is no reason for a 5 MB page.
LINE_WIDTH = 400
#: A hunk longer than this is cut, with a note (the patch file has the rest).
HUNK_LINES = 600

#: Nothing loads, nothing runs: the page's own inline style and no more.
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def esc(value: object) -> str:
    """Text as HTML text or attribute value: escaped (quotes too), terminal colours dropped,
    control characters made visible, lone surrogates (from JSON) replaced."""
    text = _ANSI.sub("", str(value)).replace("\r", "")
    text = _CONTROL.sub("\ufffd", text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return html.escape(text, quote=True)


def anchor(kind: str, name: str) -> str:
    """A fragment id from a name: ``anchor("edit", "e2")`` -> ``edit-e2`` (never markup)."""
    return f"{kind}-{_ID_UNSAFE.sub('-', name).strip('-') or 'x'}"


def css_name(name: str) -> str:
    """A name as a CSS class: ``not run`` -> ``o-not-run`` (never markup)."""
    return "o-" + (_ID_UNSAFE.sub("-", name).strip("-") or "x")


def badge(outcome: str) -> str:
    """An outcome as a coloured label (the text says it too: no meaning in colour alone)."""
    return f'<span class="badge {css_name(outcome)}">{esc(outcome)}</span>'


def pre(text: str, css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f"<pre{klass}>{esc(text)}</pre>"


def definition_list(rows: Iterable[tuple[str, str]]) -> str:
    """``<dl>`` of (label, HTML) rows: the labels are escaped here, the values already are."""
    body = "".join(f"<dt>{esc(label)}</dt><dd>{value}</dd>" for label, value in rows)
    return f"<dl>{body}</dl>" if body else ""


def tail(text: str, keep: int = OUTPUT_LINES) -> tuple[str, int]:
    """The last ``keep`` lines of ``text`` (long lines cut) and how many were left out."""
    lines = text.rstrip().splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    cut = max(0, len(lines) - keep)
    shown = [ln if len(ln) <= LINE_WIDTH else ln[: LINE_WIDTH - 1] + "…" for ln in lines[cut:]]
    return "\n".join(shown), cut


def diff_block(hunk: str) -> str:
    """A hunk as a diff block: old and new line numbers, added and removed lines styled."""
    lines = hunk.splitlines()
    old = new = 0
    rows: list[str] = []
    for number, line in enumerate(lines):
        if number >= HUNK_LINES:
            rows.append(
                f'<span class="l note">… {len(lines) - HUNK_LINES} more lines '
                "(the patch file has them)\n</span>"
            )
            break
        if number == 0 or line.startswith("@@"):
            found = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)", line)
            if found:
                old, new = int(found.group(1)), int(found.group(2))
            rows.append(f'<span class="l hh">{_nums("", "")}{esc(line)}\n</span>')
            continue
        mark = line[:1]
        if mark == "+":
            css, nums = "add", _nums("", str(new))
            new += 1
        elif mark == "-":
            css, nums = "del", _nums(str(old), "")
            old += 1
        elif mark == "\\":
            css, nums = "meta", _nums("", "")
        else:
            css, nums = "ctx", _nums(str(old), str(new))
            old += 1
            new += 1
        text = line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 1] + "…"
        rows.append(f'<span class="l {css}">{nums}{esc(text)}\n</span>')
    return f'<pre class="diff">{"".join(rows)}</pre>'


def _nums(old: str, new: str) -> str:
    return f'<span class="n" aria-hidden="true">{old:>4} {new:>4} </span>'


def output_pane(title: str, run: Mapping[str, Any] | None, missing: str = "") -> str:
    """One side of a comparison: a child run's status, time and the end of its output."""
    if not isinstance(run, Mapping):
        why = missing or "no run recorded"
        return f'<div class="pane"><h5>{esc(title)}</h5><p class="muted">{esc(why)}</p></div>'
    status = str(run.get("status", "?"))
    facts = [badge(status)]
    if isinstance(run.get("seconds"), int | float):
        facts.append(f"{float(run['seconds']):.2f} s")
    if run.get("exit_code") is not None:
        facts.append(f"exit {esc(run['exit_code'])}")
    text, cut = tail(str(run.get("output") or ""))
    notes = ""
    if run.get("reason"):
        notes += f'<p class="muted">{esc(run["reason"])}</p>'
    if run.get("note"):
        notes += f'<p class="muted">note: {esc(run["note"])}</p>'
    omitted = f'<p class="muted">… {cut} earlier lines not shown</p>' if cut else ""
    body = pre(text, "out") if text else '<p class="muted">(no output)</p>'
    return (
        f'<div class="pane"><h5>{esc(title)} <small>{" · ".join(facts)}</small></h5>'
        f"{notes}{omitted}{body}</div>"
    )


def side_by_side(logs: Mapping[str, Any], counterfactual: str) -> str:
    """The decisive output: the last patched run beside the counterfactual run."""
    patched = logs.get("patched")
    runs = patched if isinstance(patched, list) else []
    last = runs[-1] if runs and isinstance(runs[-1], Mapping) else None
    left = "patched tree" + (f" (last of {len(runs)} runs)" if len(runs) > 1 else "")
    right = f"{counterfactual or 'counterfactual'} tree (counterfactual)"
    counter = logs.get("counterfactual")
    if not isinstance(counter, Mapping):
        counter = None
    missing = str(logs.get("counterfactual_error") or "")
    if not missing and last is not None and last.get("status") != "failed":
        missing = "not run: the patched tree decided"
    return (
        '<div class="sbs">'
        + output_pane(left, last, "no run on the patched tree recorded")
        + output_pane(right, counter, missing or "no run recorded")
        + "</div>"
    )


def extra_logs(logs: Mapping[str, Any], shown: Sequence[str]) -> str:
    """The rest of a result's logs (a static check's hits, a counterexample, a trace's
    divergence, acceptance and obligation runs) as escaped, trimmed JSON."""
    rest = {k: v for k, v in logs.items() if k not in shown}
    if not rest:
        return ""
    parts = []
    for key, value in sorted(rest.items()):
        if isinstance(value, Mapping) and "status" in value and "output" in value:
            parts.append(output_pane(key.replace("_", " "), value))
            continue
        shown = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True)
        text, cut = tail(shown, 40)
        more = f'<p class="muted">… {cut} earlier lines not shown</p>' if cut else ""
        parts.append(f"<h5>{esc(key)}</h5>{more}{pre(text, 'out')}")
    return f"<details><summary>more of the logs</summary>{''.join(parts)}</details>"


CSS = """
:root{--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;
--add:#dafbe1;--addfg:#116329;--del:#ffebe9;--delfg:#82071e;--hh:#ddf4ff;--hhfg:#0550ae;
--verified:#cf222e;--refuted:#1a7f37;--inconclusive:#9a6700;--advisory:#6e7781;--link:#0969da;
--reject:#ffebe9;--proceed:#dafbe1;--incomplete:#fff8c5;--target:#fff8c5}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;
--panel:#151b23;--line:#3d444d;--add:#12261e;--addfg:#7ee787;--del:#25171c;--delfg:#ffa198;
--hh:#121d2f;--hhfg:#79c0ff;--link:#4493f8;--reject:#3c1618;--proceed:#12261e;
--incomplete:#2e2a12;--target:#2e2a12}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:16px 20px 48px;color:var(--fg);background:var(--bg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
a{color:var(--link)}
h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;
border-bottom:1px solid var(--line)}h3{font-size:15px;margin:0 0 6px}
h4{font-size:14px;margin:12px 0 4px}h5{font-size:13px;margin:8px 0 4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12.5px}
pre{margin:4px 0;padding:8px;background:var(--panel);border:1px solid var(--line);
border-radius:6px;overflow:auto}
pre.out{white-space:pre-wrap;overflow-wrap:anywhere;max-height:36em;font-size:11px}
.muted{color:var(--muted)}p{margin:4px 0}small{font-weight:normal;color:var(--muted)}
.verdict{padding:12px 16px;border-radius:8px;border:1px solid var(--line);margin:8px 0 12px}
.verdict h1{font-size:22px}.v-reject{background:var(--reject)}.v-proceed{background:var(--proceed)}
.v-incomplete{background:var(--incomplete)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;
color:#fff;background:var(--advisory);vertical-align:1px}
.o-verified,.o-failed{background:var(--verified)}.o-refuted,.o-passed{background:var(--refuted)}
.o-inconclusive,.o-error,.o-not-run{background:var(--inconclusive)}
nav{font-size:13px}nav a{margin-right:10px}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.edit,.finding,.group{border:1px solid var(--line);border-radius:8px;padding:8px 12px;
margin:8px 0;background:var(--bg)}
.file{margin:14px 0 6px}.file>h3{margin:0;padding:4px 0;border-bottom:1px dashed var(--line)}
.edit h3,.edit h4{margin:0 0 4px}
.finding{border-left:6px solid var(--advisory)}
.finding.o-verified{border-left-color:var(--verified)}
.finding.o-refuted{border-left-color:var(--refuted)}
.finding.o-inconclusive,.finding.o-not-run{border-left-color:var(--inconclusive)}
.finding,.group,.edit{scroll-margin-top:8px}
:target{outline:3px solid var(--link);outline-offset:2px;background:var(--target)!important}
.claim{font-size:15px;font-weight:600;margin:4px 0 6px;overflow-wrap:anywhere}
.pins{list-style:none;padding:0;margin:4px 0}.pins li{margin:2px 0}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.sbs .pane{min-width:0}
@media (max-width:800px){.sbs{grid-template-columns:1fr}}
pre.diff{padding:4px 0}
pre.diff .l{display:block;padding:0 8px;white-space:pre}
pre.diff .n{color:var(--muted);user-select:none}
pre.diff .add{background:var(--add);color:var(--addfg)}
pre.diff .del{background:var(--del);color:var(--delfg)}
pre.diff .hh{background:var(--hh);color:var(--hhfg)}
pre.diff .meta,pre.diff .note{color:var(--muted);font-style:italic}
details{margin:6px 0}summary{cursor:pointer;color:var(--link)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
"""


# -- the sections that need no finding: records, blinding, critic, run -------------------


def records_section(review: Review) -> str:
    parsed = review.findings
    items: list[str] = []
    if parsed.error:
        items.append(f"<li>critic output unusable: {esc(parsed.error)}</li>")
    items += [
        f"<li>rejected record {r.index} of the critic's answer (not listed): {esc(r.reason)}</li>"
        for r in parsed.rejected
    ]
    items += [
        f"<li>downgraded {downgraded_name(parsed, d)} to advisory: {esc(d.reason)} "
        f"<small>(claim: {esc(d.finding.claim)})</small></li>"
        for d in parsed.downgraded
    ]
    items += [f"<li>{esc(line)}</li>" for line in parsed.dropped_summary()]
    body = f"<ul>{''.join(items)}</ul>" if items else "<p>none: every record was accepted</p>"
    return f'<h2 id="records">Set-aside records</h2>{body}'


def blinding_section(review: Review) -> str:
    stripped = review.stripped
    out = ['<h2 id="blinding">Blinding</h2>']
    if stripped.removals:
        out.append(
            "<p>removed before the critic saw the packet (where from, never the text):</p>"
            "<table><thead><tr><th>field</th><th>source</th><th>where</th></tr></thead><tbody>"
            + "".join(
                f"<tr><td>{esc(r.field)}</td><td>{esc(r.source)}</td><td>{esc(r.where)}</td></tr>"
                for r in stripped.removals
            )
            + "</tbody></table>"
        )
    else:
        out.append("<p>nothing stripped</p>")
    if stripped.ignored:
        out.append(
            "<p>request keys ignored (not packet elements): "
            + ", ".join(f"<code>{esc(k)}</code>" for k in stripped.ignored)
            + "</p>"
        )
    out.append(f'<p class="muted">packet <code>{esc(review.packet.digest)}</code></p>')
    return "".join(out)


def critic_section(review: Review) -> str:
    critic = review.critic
    rows: list[tuple[str, str]] = []
    rows.append(("engaged", "yes" if critic.get("engaged") else "no"))
    for key in ("source", "model", "file", "cached", "calls", "prompt_version", "reason"):
        if critic.get(key) not in (None, ""):
            rows.append((key.replace("_", " "), esc(critic[key])))
    tokens = critic.get("tokens")
    if isinstance(tokens, Mapping) and tokens:
        rows.append(("tokens", esc(", ".join(f"{k} {v}" for k, v in sorted(tokens.items())))))
    if critic.get("traces"):
        rows.append(("trace folder", f"<code>{esc(critic['traces'])}</code>"))
    engage = review.engage
    if engage:
        decided = "engaged" if engage.get("engage") else "declined"
        rows.append(("engage decision", f"{esc(decided)}: {esc(engage.get('reason', ''))}"))
    else:
        rows.append(
            ("engage decision", "not taken: only a model under --critic22-engage=auto is weighed")
        )
    return f'<h2 id="critic">Critic</h2><p>{esc(critic_line(critic))}</p>{definition_list(rows)}'


def _timings(results: Results) -> str:
    rows = []
    for rid, result in results.items():
        for key, value in result.logs.items():
            runs = value if isinstance(value, list) else [value]
            for n, one in enumerate(runs, 1):
                if isinstance(one, Mapping) and isinstance(one.get("seconds"), int | float):
                    label = f"{key} {n}" if len(runs) > 1 else key
                    rows.append(
                        f"<tr><td>{esc(rid)}</td><td>{esc(label.replace('_', ' '))}</td>"
                        f"<td>{esc(one.get('status', ''))}</td>"
                        f"<td>{float(one['seconds']):.2f}</td></tr>"
                    )
    if not rows:
        return ""
    return (
        "<details><summary>each child run's time</summary><table><thead><tr><th>result</th>"
        "<th>run</th><th>status</th><th>seconds</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></details>"
    )


def run_section(review: Review, results: Results, run: RunInfo) -> str:
    sandbox = run.sandbox
    mode = str(sandbox.get("mode", "?"))
    isolation = "isolated" if sandbox.get("isolated") else "not isolated"
    facts = [
        ("run id", f"<code>{esc(run.run_id)}</code>"),
        ("base", f"<code>{esc(review.base_commit)}</code>"),
        ("sandbox", f"{esc(mode)} ({esc(isolation)})"),
    ]
    if sandbox.get("warning"):
        facts.append(("sandbox warning", esc(sandbox["warning"])))
    if sandbox.get("pass_env"):
        facts.append(("passed environment", esc(", ".join(map(str, sandbox["pass_env"])))))
    if run.started:
        started = datetime.fromtimestamp(run.started, timezone.utc)
        facts.append(("started", esc(started.strftime("%Y-%m-%d %H:%M:%S UTC"))))
    facts.append(("wall time", f"{run.seconds:.1f} s (session start to the gate)"))
    facts.append(("ledger", f"<code>{esc(run.ledger)}</code>"))
    notes = "".join(f"<li>{esc(note)}</li>" for note in run.notes)
    return (
        f'<h2 id="run">Run</h2>{definition_list(facts)}'
        + (f"<h4>Notes</h4><ul>{notes}</ul>" if notes else "")
        + _timings(results)
    )
