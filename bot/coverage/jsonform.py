"""A coverage report's documented machine form (``--format json``, schemas/coverage.schema.json)."""

from __future__ import annotations

from collections.abc import Mapping

from opdrift.coverage.change import CoverageChange
from opdrift.coverage.check import Coverage, falls_back
from opdrift.coverage.kinds import EDGE_KINDS
from opdrift.coverage.names import last_registered


def coverage_json(cov: Coverage, change: CoverageChange | None = None) -> Mapping[str, object]:
    """The documented machine form of a coverage report (``--format json``)."""
    out: dict[str, object] = {
        "backend": {
            "kind": cov.backend_kind,
            "path": cov.backend_path,
            **({"name": cov.name} if cov.name else {}),
            "profile": cov.profile,
            "fallback": cov.fallback,
            # the list of ops it runs on CPU one by one ("path:line (KEY)"), only when given
            **({"cpu_fallback_list": cov.cpu_fallback_at} if cov.cpu_fallback_at else {}),
            **({"decompositions": cov.decompositions} if cov.profile == "export" else {}),
        },
        "operators": len(cov.ops),
        # covered + needs_kernel + len(training_only) (+ verifier_rejects) == operators: a training-only
        # op is neither, nor is one ExecuTorch's verifier refuses
        "covered": len(cov.covered),
        "needs_kernel": len(cov.uncovered),
        **(
            {"verifier_rejects": len(cov.rejected), "extra": list(cov.extra)}
            if cov.backend_kind in EDGE_KINDS
            else {}
        ),
        # what those ops do meanwhile: "falls_back_to_cpu" on a backend with a boxed fallback, else "fails"
        "uncovered_run": "falls_back_to_cpu" if falls_back(cov) else "fails",
        "by_rule": cov.by_rule(),
        "by_bucket": {
            b: {"covered": c, "needs_kernel": n, **({"training_only": t} if cov.profile == "export" else {})}
            for b, (c, n, t) in cov.by_bucket().items()
        },
        # alternative: the variant whose kernel would serve the op instead (`OpCoverage.alternative`), or null
        "uncovered": [
            {"name": o.name, "bucket": o.bucket, "alternative": o.alternative or None} for o in cov.uncovered
        ],
        **(
            {"training_only": [{"name": o.name, "bucket": o.bucket} for o in cov.training_only]}
            if cov.profile == "export"
            else {}
        ),
        # last_registered: the last release (1.9.0 on) that had it; null for a name none ever did
        "stale": [
            {"name": o.name, "path": o.path, "line": o.line, "last_registered": last_registered(o.name)}
            for o in cov.stale
        ],
        "schema_alerts": [
            {
                "name": a.name,
                "path": a.path,
                "line": a.line,
                "backend_schema": a.backend_schema,
                "upstream_schema": a.upstream_schema,
                "breaking": a.breaking,
                "kernel": a.kernel,
                "form": a.form,
                "judged_in": a.judged_in,
                "upstream_since": a.upstream_since,
                "upstream_since_event": a.upstream_event,
                "kernel_changes": [
                    {"form": k.form, "before": str(k.before), "after": str(k.after)} for k in a.kernel_changes
                ],
                "details": [d.as_json() for d in a.details],
            }
            for a in cov.alerts
        ],
    }
    if change is not None:
        out["since_base"] = {
            "new_uncovered": list(change.new_uncovered),
            "newly_covered": list(change.newly_covered),
            "gap_before": change.gap_before,
            "gap_after": change.gap_after,
            "new_alerts": [a.name for a in change.new_alerts],
            "old_alerts": change.old_alerts,
        }
    return out
