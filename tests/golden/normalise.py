#!/usr/bin/env python3
"""normalise.py DIR: blank the wall-clock timings in the files of DIR, in
place, so that two runs of the same commands compare byte for byte
(test_golden.sh).  Only timings change: JSON keys that hold seconds, and in
text "<number> s", "runs/s" figures and the sweep's timing line."""
import os, re, sys

JSON_KEYS = re.compile(r'("(?:seconds|secs_[a-z_]+|elapsed[a-z_]*)":\s*)[-0-9.eE+]+')
SECS = re.compile(r"\b\d+(?:\.\d+)?(?:e[-+]?\d+)? ?(s|ms|min)\b")
RATE = re.compile(r"\b\d+(?:\.\d+)?(?:e[-+]?\d+)? (runs/s|runs per second)")

for name in sorted(os.listdir(sys.argv[1])):
    path = os.path.join(sys.argv[1], name)
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode()
    except UnicodeDecodeError:
        continue  # binary (a figure): compared as it is
    new = JSON_KEYS.sub(r"\1T", text)
    if not name.endswith((".json", ".jsonl", ".csv")):
        new = RATE.sub(r"T \1", SECS.sub(r"T \1", new))
        new = re.sub(r"(?m)^timing .*$", "timing T", new)
    if new != text:
        with open(path, "w") as f:
            f.write(new)
