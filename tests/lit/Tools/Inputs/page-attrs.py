"""Reads the data-* attributes locus-dump's HTML page sets on <body> once
drawn (from Chromium's --dump-dom) and checks bounds on them:

  page-attrs.py page.dom load-ms<2000 visible-ops=0 rendered>=2000

Prints each checked attribute as name=value; exits 1 when one is missing or
out of bounds.
"""
import operator
import re
import sys

dom = open(sys.argv[1], encoding="utf-8").read()
body = re.search(r"<body([^>]*)>", dom)
attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1) if body else ""))
ops = {"<=": operator.le, ">=": operator.ge, "<": operator.lt,
       ">": operator.gt, "=": operator.eq}
failed = False
for check in sys.argv[2:]:
    name, op, bound = re.match(r"([a-z-]+)(<=|>=|<|>|=)(.+)", check).groups()
    value = attrs.get(name)
    ok = value is not None and ops[op](float(value), float(bound))
    print("%s=%s%s" % (name, value, "" if ok else "  FAILS " + check))
    failed |= not ok
sys.exit(1 if failed else 0)
