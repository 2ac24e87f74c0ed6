"""Tests of the study page (web/): server rules, the browser walk, the blinding census."""
