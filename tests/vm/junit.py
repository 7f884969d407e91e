#!/usr/bin/env python3
"""Turns the guest's VMCHECK lines into JUnit XML, one test case per check,
so scripts/summarize-tests.py counts each; and reads that XML back.

    junit.py RESULTS_TXT OUT_XML [error|skipped NAME MESSAGE]
        every VMCHECK line of RESULTS_TXT (if it exists), plus one more
        case NAME with that outcome (a stage that could not run)
    junit.py --summary XML   print "vm: N passed, N failed, N skipped"
    junit.py --failed XML    print 1 if any case failed, else 0
"""
import os
import sys
import xml.etree.ElementTree as ET


def parse(path):
    cases = []
    if not os.path.exists(path):
        return cases
    for line in open(path, errors="replace"):
        words = line.rstrip("\n").split(" ", 2)
        if len(words) < 3 or words[0] != "VMCHECK":
            continue
        name, _, reason = words[2].partition(": ")
        cases.append((words[1], name, reason))
    return cases


def write(cases, out):
    suite = ET.Element("testsuite", name="qosway-vm", tests=str(len(cases)))
    for status, name, reason in cases:
        case = ET.SubElement(suite, "testcase", classname="vm", name=name)
        if status == "FAIL":
            ET.SubElement(case, "failure", message=reason)
        elif status == "ERROR":
            ET.SubElement(case, "error", message=reason)
        elif status == "SKIP":
            ET.SubElement(case, "skipped", message=reason)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(out, encoding="unicode", xml_declaration=True)


def counts(path):
    passed = failed = skipped = 0
    if os.path.exists(path):
        for case in ET.parse(path).getroot().iter("testcase"):
            tags = [c.tag for c in case]
            if "failure" in tags or "error" in tags:
                failed += 1
            elif "skipped" in tags:
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped


def main(argv):
    if argv[1] == "--summary":
        print("vm: %d passed, %d failed, %d skipped" % counts(argv[2]))
        return 0
    if argv[1] == "--failed":
        passed, failed, _ = counts(argv[2])
        print(1 if failed or not passed else 0)
        return 0
    cases = parse(argv[1])
    if len(argv) > 3:
        status = {"error": "ERROR", "skipped": "SKIP"}[argv[3]]
        cases.append((status, argv[4], argv[5] if len(argv) > 5 else ""))
    write(cases, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
