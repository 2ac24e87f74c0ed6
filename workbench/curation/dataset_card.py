"""The dataset card (``README.md``) and the Croissant 1.0 metadata (``croissant.json``) of a
Hugging Face export (:mod:`workbench.curation.hf_export`).

Text from the data (dataset names, licences, continents, parameters) is escaped for the document
it lands in: YAML scalars are written as JSON strings (valid YAML double-quoted scalars, so no
value can open a mapping or a tag), Markdown through :func:`workbench.escaping.markdown`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from workbench.escaping import markdown

CROISSANT_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
CROISSANT_VERSION = "http://mlcommons.org/croissant/1.0"
RECORD_SET = "clips"
FILE_SET = "parquet-files"

# What each column holds, for the card's feature list and the Croissant fields.
DESCRIPTIONS: dict[str, str] = {
    "key": "the clip's key in the source dataset (unique)",
    "audio": "the recording: its bytes and its path relative to the source's media root",
    "latitude": "recording position, decimal degrees (WGS 84)",
    "longitude": "recording position, decimal degrees (WGS 84)",
    "city": "city as the source gives it",
    "country": "country (ISO 3166 short name when derived)",
    "continent": "continent (AGL1K's six names plus Antarctica when derived)",
    "title": "title as the source gives it",
    "description": "description as the source gives it (may hold HTML from the source)",
    "duration_s": "duration in seconds as the source states it",
    "licence": "the recording's licence",
    "recordist": "who recorded it",
    "url": "the recording's page at its source",
    "recorded_at": "when it was recorded, as the source wrote it",
    "audio_file": "the recording's file name as the source table gave it",
    "short_key": "AGL1K short key",
    "altitude": "altitude in metres (AGL1K)",
    "derived": "fields derived by the importer rather than given by the source (country, continent)",
    "extra": "the source's columns that no field maps, as a JSON object",
    "speech": "speech clip by the workbench's rule (human_sounds >= 0.1 or the Speech tag >= 0.15); null when unknown",
    "localizability": "Audio Localizability of the clip in the curation run",
    "candidate": "whether the curation run made the clip a candidate",
    "quality_flags": "quality filters the clip fails at export, with the curation run's cut-offs, that no expert "
                     "overruled (low_complexity only in a pool of at least 50 clips with a measured ACI)",
    "tags": "the top EfficientAT AudioSet tags of the clip (id, name, probability)",
}
_CROISSANT_TYPES = {"string": "sc:Text", "float64": "sc:Float", "bool": "sc:Boolean"}
_HF_LICENCES = {
    "cc0 1.0": "cc0-1.0", "cc0": "cc0-1.0", "public domain": "cc0-1.0",
    **{f"cc {v} {n}": f"cc-{v.replace(' ', '-')}-{n}" for v in ("by", "by sa", "by nc", "by nc sa", "by nd", "by nc nd")
       for n in ("2.0", "2.5", "3.0", "4.0")},
}
_LICENCE_WORDS = re.compile(r"[\s_\-/]+")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INLINE = re.compile(r"([`*_\[\]()#!~])")


def hf_licence(names: list[str | None]) -> str:
    """The card's ``license`` id: the Hugging Face id of the one licence every clip has, ``other``
    when the clips have several or one without an id, ``unknown`` when none is given."""
    given = {n for n in names if n}
    if not given:
        return "unknown"
    if len(given) > 1 or None in names:
        return "other"
    key = _LICENCE_WORDS.sub(" ", next(iter(given)).lower().replace("creative commons", "cc")).strip()
    key = re.sub(r"^cc (.*?) ?(\d\.\d)$", r"cc \1 \2", key).replace("attribution", "by")
    return _HF_LICENCES.get(key, "other")


def size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def _yaml(value: Any, indent: int = 0) -> str:
    """YAML block text of plain data; every string a JSON (double-quoted YAML) scalar."""
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{_yaml_key(key)}:\n{_yaml(item, indent + 2)}")
            else:
                lines.append(f"{pad}{_yaml_key(key)}: {_yaml_scalar(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = _yaml(item, indent + 2)
                lines.append(f"{pad}- {inner.lstrip()}")
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}")
        return "\n".join(lines)
    return f"{pad}{_yaml_scalar(value)}"


def _yaml_key(key: Any) -> str:
    text = str(key)
    return text if _PLAIN_KEY.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False)


def _feature_yaml(features: Any) -> list[dict[str, Any]]:
    """The card's ``dataset_info.features`` list, as the Hugging Face Hub writes it."""
    import datasets as hf

    def one(name: str, feature: Any) -> dict[str, Any]:
        if isinstance(feature, hf.Audio):
            return {"name": name, "dtype": "audio" if feature.decode else {"audio": {"decode": False}}}
        if isinstance(feature, hf.List):
            inner = feature.feature
            if isinstance(inner, dict):
                return {"name": name, "list": [one(k, v) for k, v in inner.items()]}
            return {"name": name, "list": inner.dtype}
        return {"name": name, "dtype": feature.dtype}

    return [one(name, feature) for name, feature in features.items()]


