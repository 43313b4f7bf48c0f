#!/usr/bin/env python3
"""aotgrad: the OpInfo conformance sweep's report (tools/opinfo_sweep.py runs the sweep): verdicts
per op, counts, the per-cause tables, the markdown section of BENCHMARKS.md and the expected
results of the CI sample (ctest conformance.opinfo_sample). Reads and writes plain JSON and text;
needs no torch."""

import collections
import json
import os

import benchmarks_md

# The anchors: PyTorch's own AOTAutograd's aot_function with each partition (report key, kept from
# when the anchor was functorch; partition name).
ANCHORS = (("functorch", "min_cut"), ("functorch_default", "default"))


def reference(report):
    """The anchor's name for the report's torch: "PyTorch 2.11's AOTAutograd"."""
    return "PyTorch %s's AOTAutograd" % ".".join(report["torch"].split("+")[0].split(".")[:2])


def who_title(report, who):
    """The row title of aotgrad or an anchor in the tables."""
    if who == "aotgrad":
        return "**aotgrad**"
    partition = dict(ANCHORS)[who]
    return "%s `aot_function`, %s" % (reference(report),
                                      "min-cut" if partition == "min_cut" else "default partition")


def who_short(who):
    """A column heading's name for aotgrad or an anchor."""
    return {"aotgrad": "aotgrad", "functorch": "PyTorch min-cut",
            "functorch_default": "PyTorch default"}[who]


def _verdict(cases, who):
    """'pass', 'fail' or None (no case) of a list of case entries for 'aotgrad' or 'functorch'."""
    if not cases:
        return None
    for c in cases:
        r = c.get(who)
        if r is None or r.get("cause"):
            return "fail"
    return "pass"


def build_report(keys, ops, meta):
    """The report of a sweep: `meta` (torch, harness, samples, rtol, atol, timing, functorch,
    jobs, timeout_s, machine) and a row per op of `keys` from its op.json record in `ops`."""
    rows = []
    for k in keys:
        rec = ops[k]
        a = [c for c in rec["cases"] if c["id"].startswith("a")]
        b = [c for c in rec["cases"] if c["id"].startswith("b")]
        row = {"key": k, "family": rec["family"], "has_inplace": rec["has_inplace"],
               "skipped": rec.get("skipped", {}), "cases": rec["cases"]}
        for who in _who(meta["functorch"]):
            va, vb = _verdict(a, who), _verdict(b, who)
            both = None
            if va is not None or vb is not None:
                both = "pass" if va != "fail" and vb != "fail" and va is not None else "fail"
            row[who] = {"a": va, "b": vb, "both": both,
                        "first_failure": _first_failure(rec["cases"], who)}
        rows.append(row)
    return dict(meta, ops=rows)


def _who(with_functorch):
    return ("aotgrad",) + (tuple(w for w, _ in ANCHORS) if with_functorch else ())


def _first_failure(cases, who):
    for c in cases:
        r = c.get(who) or {}
        if r.get("cause"):
            return {"case": c["id"], "cause": r["cause"], "detail": r.get("detail")}
    return None


def counts(report, who):
    rows = [r for r in report["ops"] if who in r]
    def n(part, verdict):
        return sum(1 for r in rows if r[who][part] == verdict)
    return {"a_pop": sum(1 for r in rows if r[who]["a"] is not None), "a_pass": n("a", "pass"),
            "b_pop": sum(1 for r in rows if r[who]["b"] is not None), "b_pass": n("b", "pass"),
            "both_pop": sum(1 for r in rows if r[who]["both"] is not None),
            "both_pass": n("both", "pass")}


def cause_table(report, who):
    """{cause: (ops whose first failure it is, failing cases)}."""
    ops = collections.Counter()
    cases = collections.Counter()
    for r in report["ops"]:
        if who not in r:
            continue
        ff = r[who]["first_failure"]
        if ff:
            ops[_cause_name(ff["cause"])] += 1
        for c in r["cases"]:
            res = c.get(who) or {}
            if res.get("cause"):
                cases[_cause_name(res["cause"])] += 1
    return {k: (ops[k], cases[k]) for k in sorted(cases, key=lambda k: (-ops[k], -cases[k], k))}


def _cause_name(cause):
    return cause


