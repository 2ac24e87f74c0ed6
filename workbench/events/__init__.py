"""Spatial sound events (spatial-events.md): the event model, STARSS23/DCASE files, SELD
metrics, spatial QA, synthetic scenes, FOA→binaural decoding and direction pre-fill.

Modules: :mod:`.model` (plain data), :mod:`.starss23` (CSV), :mod:`.seld` (metrics),
:mod:`.qa` (questions and scoring), :mod:`.scene` (synthetic scenes), :mod:`.binaural`
(headphone decoding), :mod:`.prefill` (direction suggestion), :mod:`.service` and
:mod:`.commands` (the store: writes as commands, reads). Import from the submodules; this
package imports nothing heavy.
"""