def front_matter(name: str, exported: Any, features: Any, num_bytes: int) -> dict[str, Any]:
    n = len(exported.rows)
    licence = hf_licence([r.get("licence") for r in exported.rows])
    matter: dict[str, Any] = {
        "pretty_name": name,
        "license": licence,
        "task_categories": ["audio-classification"],
        "tags": ["audio", "geolocation", "audio-geo-localization", "croissant"],
        "size_categories": [size_category(n)],
        "configs": [{"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}]}],
        "dataset_info": {"features": _feature_yaml(features), "splits": [{"name": "test", "num_bytes": num_bytes, "num_examples": n}],
                         "dataset_size": num_bytes},
    }
    if licence == "other":
        matter["license_name"] = "per-clip"
        matter["license_details"] = "Each clip's licence is in its licence column; see the card."
    return matter


def _prose(text: object) -> str:
    """``text`` in Markdown prose or a table cell, shown literally: :func:`~workbench.escaping.markdown`
    (HTML, ``|``, backslashes) and the inline syntax (emphasis, links, images, code) escaped."""
    return _INLINE.sub(r"\\\1", markdown(text))


def _code(text: object) -> str:
    """``text`` as a Markdown code span shown literally: fenced by more backticks than it holds
    (entities are not decoded in a code span, so no HTML escaping), on one line."""
    body = re.sub(r"[\r\n\u2028\u2029\x85]+", " ", str(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def _counts_table(title: str, counts: Counter[Any], n: int) -> list[str]:
    lines = [f"| {title} | clips | share |", "| --- | ---: | ---: |"]
    for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        lines.append(f"| {_prose(value)} | {count} | {count / n:.1%} |")
    return lines


def _speech_label(value: bool | None) -> str:
    return "unknown (no tags, no human_sounds)" if value is None else ("speech" if value else "no speech")


def card_text(name: str, exported: Any, hashes: dict[str, str], made: dict[str, Any], features: Any,
              num_bytes: int) -> str:
    """The dataset card: YAML front matter, then the provenance, selection, counts and hashes."""
    rows, n = exported.rows, len(exported.rows)
    lines = ["---", _yaml(front_matter(name, exported, features, num_bytes)), "---", "", f"# {_prose(name)}", ""]
    lines += [
        f"{n} audio clips for audio geo-localization, exported by the AGL Workbench ({_prose(made['tool'])} "
        f"{_prose(made['tool_version'])}) on {_prose(made['exported_at'])}. Every number below counts these "
        f"{n} clips.", "",
        "Load it with `datasets.load_dataset(\"PATH/TO/THIS/FOLDER\")` (split `test`). "
        + ("The recordings are embedded in the Parquet files." if made["embedded_audio"] else
           "The recordings are not embedded: `audio.path` is relative to the folder that held the recordings."),
        "",
        "The `audio` column is stored undecoded (`Audio(decode=False)`): each value is `{\"bytes\", \"path\"}`. "
        "`datasets` 4 and later decode audio only through `torchcodec`, whose build must match your `torch` "
        "(and FFmpeg's shared libraries); the bytes need neither. Decode them with soundfile: "
        + ("`samples, rate = soundfile.read(io.BytesIO(row[\"audio\"][\"bytes\"]))`" if made["embedded_audio"] else
           "`samples, rate = soundfile.read(ROOT / row[\"audio\"][\"path\"])` (ROOT: the folder that held the "
           "recordings)")
        + "; where torchcodec works, `ds.cast_column(\"audio\", datasets.Audio())` gives decoders instead.",
        "", "## Provenance", "",
    ]
    for source in exported.provenance:
        mapping = source.get("mapping")
        lines.append(
            f"- dataset **{_prose(source['name'])}**, imported as {_code(source['format'])} from "
            f"{_prose(source['source'] or 'an unnamed source')}"
            + (f" (SHA-256 {_code(source['source_sha256'])})" if source.get("source_sha256") else "")
            + (f" on {_prose(source['imported_at'])}" if source.get("imported_at") else "")
            + (f"; mapping: {_code(json.dumps(mapping, ensure_ascii=False, sort_keys=True))}" if mapping else "")
        )
    derived = Counter(f for r in rows for f in r.get("derived") or [])
    if derived:
        lines += ["", "Derived, not given by the source (offline gazetteer from the coordinates; column `derived`): "
                  + ", ".join(f"{_prose(f)} for {c} of {n} clips" for f, c in sorted(derived.items())) + "."]
    lines += ["", "## Selection", ""]
    if exported.selection:
        s = exported.selection
        lines.append(f"Selection {s['id']} of size {s['size']} from curation run {s['run_id']}; parameters: "
                     f"{_code(json.dumps(s['parameters'], ensure_ascii=False, sort_keys=True))}.")
    else:
        lines.append("No selection: " + ("the whole dataset." if len(exported.provenance) == 1 else "chosen clips."))
    if exported.run:
        r = exported.run
        lines.append(f"Curation values (`localizability`, `candidate`; `quality_flags` with its cut-offs) from curation run {r['id']} "
                     f"(input fingerprint {_code(r['input_fingerprint'])}; parameters "
                     f"{_code(json.dumps(r['parameters'], ensure_ascii=False, sort_keys=True))}).")
    if exported.tagger_run_id is not None:
        lines.append(f"Tags from tagger run {exported.tagger_run_id}.")
    lines += ["", f"## Counts (n = {n})", ""]
    lines += _counts_table("continent", Counter(r.get("continent") or "(missing)" for r in rows), n) + [""]
    lines += _counts_table("speech", Counter(_speech_label(r.get("speech")) for r in rows), n) + [""]
    lines += _counts_table("licence", Counter(r.get("licence") or "(not given)" for r in rows), n) + [""]
    without = sum(1 for r in rows if r["_audio_file"] is None)
    if without:
        lines += [f"{without} of {n} clips have no recording in this export (`audio` is null).", ""]
    lines += ["## Columns", ""]
    lines += [f"- {_code(c)}: {_prose(DESCRIPTIONS.get(c, ''))}" for c in exported.columns]
    lines += ["", "## Files and hashes (SHA-256)", ""]
    lines += [f"- {_code(path)}: `{digest}`" for path, digest in sorted(hashes.items())]
    lines += ["", "`croissant.json` describes the same record set in Croissant 1.0.", ""]
    return "\n".join(lines)


def _field(column: str, feature: Any) -> dict[str, Any]:
    import datasets as hf

    source: dict[str, Any] = {"fileSet": {"@id": FILE_SET}, "extract": {"column": column}}
    item: dict[str, Any] = {"@type": "cr:Field", "@id": f"{RECORD_SET}/{column}", "name": column,
                            "description": DESCRIPTIONS.get(column, column)}
    if isinstance(feature, hf.Audio):
        item["dataType"] = "sc:AudioObject"
        source["transform"] = {"jsonPath": "bytes"}
    elif isinstance(feature, hf.List) and isinstance(feature.feature, dict):
        item["repeated"] = True
        item["subField"] = [
            {"@type": "cr:Field", "@id": f"{RECORD_SET}/{column}/{sub}", "name": sub,
             "dataType": _CROISSANT_TYPES[inner.dtype],
             "source": {"fileSet": {"@id": FILE_SET}, "extract": {"column": column}, "transform": {"jsonPath": sub}}}
            for sub, inner in feature.feature.items()
        ]
    elif isinstance(feature, hf.List):
        item["dataType"] = _CROISSANT_TYPES[feature.feature.dtype]
        item["repeated"] = True
    else:
        item["dataType"] = _CROISSANT_TYPES[feature.dtype]
    if "subField" not in item:
        item["source"] = source
    return item


def croissant_document(name: str, exported: Any, hashes: dict[str, str], made: dict[str, Any],
                       feats: Any) -> dict[str, Any]:
    """Croissant 1.0 JSON-LD of the export: the Parquet files and the ``clips`` record set
    (``feats``: the export's ``datasets.Features``, as the card gets them)."""
    licences = sorted({r["licence"] for r in exported.rows if r.get("licence")})
    distribution: list[dict[str, Any]] = [
        {"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
         "encodingFormat": "application/x-parquet", "sha256": digest}
        for path, digest in sorted(hashes.items())
    ]
    distribution.append({"@type": "cr:FileSet", "@id": FILE_SET, "name": FILE_SET,
                         "description": "The Parquet files of the test split.",
                         "encodingFormat": "application/x-parquet", "includes": "data/test-*.parquet"})
    return {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "name": name,
        "description": (f"{len(exported.rows)} audio clips for audio geo-localization from "
                        f"{', '.join(exported.dataset_names)}, exported by the AGL Workbench."),
        "conformsTo": CROISSANT_VERSION,
        "citeAs": f"{name} (exported by the AGL Workbench {made['tool_version']}, {made['exported_at'][:10]})",
        "datePublished": made["exported_at"][:10],
        "version": "1.0.0",
        "license": (licences if len(licences) > 1 else licences[0]) if licences
        else "unknown: the source gives no licence; check each recording's terms",
        **({"url": made["url"]} if made.get("url") else {}),
        "distribution": distribution,
        "recordSet": [{
            "@type": "cr:RecordSet", "@id": RECORD_SET, "name": RECORD_SET,
            "description": "One record per clip.", "key": {"@id": f"{RECORD_SET}/key"},
            "field": [_field(column, feature) for column, feature in feats.items()],
        }],
    }
