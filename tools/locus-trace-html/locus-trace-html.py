#!/usr/bin/env python3
"""locus-trace-html: a Locus trace (LOCUS_TRACE, locus-run --trace) as one
self-contained HTML page, for a machine with no trace viewer at hand:

  locus-trace-html trace.json -o trace.html [--steps N]

The page has a timeline of the last N steps (default 3): one lane per
device's kernels and per device's incoming copies, a box per launch or copy
(hover for its name, time, bytes and the user's source lines), and a table
of kernels by total time with their sources. chrome://tracing and
ui.perfetto.dev open the JSON itself.
"""
import argparse
import html
import json
import os
import re
import sys
import tempfile

COLOURS = {"kernel": "#4C78A8", "copy": "#F58518", "step": "#9D9D9D"}
DEVICE_COLOURS = ["#4C78A8", "#54A24B", "#B279A2", "#72B7B2", "#EECA3B"]


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
        events = trace["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("locus-trace-html: %s is not a Locus trace: %s" % (path, e))
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    timed = [e for e in events if e.get("ph") == "X"]
    return lanes, timed


SOURCE_PATH = re.compile(r" at ([^;]*/)([^/;]+:\d+)")


def short_source(source):
    """The source with each file shown by its base name."""
    return SOURCE_PATH.sub(r" at \2", source)


def fmt_us(us):
    return "%.1f us" % us if us < 1000 else "%.3f ms" % (us / 1000)


def fmt_bytes(n):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024.0
    return str(n)


def page(lanes, timed, steps, title):
    step_events = sorted((e for e in timed if e["cat"] == "step"),
                         key=lambda e: e["ts"])
    shown = step_events[-steps:] if steps > 0 else step_events
    if shown:
        t0 = shown[0]["ts"]
        t1 = max(e["ts"] + e["dur"] for e in shown)
        keep = {e["args"]["step"] for e in shown}
        window = [e for e in timed if e["args"].get("step") in keep]
    else:  # no step: the load alone
        window = timed
        t0 = min((e["ts"] for e in timed), default=0.0)
        t1 = max((e["ts"] + e["dur"] for e in timed), default=1.0)
    span = max(t1 - t0, 1e-3)
    used = sorted({e["tid"] for e in window} | {0})
    row = {tid: i for i, tid in enumerate(used)}
    width, label_w, lane_h = 1100, 230, 34
    boxes = []
    for e in window:
        x = label_w + (e["ts"] - t0) / span * width
        w = max(e["dur"] / span * width, 1.0)
        y = row[e["tid"]] * lane_h + 4
        colour = COLOURS.get(e["cat"], "#888")
        if e["cat"] == "kernel":
            colour = DEVICE_COLOURS[(e["tid"] - 1) % len(DEVICE_COLOURS)]
        a = e["args"]
        tip = "%s\n%s" % (e["name"], fmt_us(e["dur"]))
        if "bytes" in a:
            tip += ", %s" % fmt_bytes(a["bytes"])
        if a.get("source"):
            tip += "\n" + short_source(a["source"]).replace("; ", "\n")
        label = e["name"] if w > 60 else ""
        boxes.append(
            '<div class="ev %s" style="left:%.1fpx;top:%dpx;width:%.1fpx;'
            'background:%s" title="%s">%s</div>'
            % (e["cat"], x, y, w, colour, html.escape(tip, quote=True),
               html.escape(label)))
    labels = "".join(
        '<div class="lane" style="top:%dpx">%s</div>'
        % (row[tid] * lane_h, html.escape(lanes.get(tid, "lane %d" % tid)))
        for tid in used)
    ticks = []
    for i in range(6):
        t = span * i / 5
        ticks.append('<div class="tick" style="left:%.1fpx">%s</div>'
                     % (label_w + t / span * width, fmt_us(t)))
    height = len(used) * lane_h + 30
    # Kernels by total time over every step.
    totals = {}
    for e in timed:
        if e["cat"] != "kernel":
            continue
        k = (e["name"], e["args"].get("device", ""))
        t = totals.setdefault(k, [0.0, 0, e["args"].get("source", "")])
        t[0] += e["dur"]
        t[1] += 1
    all_us = sum(t[0] for t in totals.values()) or 1.0
    copies = [e for e in timed if e["cat"] == "copy"]
    rows = "".join(
        "<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%.1f%%</td>"
        "<td class=src title=\"%s\">%s</td></tr>"
        % (html.escape(n), html.escape(d), t[1], fmt_us(t[0] / t[1]),
           100 * t[0] / all_us, html.escape(t[2], quote=True),
           html.escape(short_source(t[2])))
        for (n, d), t in sorted(totals.items(), key=lambda kv: -kv[1][0]))
    summary = "%d steps, %d kernel launches, %d copies (%s); showing %s" % (
        len(step_events), sum(t[1] for t in totals.values()), len(copies),
        fmt_bytes(sum(e["args"].get("bytes", 0) for e in copies)),
        "the last %d steps" % len(shown) if shown else "the load")
    return """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>%(title)s</title><style>
body{font:13px sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}
.timeline{position:relative;height:%(height)dpx;border-top:1px solid #ccc}
.lane{position:absolute;left:0;width:%(label_w)dpx;height:34px;line-height:34px;
 overflow:hidden;white-space:nowrap;color:#444}
.ev{position:absolute;height:24px;line-height:24px;font-size:11px;color:#fff;
 overflow:hidden;white-space:nowrap;border-radius:2px;box-sizing:border-box;
 border-right:1px solid #fff;padding-left:2px}
.ev.step{opacity:.55}
.tick{position:absolute;bottom:0;font-size:11px;color:#777;border-left:1px solid #bbb;
 padding-left:2px}
table{border-collapse:collapse;margin-top:14px}
td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;
 white-space:nowrap}
td.src{white-space:normal}
td.src{font-family:monospace;font-size:12px}
</style></head><body>
<h1>%(title)s</h1><p>%(summary)s. Hover a box for its time, bytes and source lines.</p>
<div class="timeline">%(labels)s%(boxes)s%(ticks)s</div>
<table><tr><th>kernel</th><th>device</th><th>calls</th><th>mean</th><th>share</th>
<th>source (ops at the user's lines)</th></tr>%(rows)s</table>
</body></html>
""" % {"title": html.escape(title), "height": height, "label_w": label_w,
       "summary": html.escape(summary), "labels": labels,
       "boxes": "".join(boxes), "ticks": "".join(ticks), "rows": rows}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--steps", type=int, default=3,
                   help="steps in the timeline (0: all)")
    a = p.parse_args()
    if a.steps < 0:
        p.error("--steps takes 0 or more, not %d" % a.steps)
    lanes, timed = load(a.trace)
    text = page(lanes, timed, a.steps, os.path.basename(a.trace))
    folder = os.path.dirname(os.path.abspath(a.output))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".locus-trace-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.output)
    except OSError as e:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        sys.exit("locus-trace-html: cannot write %s: %s" % (a.output, e))
    print("locus-trace-html: wrote %s" % a.output)


main()
