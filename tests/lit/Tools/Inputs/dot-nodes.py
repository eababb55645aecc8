"""Counts the nodes of a DOT file locus-dump wrote, fails above the limit,
and renders it with Graphviz, failing when that takes 10 s or more.

  dot-nodes.py graph.dot LIMIT
"""
import re
import subprocess
import sys
import time

text = open(sys.argv[1], encoding="utf-8").read()
limit = int(sys.argv[2])
nodes = len(re.findall(r"^\s+[gn][0-9]+ \[", text, re.M))
start = time.monotonic()
subprocess.run(["dot", "-Tsvg", "-o", sys.argv[1] + ".svg", sys.argv[1]],
               check=True)
seconds = time.monotonic() - start
print("nodes %d of at most %d, rendered in %.2f s" % (nodes, limit, seconds))
sys.exit(1 if nodes > limit or nodes == 0 or seconds >= 10 else 0)