def unknown_ops(report):
    """[(aten op, ops it blocks, cases)] most frequent first, over aotgrad's 'unknown op' cases."""
    blocks = collections.defaultdict(set)
    cases = collections.Counter()
    for r in report["ops"]:
        for c in r["cases"]:
            res = c.get("aotgrad") or {}
            if res.get("cause") == "unknown op":
                blocks[res["detail"]].add(r["key"])
                cases[res["detail"]] += 1
    return sorted(((op, len(blocks[op]), cases[op]) for op in blocks),
                  key=lambda t: (-t[1], -t[2], t[0]))


def _pct(n, d):
    return "%d of %d (%.1f%%)" % (n, d, 100.0 * n / d) if d else "0 of 0"


def summary_text(report):
    lines = []
    for who in _who(report["functorch"]):
        c = counts(report, who)
        lines.append("%-17s (a) %s   (b) %s   both %s" % (
            who_short(who), _pct(c["a_pass"], c["a_pop"]), _pct(c["b_pass"], c["b_pop"]),
            _pct(c["both_pass"], c["both_pop"])))
    t = report["timing"]
    lines.append("time: %.0f s (export %.0f s, %d aotgrad runs %.0f s)" % (
        t["total_s"], t["export_s"], t["aotgrad_runs"], t["aotgrad_s"]))
    return "\n".join(lines)


def _md_escape(text):
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _ff_text(ff, width=200):
    if not ff:
        return "pass"
    return _md_escape("%s %s: %s" % (ff["case"], ff["cause"], ff["detail"] or ""))[:width]


