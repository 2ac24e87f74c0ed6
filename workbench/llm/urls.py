"""Endpoints without their secrets: what may be stored (``alm_job.base_url``) or printed."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Query parameters that carry credentials (compared without case, '-' and '_').
_SECRET_PARAMS = re.compile(r"^(api[-_]?key|key|token|access[-_]?token|auth|authorization|secret|"
                            r"client[-_]?secret|password|passwd|pwd|sig|signature|x[-_]?api[-_]?key|"
                            r"x[-_]?goog[-_]?api[-_]?key|apikey|code|session)$", re.IGNORECASE)


def safe_url(url: str | None) -> str | None:
    """``url`` without user info (``user:KEY@``) and without key-like query parameters.

    A string that is not a URL comes back unchanged except for an ``...@`` prefix before the host.
    """
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//[^/@]*@", "//", url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if not _SECRET_PARAMS.match(k.strip())], safe=":/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


__all__ = ["safe_url"]
