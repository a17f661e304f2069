"""``_delta_log/_last_checkpoint``: a hint to the newest checkpoint, with its checksum.

The file only saves readers a full listing (PROTOCOL.md "Last Checkpoint File"), so a
missing, unparsable or checksum-mismatching one is ignored and the log is listed
instead; it can never make a reader see a wrong state.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

from varlake.delta import constants as C
from varlake.delta.json_fields import load_json
from varlake.delta.schema import MAX_SCHEMA_JSON_DEPTH
from varlake.errors import StorageFileNotFoundError, VarlakeError
from varlake.io.storage import Storage

__all__ = ["json_checksum", "read_last_checkpoint", "write_last_checkpoint"]


def read_last_checkpoint(storage: Storage, log_dir: str) -> dict[str, Any] | None:
    """``_last_checkpoint`` as a dict, or ``None`` if absent or unusable."""
    path = f"{log_dir}/{C.LAST_CHECKPOINT}"
    try:  # nesting bounded before decoding, so the checksum's recursion stays bounded too
        obj = load_json(storage.read(path), path, C.LAST_CHECKPOINT, max_depth=MAX_SCHEMA_JSON_DEPTH + 2)
    except (StorageFileNotFoundError, VarlakeError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("version"), int) or obj["version"] < 0:
        return None
    checksum = obj.get("checksum")
    if checksum is not None and checksum != json_checksum(obj):
        return None
    return obj


def write_last_checkpoint(storage: Storage, log_dir: str, info: dict[str, Any]) -> None:
    """Overwrite ``_last_checkpoint`` with ``info`` plus its checksum -- unless it already
    points at a newer checkpoint (a slower writer must not move the hint backwards)."""
    current = read_last_checkpoint(storage, log_dir)
    if current is not None and current["version"] > info["version"]:
        return
    body = dict(info)
    body["checksum"] = json_checksum(body)
    storage.write(f"{log_dir}/{C.LAST_CHECKPOINT}", json.dumps(body, separators=(",", ":")).encode())


def _url(text: str) -> str:
    # Unreserved octets stay, everything else is %XX with upper-case hex.
    return quote(text, safe="-._~", encoding="utf-8")


def _canonical_pairs(value: Any, path: list[str], out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _canonical_pairs(v, path + [f'"{_url(k)}"'], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _canonical_pairs(v, path + [str(i)], out)
    elif isinstance(value, str):
        out.append(("+".join(path), f'"{_url(value)}"'))
    else:
        out.append(("+".join(path), json.dumps(value)))


def json_checksum(obj: dict[str, Any]) -> str:
    """MD5 of the canonical form of a ``_last_checkpoint`` object (PROTOCOL.md "JSON checksum")."""
    pairs: list[tuple[str, str]] = []
    _canonical_pairs({k: v for k, v in obj.items() if k != "checksum"}, [], pairs)
    pairs.sort(key=lambda kv: kv[0].encode("utf-8"))
    text = ",".join(f"{k}={v}" for k, v in pairs)
    return hashlib.md5(text.encode("utf-8")).hexdigest()
