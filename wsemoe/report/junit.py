"""JUnit XML of an invariant run: what CI services display as test results.

One <testsuite> per config, one <testcase> per invariant on it (classname = config, name =
invariant): <failure> with the worst violation, <error> when the check itself raised, <skipped>
when the invariant does not apply to the config. Written through `store/writer.py` (atomically, so a
CI job never picks up half a report, and never over a file wsemoe did not write).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from wsemoe.analysis.invariants.suite import Report
from wsemoe.store import writer


def _counts(results) -> dict:
    c = {"tests": len(results), "failures": 0, "errors": 0, "skipped": 0,
         "time": f"{sum(r.seconds for r in results):.3f}"}
    for r in results:
        key = {"fail": "failures", "error": "errors", "skip": "skipped"}.get(r.status)
        if key:
            c[key] += 1
    return {k: str(v) for k, v in c.items()}


def junit_xml(report: Report) -> str:
    """The report as a JUnit XML document."""
    root = ET.Element("testsuites", {"name": "wsemoe invariants", **_counts(report.results),
                                     "time": f"{report.seconds:.3f}"})
    for info in report.configs:
        results = [r for r in report.results if r.config == info["config"]]
        suite = ET.SubElement(root, "testsuite", {"name": info["config"], **_counts(results)})
        props = ET.SubElement(suite, "properties")
        for key in ("source", "points", "checked_points"):
            ET.SubElement(props, "property", {"name": key, "value": str(info[key])})
        for r in results:
            case = ET.SubElement(suite, "testcase", {"classname": info["config"], "name": r.invariant.name,
                                                     "time": f"{r.seconds:.4f}"})
            detail = f"{r.invariant.statement}\nwhy: {r.invariant.reason}\n{r.message()}"
            if r.status == "fail":
                ET.SubElement(case, "failure", {"type": "InvariantViolation", "message": r.message()}).text = detail
            elif r.status == "error":
                ET.SubElement(case, "error", {"type": "CheckError", "message": r.message()}).text = detail
            elif r.status == "skip":
                ET.SubElement(case, "skipped", {"message": r.message()})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def check_target(path: Path, force: bool = False) -> Path:
    """Refuse a JUnit target wsemoe may not write, before anything runs (one line, exit 2)."""
    return writer.check_file(path, "junit", force)


def write_junit(report: Report, path: Path, force: bool = False) -> Path:
    """Write the JUnit XML atomically, never over a file wsemoe did not write (`store/writer.py`)."""
    return writer.write_file(path, junit_xml(report), "junit", force)
