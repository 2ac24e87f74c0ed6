"""One engine for every question asked of an LLM: no second pool, provider list, fingerprint, batch driver or private import.

Static checks over the sources: a second implementation appearing in an ALM, judge or error-mode
module fails here (issue [O], "three engines for one job").
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KINDS = [REPO / "workbench" / "alm", REPO / "workbench" / "attribution", REPO / "workbench" / "studies" / "error_judges.py"]


def _sources(*roots: Path) -> dict[Path, str]:
    files: dict[Path, str] = {}
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            files[path] = path.read_text(encoding="utf-8")
    return files


def test_only_the_engine_runs_a_pool_of_requests() -> None:
    offenders = [p.relative_to(REPO) for p, text in _sources(*KINDS).items()
                 if "ThreadPoolExecutor" in text or re.search(r"\bconcurrent\.futures\b", text)]
    assert offenders == []


def test_one_provider_list() -> None:
    literal = re.compile(r"\(\s*\"openai\",\s*\"openai-compatible\",\s*\"gemini\",\s*\"transformers\"\s*\)")
    found = [p.relative_to(REPO) for p, text in _sources(REPO / "workbench", REPO / "ui", REPO / "cli").items()
             if literal.search(text)]
    assert found == [Path("workbench/llm/providers.py")]


def test_one_fingerprint_function() -> None:
    hashing_json = re.compile(r"hashlib\.sha256\([^)]*(json\.dumps|payload)", re.S)
    found = [p.relative_to(REPO) for p, text in _sources(*KINDS, REPO / "workbench" / "llm").items()
             if hashing_json.search(text) or re.search(r"json\.dumps\(.*sort_keys=True.*\)\s*\n\s*return hashlib", text)]
    assert found == [Path("workbench/llm/fingerprint.py")]


def test_no_private_names_imported_across_modules() -> None:
    private = re.compile(r"^from workbench\.[\w.]+ import \(?[^)\n]*\b_[A-Za-z]\w*|^\s+_[A-Za-z]\w*,\s*$", re.M)
    offenders = [p.relative_to(REPO) for p, text in _sources(*KINDS, REPO / "workbench" / "llm").items()
                 if private.search(text)]
    assert offenders == []


def test_no_sql_in_the_alm_runner() -> None:
    text = (REPO / "workbench" / "alm" / "runner.py").read_text(encoding="utf-8")
    assert not re.search(r"\b(insert|update|select)\(", text)


def test_a_local_model_answer_is_keyed_by_its_message_format() -> None:
    """A transformers answer to the old message (question before audio) is not found again as the
    answer to AGL1K's message; API providers' keys are unchanged, so their paid answers stay found."""
    from workbench.alm import plan

    args = ("m", "agl1k-v1", "0" * 64, {"max_output_tokens": 8}, 42)
    local = plan.fingerprint("transformers", *args)
    api = plan.fingerprint("openai", *args)
    from workbench.llm.fingerprint import fingerprint as request_fingerprint

    old_local = request_fingerprint({"provider": "transformers", "api_model": "m", "prompt_version": "agl1k-v1",
                                     "audio_sha256": "0" * 64, "options": {"max_output_tokens": 8}, "seed": 42})
    old_api = request_fingerprint({"provider": "openai", "api_model": "m", "prompt_version": "agl1k-v1",
                                   "audio_sha256": "0" * 64, "options": {"max_output_tokens": 8}, "seed": 42})
    assert local != old_local and api == old_api


# What only a batch driver does: ask a submitted batch how it stands, read its results.
_BATCH_POLLS = {"batch_state", "get_batch", "batch_results"}
_BATCH_READS = {"inlined_responses"}


def test_one_batch_driver() -> None:
    """Polling a batch and reading its results happen only in an adapter's ``state``/``results``,
    which the one driver (workbench/llm/batch.py: match on custom id, journal, store, report, resume)
    calls; both batch modes submit and collect through it (issue [O], "two batch drivers")."""
    import ast

    offenders = []
    for path, text in _sources(REPO / "workbench").items():
        if path.is_relative_to(REPO / "workbench" / "llm"):
            continue
        tree = ast.parse(text)
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
                    node.attr if isinstance(node, ast.Attribute) else \
                    node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
                if name in _BATCH_POLLS | _BATCH_READS and function.name not in ("state", "results"):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {function.name}() uses {name}")
    assert offenders == []
    for adapter in ("workbench/alm/batch.py", "workbench/attribution/batch.py"):
        text = (REPO / adapter).read_text(encoding="utf-8")
        imported = re.search(r"^from workbench\.llm\.batch import (.+)$", text, re.M)
        assert imported and {"collect", "submit"} <= {n.strip() for n in imported.group(1).split(",")}, adapter
        assert not re.search(r"\bJournal\b|\bwrite_waiting\b", text), f"{adapter} journals or stores by itself"