def markdown(report, command=None):
    """The report as the "OpInfo conformance" section of BENCHMARKS.md."""
    who_list = list(_who(report["functorch"]))
    rows = report["ops"]
    L = ["## OpInfo conformance", ""]
    L.append(
        "PyTorch's own op database (`op_db` of "
        "`torch.testing._internal.common_methods_invocations`, torch %s) through aotgrad: "
        "every OpInfo with float32 CPU support, up to %d samples each (a fixed, seeded "
        "selection). (a) The op's loss sum_i (out_i * w_i).sum() over its floating outputs "
        "(fixed random w_i) is traced with make_fx, written by `tools/export.py`'s writer and "
        "trained by `aotgrad run --train`; the loss and every input grad are compared with eager "
        "autograd (a sample with no floating output runs forward only and compares its outputs). "
        "(b) The in-place variant is traced and run by `aotgrad run`; the written-back input is "
        "compared with eager. An op passes when all its samples pass; \"both\" is (a) and, where "
        "the op has an in-place variant, (b). Comparison: shapes and dtypes equal, integers exact, "
        "floats within rtol %g and atol %g x max(1, max|expected|), NaN equal to NaN; a grad that "
        "differs from eager's passes when float64 finite differences agree with it and not with "
        "eager's (noted below); random ops are compared with their traced graph run eagerly under "
        "the same seed. The anchor is %s (`torch._functorch.aot_autograd.aot_function`, no-op "
        "compilers; min-cut and default partition) on the same cases with the same comparison. "
        "`tools/opinfo_sweep.py` (harness version %s) describes the method in full." % (
            report["torch"], report["samples"], report["rtol"], report["atol"], reference(report),
            report["harness"]))
    L.append("")
    if command:
        L += ["```sh", command, "```", ""]
    L += ["| | ops passing (a) | ops passing (b) | ops passing both |", "|---|---|---|---|"]
    for who in who_list:
        c = counts(report, who)
        L.append("| %s | %s | %s | %s |" % (who_title(report, who), _pct(c["a_pass"], c["a_pop"]),
                                            _pct(c["b_pass"], c["b_pop"]),
                                            _pct(c["both_pass"], c["both_pop"])))
    L.append("")
    if "functorch" in who_list:
        # The measure: of what the anchor passes, how much aotgrad passes too.
        ref_ops = [r for r in rows if r["functorch"]["both"] == "pass"]
        ops_too = sum(1 for r in ref_ops if r["aotgrad"]["both"] == "pass")
        ref_cases = [c for r in rows for c in r["cases"]
                     if c.get("export") == "ok" and c["functorch"]["cause"] is None]
        cases_too = sum(1 for c in ref_cases if c["aotgrad"]["cause"] is None)
        L += ["Of the %d ops the anchor (min-cut) passes, aotgrad passes %s; of its %d passing "
              "cases, %s." % (len(ref_ops), _pct(ops_too, len(ref_ops)), len(ref_cases),
                              _pct(cases_too, len(ref_cases))), ""]
    t = report["timing"]
    m = report.get("machine")
    cases = sum(len(r["cases"]) for r in rows)
    n_fw = sum(1 for r in rows if any(c["id"].startswith("a") for c in r["cases"]) and all(
        c.get("kind") == "forward" for c in r["cases"] if c["id"].startswith("a")))
    def unusable(part):
        """'`op`, ...: reason; ...' for the ops without a case of `part` ('a', or 'b' among the
        ops with an in-place variant), grouped by their most frequent skip reason."""
        why = collections.OrderedDict()
        for r in rows:
            if any(c["id"].startswith(part) for c in r["cases"]):
                continue
            if part == "b" and not r["has_inplace"]:
                continue
            reasons = collections.Counter(r["skipped"].get(part, []))
            reason = reasons.most_common(1)[0][0][:90] if reasons else "no sample"
            why.setdefault(reason, []).append(r["key"])
        n = sum(len(v) for v in why.values())
        text = "; ".join("%s: %s" % (", ".join("`%s`" % k for k in keys), _md_escape(w))
                         for w, keys in why.items())
        return n, text or "none"

    n_a, why_a = unusable("a")
    n_b, why_b = unusable("b")
    L.append("%d OpInfos, %d cases; %d ops are forward-only in (a) (no floating output: argmax, "
             "eq, ...). Without a usable sample, so outside the counts: %d ops in (a) (%s) and %d "
             "of the %d in-place variants in (b) (%s)." % (
                 len(rows), cases, n_fw, n_a, why_a, n_b, sum(r["has_inplace"] for r in rows),
                 why_b))
    L.append("")
    if m:
        L.append("Run on %s, %d cores, load average %s at the start and %s at the end: %.0f s in "
                 "all, %.0f s building and exporting the cases (%s), %.0f s for %d `aotgrad run` "
                 "processes at -j%d (each starts libtorch, about 0.85 s on a quiet machine)." % (
                     m["date"], m["cores"], m["load"], m["load_end"], t["total_s"], t["export_s"],
                     "%s as the anchor too" % reference(report) if report["functorch"]
                     else "no anchor",
                     t["aotgrad_s"], t["aotgrad_runs"], report["jobs"]))
        L.append("")
    tables = {who: cause_table(report, who) for who in who_list}
    causes = []
    for who in who_list:
        causes += [k for k in tables[who] if k not in causes]
    L.append("Failures by cause: ops (counted under the cause of their first failing case) and "
             "cases (every failing case).")
    L.append("")
    L.append("| cause |" + "".join(" %s ops | cases |" % who_short(w) for w in who_list))
    L.append("|---|" + "---|---|" * len(who_list))
    for k in causes:
        L.append("| %s |" % _md_escape(k) + "".join(" %d | %d |" % tables[w].get(k, (0, 0))
                                                    for w in who_list))
    L.append("")
    unk = unknown_ops(report)
    if unk:
        L.append("aotgrad's unknown ops by the number of OpInfos they stop (top 30 of %d):"
                 % len(unk))
        L.append("")
        L += ["| ATen op | OpInfos | cases |", "|---|---|---|"]
        L += ["| `%s` | %d | %d |" % u for u in unk[:30]]
        L.append("")
    other = [(r["key"], c["id"], c["aotgrad"]) for r in rows for c in r["cases"]
             if (c.get("aotgrad") or {}).get("cause") not in (None, "unknown op")]
    if other:
        L.append("aotgrad's failures other than unknown ops (%d cases):" % len(other))
        L.append("")
        L += ["| op | case | cause | detail |", "|---|---|---|---|"]
        L += ["| `%s` | %s | %s | %s |" % (k, cid, _md_escape(res["cause"]),
                                          _md_escape(res.get("detail"))[:300])
              for k, cid, res in other]
        L.append("")
    noted = [(r["key"], c["id"], w, c[w]["detail"])
             for r in rows for c in r["cases"] for w in who_list
             if c.get(w) and not c[w].get("cause") and c[w].get("detail")]
    if noted:
        L.append("Passing cases with a note (%d):" % len(noted))
        L.append("")
        L += ["| op | case | who | note |", "|---|---|---|---|"]
        L += ["| `%s` | %s | %s | %s |" % (k, cid, who_short(w), _md_escape(d)[:300])
              for k, cid, w, d in noted]
        L.append("")
    failing = [r for r in rows if any(r[w]["first_failure"] for w in who_list)]
    L.append("<details><summary>Every op with a failing case (%d), with its first failure</summary>"
             % len(failing))
    L.append("")
    L.append("| op | aotgrad (a) | aotgrad (b) |" + "".join(" %s |" % who_short(w)
                                                           for w in who_list))
    L.append("|---|---|---|" + "---|" * len(who_list))
    for r in failing:
        cells = ["`%s`" % r["key"], r["aotgrad"]["a"] or "-", r["aotgrad"]["b"] or "-"]
        cells += [_ff_text(r[w]["first_failure"]) for w in who_list]
        L.append("| " + " | ".join(cells) + " |")
    L += ["", "</details>", ""]
    return "\n".join(L)


