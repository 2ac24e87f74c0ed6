"""Studies built on the labels: the Alternative Annotator Test, curation sensitivity, error modes, the report."""
