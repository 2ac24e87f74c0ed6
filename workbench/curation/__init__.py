"""The curation model (Audio Localizability), its feedback loop, selection and AGL1K export.

``model`` holds the pure algorithms (plain DataFrames in, plain data out);
``inputs`` gathers their inputs from a project store; ``service`` fits and stores
runs; ``runs`` reads stored runs back and compares them; ``selection`` and
``export`` pick and write the final set; ``geocheck`` reports clips whose
coordinates disagree with their stated country.
The exact operationalisation is the shared design document curation-model.md.
"""
