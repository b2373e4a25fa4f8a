#!/usr/bin/env python3
"""Validates what fuzz_schema's matcher completed against its schema with an independent JSON
Schema validator (Debian's python3-jsonschema): draft 2020-12 for a schema that uses its tuple
keyword prefixItems, draft 7 (the suite's, with `items: [...]` tuples) for the rest. Formats are
asserted: jsonschema's own checkers (date, ipv4, ipv6, uuid; uri through Debian's
python3-rfc3987), and, where Debian packages none, checkers written here from the RFCs
(date-time and time: RFC 3339; hostname: RFC 1123; email: RFC 5321's Mailbox with a Dot-string
local part, stricter than jsonschema's "contains an @").

  check_schema_outputs.py OUT.jsonl

Each line is {"schema": "<schema text>", "instance": "<the text the matcher completed>"}, and
optionally "via" (which walk wrote it). Exit 0 when every instance parses and validates, 1 with
the first failures otherwise."""
import copy
import datetime
import json
import re
import sys

import jsonschema

TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$")
LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$")
ATOM = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$")


def is_time(s):
    """RFC 3339 full-time; second 60 only as a leap second, at 23:59 UTC."""
    m = TIME.match(s)
    if not m:
        return False
    if m.group(3) == "60":
        offset = m.group(5)
        minutes = 0 if offset in ("Z", "z") else (
            (1 if offset[0] == "-" else -1) * (int(offset[1:3]) * 60 + int(offset[4:6])))
        utc = (int(m.group(1)) * 60 + int(m.group(2)) + minutes) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def is_date(s):
    try:
        return len(s) == 10 and s.isascii() and bool(datetime.date.fromisoformat(s))
    except ValueError:
        return False


def is_date_time(s):
    return len(s) > 11 and s[10] in "Tt" and is_date(s[:10]) and is_time(s[11:])


def is_hostname(s, need_dot=False):
    if not s or len(s) > 253:
        return False
    labels = s.split(".")
    if need_dot and len(labels) < 2:
        return False
    return all(len(l) <= 63 and LABEL.match(l) for l in labels)


def is_email(s):
    local, at, domain = s.rpartition("@")
    if not at or len(s) > 254 or len(local) > 64:
        return False
    return all(ATOM.match(a) for a in local.split(".")) and is_hostname(domain, need_dot=True)


def checker_for(base):
    fc = copy.deepcopy(base)
    for name, fn in (("date", is_date), ("time", is_time), ("date-time", is_date_time),
                     ("hostname", is_hostname), ("email", is_email)):
        fc.checks(name)(lambda inst, fn=fn: not isinstance(inst, str) or fn(inst))
    if "uri" not in fc.checkers:
        sys.exit("check_schema_outputs: the uri checker needs python3-rfc3987")
    return fc


def main(path):
    formats7 = checker_for(jsonschema.draft7_format_checker)
    formats2020 = checker_for(jsonschema.draft202012_format_checker)
    bad = checked = skipped = formatted = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            try:
                schema = json.loads(rec["schema"])
                if "prefixItems" in rec["schema"]:
                    validator = jsonschema.Draft202012Validator(schema, format_checker=formats2020)
                else:
                    validator = jsonschema.Draft7Validator(schema, format_checker=formats7)
            except Exception:  # not a schema this validator takes ($id a list, ...)
                skipped += 1
                continue
            try:
                instance = json.loads(rec["instance"])
            except ValueError as e:
                bad += 1
                print(f"not JSON ({rec.get('via', 'bytes')}): {rec['instance']!r} ({e}) for "
                      f"{rec['schema'][:200]}")
                continue
            try:
                ok = validator.is_valid(instance)
            except Exception:  # the validator's own failures on odd schemas ($id as a list, ...)
                skipped += 1
                continue
            checked += 1
            formatted += '"format"' in rec["schema"]
            if not ok:
                bad += 1
                print(f"invalid ({rec.get('via', 'bytes')}): {rec['instance']!r} for "
                      f"{rec['schema'][:300]}")
            if bad >= 20:
                break
    print(f"check_schema_outputs: {checked} values validated ({formatted} under a format, "
          f"asserted), {bad} invalid, {skipped} skipped")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
