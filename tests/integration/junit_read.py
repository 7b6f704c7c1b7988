"""Reads a JUnit XML file with Debian's python3-junitparser, a JUnit consumer as CI tools use
one, and prints what it understood as JSON on stdout, for tests/integration/junit_test.cpp:
{"suites": [{"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname",
"properties": {name: value}, "system_out", "cases": [{"name", "classname", "time",
"properties": {name: value}, "results": [{"kind", "message", "type", "text"}],
"system_out"}]}]}. Exit 2 with the parser's error when the file does not parse.
Run by /usr/bin/python3 (Debian's module is not on another interpreter's path)."""
import json
import sys

import junitparser
from junitparser import JUnitXml, TestSuite


def props(node):
    # TestSuite.properties() exists; a testcase's <properties> (which Jenkins, GitLab and
    # pytest's record_property use) is read through the same Properties element.
    out = {}
    block = node.child(junitparser.Properties)
    if block is not None:
        for p in block:
            out[p.name] = p.value
    return out


def suite_out(suite):
    # TestCase.system_out exists; a suite's <system-out> through the same SystemOut element.
    elem = suite.child(junitparser.junitparser.SystemOut)
    return elem.text if elem is not None else None


def main():
    try:
        xml = JUnitXml.fromfile(sys.argv[1])
    except Exception as e:  # the parser's own error, whatever it is
        print("junit_read: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    doc = {"junitparser": junitparser.version, "suites": []}
    for s in suites:
        cases = []
        for c in s:
            results = []
            for r in c.result:
                results.append({"kind": r._tag, "message": r.message, "type": r.type,
                                "text": r.text})
            cases.append({"name": c.name, "classname": c.classname, "time": c.time,
                          "properties": props(c), "results": results,
                          "system_out": c.system_out})
        doc["suites"].append({"name": s.name, "tests": s.tests, "failures": s.failures,
                              "errors": s.errors, "skipped": s.skipped, "time": s.time,
                              "timestamp": s.timestamp, "hostname": s.hostname,
                              "properties": props(s), "system_out": suite_out(s),
                              "cases": cases})
    json.dump(doc, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
