"""Reading the JSON files of a contest (RCTab configs, Dominion exports, CDF records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rankmodels.errors import InputError

__all__ = ["read_json_object"]


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` (UTF-8, a byte-order mark allowed, as Windows exports
    carry); :class:`InputError` naming ``path`` when it is missing, not JSON (``not
    WHAT: ...``) or not an object."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not {what}: {err}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=path)
    return data
