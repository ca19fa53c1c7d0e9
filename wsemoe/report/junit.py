"""JUnit XML of an invariant run: what CI services display as test results.

One <testsuite> per config, one <testcase> per invariant on it (classname = config, name =
invariant): <failure> with the worst violation, <error> when the check itself raised, <skipped>
when the invariant does not apply to the config. Written atomically (temporary file, then rename),
so a CI job never picks up half a report.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from wsemoe.analysis.suite import Report
from wsemoe.errors import ConfigError


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


def check_target(path: Path) -> None:
    """Refuse a JUnit target that cannot be a file, before anything runs (one line, exit 2)."""
    if path.is_dir():
        raise ConfigError("is a folder; give a file name for the JUnit report", loc=("--junit", str(path)))
    if path.parent.exists() and not path.parent.is_dir():
        raise ConfigError("its parent is not a folder", loc=("--junit", str(path)))


def write_junit(report: Report, path: Path) -> Path:
    """Write the JUnit XML atomically (parent folders created)."""
    path = Path(path)
    check_target(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(junit_xml(report))
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise ConfigError(f"cannot write the JUnit report: {exc.strerror or exc}", loc=("--junit", str(path))) from exc
    return path
