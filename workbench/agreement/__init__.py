"""Agreement studies: human experts vs LLM judges (coefficients, cluster bootstrap, export bundle)."""
