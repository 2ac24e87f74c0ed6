"""The one campaign engine for every question asked of an LLM (ALM runs, judges, error-mode judges).

- :mod:`workbench.llm.errors` — the provider protocol's error vocabulary (retry, item failure, run stop);
- :mod:`workbench.llm.engine` — plan → fingerprint cache → paced pool with retry and ``retry-after``
  → journal → store on the calling thread → the task protocol (:mod:`workbench.tasks`);
- :mod:`workbench.llm.batch` — the one batch driver (submit with the request map recorded first; collect:
  state, match on custom id, journal, store, report, resumable);
- :mod:`workbench.llm.journal` — every paid reply appended (fsynced) the moment it arrives;
- :mod:`workbench.llm.fingerprint` — the one request fingerprint;
- :mod:`workbench.llm.urls` — endpoints with their secrets stripped before they are stored or shown;
- :mod:`workbench.llm.providers` — the one provider list.

A "question kind" (:class:`workbench.llm.engine.QuestionKind`) says what is asked about each item,
how a reply is read and how it is stored; the engine does the rest the same way for all of them.
"""
