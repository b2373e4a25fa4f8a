#!/usr/bin/env python3
"""Validates what fuzz_schema's matcher completed against its schema with an independent JSON
Schema validator (Debian's python3-jsonschema): draft 2020-12 for a schema that uses its tuple
keyword prefixItems, draft 7 (the suite's, with `items: [...]` tuples) for the rest.

  check_schema_outputs.py OUT.jsonl

Each line is {"schema": "<schema text>", "instance": "<the text the matcher completed>"}. Exit 0
when every instance parses and validates, 1 with the first failures otherwise."""
import json
import sys

import jsonschema


def main(path):
    bad = checked = skipped = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            try:
                schema = json.loads(rec["schema"])
                cls = (jsonschema.Draft202012Validator if "prefixItems" in rec["schema"]
                       else jsonschema.Draft7Validator)
                validator = cls(schema)
            except Exception:  # not a schema this validator takes ($id a list, ...)
                skipped += 1
                continue
            try:
                instance = json.loads(rec["instance"])
            except ValueError as e:
                bad += 1
                print(f"not JSON: {rec['instance']!r} ({e}) for {rec['schema'][:200]}")
                continue
            try:
                ok = validator.is_valid(instance)
            except Exception:  # the validator's own failures on odd schemas ($id as a list, ...)
                skipped += 1
                continue
            checked += 1
            if not ok:
                bad += 1
                print(f"invalid: {rec['instance']!r} for {rec['schema'][:300]}")
            if bad >= 20:
                break
    print(f"check_schema_outputs: {checked} values validated, {bad} invalid, {skipped} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
