#!/usr/bin/env python3
"""Adds up the results in build/test-results and prints the stages that ran
(stages.tsv: name, exit status, seconds) and one closing line,
"N passed, N failed, N skipped"; exits 1 if anything failed or nothing ran."""
import json
import pathlib
import sys
import xml.etree.ElementTree as ET


def main():
    results = pathlib.Path(sys.argv[1])
    passed = failed = skipped = 0
    for status in results.glob("*.status"):
        name, code = status.read_text().split()
        if code == "0":
            passed += 1
        else:
            failed += 1
            print(f"FAILED: {name} (see {results}/{name}.log)")
    for meson in sorted(results.glob("meson*.json")):
        for line in meson.read_text().splitlines():
            test = json.loads(line)
            if test["result"] == "OK":
                passed += 1
            elif test["result"] == "SKIP":
                skipped += 1
            else:
                failed += 1
                print(f"FAILED: {meson.stem} test {test['name']}")
    junit = sorted(results.glob("pytest*.xml")) + sorted(results.glob("vm*.xml"))
    for xml in junit:
        for case in ET.parse(xml).getroot().iter("testcase"):
            outcome = [c.tag for c in case]
            name = f"{xml.stem}: {case.get('classname')}::{case.get('name')}"
            if "failure" in outcome or "error" in outcome:
                failed += 1
                print(f"FAILED: {name}")
            elif "skipped" in outcome:
                skipped += 1
            else:
                passed += 1
    stages(results / "stages.tsv")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed else 0


def stages(path):
    """The stage table: what ran, how it ended and how long it took."""
    if not path.exists():
        return
    rows = [line.split("\t") for line in path.read_text().splitlines() if line]
    wall = path.with_name("wall-seconds")
    # stages may overlap (the VM beside the integration tests): the run's
    # own clock, where test.sh wrote it, else the sum
    total = int(wall.read_text()) if wall.exists() else sum(int(r[2]) for r in rows)
    print("stage        status  wall time")
    for name, code, secs in rows:
        print(f"{name:<12} {'ok' if code == '0' else 'exit ' + code:<7} "
              f"{int(secs) // 60:3d}:{int(secs) % 60:02d}")
    print(f"{'whole run':<12} {'':<7} {total // 60:3d}:{total % 60:02d}")


if __name__ == "__main__":
    sys.exit(main())
