"""The AGL1K result record: its fields, in the order AGL1K writes them, and the groups the workbench
reads (the truth, the answer). The one list that the importer, the ALM runner's records, the metrics
and the stored prediction rows use; pure data, no imports."""

from __future__ import annotations

TRUE_COORDINATES = ("true_latitude", "true_longitude")
TRUE_PLACE = ("true_city", "true_country", "true_continent")
TRUE_FIELDS = (*TRUE_COORDINATES, *TRUE_PLACE)

PREDICTED_COORDINATES = ("predicted_latitude", "predicted_longitude")
PREDICTED_PLACE = ("predicted_city", "predicted_country", "predicted_continent")
# The fields of an answer; a record with a refusal value in any of them counts as rejected.
PREDICTED_FIELDS = (*PREDICTED_COORDINATES, *PREDICTED_PLACE)

# The record as AGL1K's scripts write it (and as `aglw alm run` writes its result files).
RECORD_FIELDS = (
    "question", "task_id", "question_id", "true_city", "true_country", "true_continent", "true_longitude",
    "true_latitude", "description", "title", "predicted_city", "predicted_country", "predicted_continent",
    "predicted_longitude", "predicted_latitude", "reasoning", "model_output", "seed",
)
# Fields of the record that describe the clip rather than the answer: the dataset has them.
CLIP_FIELDS = ("question_id", "description", "title")