# --- expected results (the CI sample) -------------------------------------------------------------


def read_expected(path):
    """{key: {'a': 'pass'|'fail'|'-', 'b': ...}} from lines `KEY a=pass b=fail  # comment`."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            entry = {}
            for w in words[1:]:
                part, _, v = w.partition("=")
                if part not in ("a", "b") or v not in ("pass", "fail", "-"):
                    raise SystemExit("%s:%d: expected 'KEY a=pass|fail|- b=pass|fail|-', got %r"
                                     % (path, n, line))
                entry[part] = v
            out[words[0]] = entry
    return out


def check_expected(report, path, report_path=None):
    """Exit status 1 when an op expected to pass fails (a regression), or a listed op is not in
    the report; prints the ops expected to fail that pass (an improvement: rewrite the file)."""
    expected = read_expected(path)
    regressions, improvements = [], []
    seen = set()
    for r in report["ops"]:
        want = expected.get(r["key"])
        if want is None:
            continue
        seen.add(r["key"])
        for part in ("a", "b"):
            got = r["aotgrad"][part] or "-"
            exp = want.get(part, "-")
            if got == exp:
                continue
            ff = _first_failure([c for c in r["cases"] if c["id"].startswith(part)], "aotgrad")
            why = "%s %s: %s" % (ff["case"], ff["cause"], ff["detail"]) if ff else ""
            if exp == "pass" or (exp == "fail" and got == "-") or (exp == "-" and got == "fail"):
                regressions.append("%s (%s): expected %s, got %s %s"
                                   % (r["key"], part, exp, got, why))
            else:
                improvements.append("%s (%s): expected %s, now %s" % (r["key"], part, exp, got))
    regressions += ["%s: listed, but not in the report" % k for k in expected if k not in seen]
    for line in improvements:
        print("IMPROVED: %s" % line)
    for line in regressions:
        print("REGRESSION: %s" % line)
    if improvements:
        print("opinfo_sweep: %d improvement(s): rewrite %s with `.venv/bin/python "
              "tools/opinfo_sweep.py expected %s >%s`" % (
                  len(improvements), path, report_path or "REPORT.json", path))
    if regressions:
        print("opinfo_sweep: %d regression(s) against %s" % (len(regressions), path))
        return 1
    print("opinfo_sweep: no regression against %s (%d op(s) listed, %d improvement(s))" % (
        path, len(expected), len(improvements)))
    return 0


def expected_text(report):
    lines = ["# Expected aotgrad results of the OpInfo sample (ctest conformance.opinfo_sample):",
             "# KEY a=pass|fail|- b=pass|fail|- (- : no case). Written by",
             "# `tools/opinfo_sweep.py expected REPORT.json` from a run over these ops; an op",
             "# listed as passing that fails is a regression (the test fails), one listed as",
             "# failing that passes is an improvement (the test says so: update this file).", ""]
    for r in report["ops"]:
        v = r["aotgrad"]
        ff = v["first_failure"]
        note = "  # %s %s: %s" % (ff["case"], ff["cause"], (ff["detail"] or "")[:80]) if ff else ""
        lines.append("%-40s a=%s b=%s%s" % (r["key"], v["a"] or "-", v["b"] or "-", note))
    return "\n".join(lines) + "\n"


def put_into_benchmarks(report_path, bench_path, command):
    """Replaces the opinfo_sweep section of bench_path (or appends it) with the report's markdown."""
    with open(report_path) as f:
        section = markdown(json.load(f), command).rstrip("\n")
    benchmarks_md.put_section(bench_path, "opinfo_sweep", section)
