"""Endpoints without their secrets: what may be stored (``alm_job.base_url``) or printed; a base URL
carrying a query (``?key=...``), which no SDK passes on, refused before anything is sent."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workbench.errors import InputError

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


def refuse_query(url: str | None, option: str) -> None:
    """Refuse a base URL that carries a query (``http://host/v1?key=...``), before anything is sent.

    The SDKs put the API's paths after the whole base URL, so a query there turns every request
    into one for a path the server does not know (an "unknown model", HTTP 404). The message names
    the parameters, never their values.

    Raises
    ------
    InputError
        ``url`` has a query (or a fragment); ``option`` says where it was given.
    """
    if not url:
        return
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return
    if not parts.query and not parts.fragment:
        return
    names = sorted({k.strip() or "?" for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    what = f"a query ({', '.join(f'{n}=...' for n in names)})" if names else "a query or fragment"
    clean = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
    key = " A key goes in the environment or the OS keyring (--api-key-env for openai-compatible), never in the URL." \
        if any(_SECRET_PARAMS.match(n) for n in names) else ""
    raise InputError(f"{option} {clean} carries {what}, which the API does not take: its requests would go to a path "
                     f"the server does not serve. Give the URL without '?...'; nothing was sent.{key}")


__all__ = ["refuse_query", "safe_url"]
