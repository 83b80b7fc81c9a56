"""LLM providers behind one small async interface; see :mod:`llmdisc.providers.base`."""
