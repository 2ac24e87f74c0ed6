"""The study page (issue [W], design/web-study.md): an ASGI app, Jinja2 templates and plain JavaScript.

A second presentation layer beside ``ui/``: ``web -> workbench -> storage``, never ``web -> ui``
(import-linter). Installed with the extra ``[web]``; without it ``aglw serve`` says which extra to
install.
"""
