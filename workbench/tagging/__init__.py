"""EfficientAT tagging over the AudioSet ontology: model, front end, checkpoints, roll-ups, service."""
